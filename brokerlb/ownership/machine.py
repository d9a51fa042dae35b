"""The bundle ownership state machine: events in, instructions out, no I/O.

:class:`OwnershipMachine` keeps one :class:`BundleRecord` per bundle (Pulsar's
``ServiceUnitStateData``: state, destination and source broker, split children,
a version that grows with every change) and a bounded log of every transition.
``handle(*events)`` applies the events in order and returns what the brokers must
do (:mod:`.events`); the shell carries that out and feeds back the outcome.

Flows (Pulsar's ``ServiceUnitStateChannel``)::

    assign    Free/Init --Assign(b)--> Assigning(b) --AssignmentDone(b)--> Owned(b)
                                          Assigning(b) --AssignmentFailed(b)--> Free (forced)
    unload    Owned(a) --Unload--> Releasing(a) --ReleaseDone--> Free
    transfer  Owned(a) --Unload(to=b)--> Releasing(a→b) --ReleaseDone--> Assigning(a→b)
                       --AssignmentDone(b)--> Owned(b)   (+ DisconnectClients on a)
    split     Owned(a) --Split--> Splitting(a) --SplitDone--> Deleted; children Init → Owned(a)

**Watchdog** (``Tick``): a bundle in flight longer than ``in_flight_timeout_ms``
(Pulsar's ``loadBalancerInFlightServiceUnitStateWaitingTimeInMillis``, 30000) is
resolved so that lookups stop waiting -- Pulsar's bundles could stay stuck in
Assigning or Releasing for good (apache/pulsar#25379, #21332):

* Assigning → **Free** (forced): the destination never confirmed; it is told to
  drop what it half took (``AbortAssignment``) and the next lookup assigns anew;
* Releasing → **Free**: the source never confirmed; its ownership node is deleted
  (``ForceRelease``); a transfer is abandoned rather than continued;
* Splitting → its **outcome** when the namespace's ring (from ``RingUpdated``)
  shows the split committed (parent gone, children present): parent Deleted,
  children Owned by the source, as ``SplitDone`` would; otherwise → **Owned**
  again (forced rollback, ``AbortSplit`` tells the source to drop the children).

The same tick tombstones records that stayed Free or Deleted for
``tombstone_delay_ms`` (Pulsar: ``loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds``
= 3600 s): they go back to Init and are dropped.

**Broker loss** (``BrokerLost``): bundles Owned by or Assigning to the dead broker
become Free (forced; its ownership nodes died with its session); a release whose
source died completes (Free, or Assigning to the transfer destination); a split
whose source died ends in its outcome (children Free) or Free.

**Ring reconciliation** (``RingUpdated``): a bundle no longer in its namespace's
ring (merged or split elsewhere) that is not splitting ends Deleted (forced); a Deleted bundle
that is in the ring again (adjacent bundles merged back into its range) starts again from Init,
so it can be assigned anew.

Invalid events raise :class:`~brokerlb.errors.InvalidTransitionError` carrying the
bundle's story; the state is unchanged by that event. Events before it in the same
``handle`` call stay applied; their instructions are on the error's
``instructions`` attribute. Repeating an event that already took effect (same
target, same broker) is a no-op, so a channel may redeliver.

>>> m = OwnershipMachine()
>>> m.handle(Assign(bundle="t/ns/0x00000000_0xffffffff", broker="b1", stimulus_id="lookup-1", at_ms=0))
[AcquireOwnership(bundle='t/ns/0x00000000_0xffffffff', stimulus_id='lookup-1', broker='b1')]
>>> _ = m.handle(AssignmentDone(bundle="t/ns/0x00000000_0xffffffff", broker="b1", stimulus_id="own-1", at_ms=5))
>>> print("\\n".join(map(str, m.story("t/ns/0x00000000_0xffffffff"))))
t/ns/0x00000000_0xffffffff: Init -> Assigning (dst b1) at 0 ms by b1: assign [lookup-1]
t/ns/0x00000000_0xffffffff: Assigning -> Owned (dst b1) at 5 ms by b1: assignment done [own-1]
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, deque
from dataclasses import dataclass, replace
from functools import singledispatchmethod
from typing import Any

from brokerlb.errors import InvalidConfigError, InvalidTransitionError
from brokerlb.ownership.events import (
    AbortAssignment,
    AbortSplit,
    AcquireOwnership,
    Assign,
    AssignmentDone,
    AssignmentFailed,
    BrokerLost,
    CloseBundle,
    DisconnectClients,
    Event,
    ForceRelease,
    Instruction,
    OwnerChanged,
    OwnershipLost,
    ReleaseDone,
    RingUpdated,
    Split,
    SplitBundle,
    SplitDone,
    SplitFailed,
    Tick,
    Unload,
)
from brokerlb.ownership.states import (
    IN_FLIGHT,
    BundleState,
    is_forced_transition,
    is_valid_transition,
)

__all__ = [
    "OwnershipMachine",
    "BundleRecord",
    "Transition",
    "DEFAULT_IN_FLIGHT_TIMEOUT_MS",
    "DEFAULT_TOMBSTONE_DELAY_MS",
]

S = BundleState
#: ``loadBalancerInFlightServiceUnitStateWaitingTimeInMillis``
DEFAULT_IN_FLIGHT_TIMEOUT_MS = 30_000
#: ``loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds`` × 1000
DEFAULT_TOMBSTONE_DELAY_MS = 3_600_000
_KEEP = object()


@dataclass(frozen=True, slots=True)
class BundleRecord:
    """A bundle's state (Pulsar's ServiceUnitStateData)."""

    bundle: str
    state: BundleState = S.INIT
    #: The broker that owns or is taking the bundle.
    dst: str | None = None
    #: The broker giving the bundle up (release, transfer, split).
    src: str | None = None
    children: tuple[str, ...] = ()
    #: Grows by one with every change (Pulsar's versionId).
    version: int = 0
    #: When the bundle entered this state (ms).
    since_ms: int = 0
    stimulus_id: str = ""

    @property
    def namespace(self) -> str:
        return self.bundle.rsplit("/", 1)[0]


@dataclass(frozen=True, slots=True)
class Transition:
    """One line of a bundle's story: who moved it from where to where, when and why."""

    bundle: str
    start: BundleState
    finish: BundleState
    who: str
    at_ms: int
    reason: str
    stimulus_id: str
    forced: bool
    version: int
    dst: str | None = None
    src: str | None = None

    def __str__(self) -> str:
        brokers = ", ".join(f"{k} {v}" for k, v in (("src", self.src), ("dst", self.dst)) if v)
        where = f" ({brokers})" if brokers else ""
        forced = " FORCED" if self.forced else ""
        return (
            f"{self.bundle}: {self.start} -> {self.finish}{where}{forced} at {self.at_ms} ms by {self.who}: "
            f"{self.reason} [{self.stimulus_id}]"
        )


class OwnershipMachine:
    """Pure ownership state for many bundles. Not thread-safe; one owner calls ``handle``."""

    def __init__(
        self,
        *,
        in_flight_timeout_ms: int = DEFAULT_IN_FLIGHT_TIMEOUT_MS,
        tombstone_delay_ms: int = DEFAULT_TOMBSTONE_DELAY_MS,
        log_per_bundle: int = 32,
        log_bundles: int = 100_000,
        log_total: int = 10_000,
        validate: bool = False,
    ) -> None:
        if in_flight_timeout_ms <= 0:
            raise InvalidConfigError(
                "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis",
                in_flight_timeout_ms,
                "must be positive",
            )
        if tombstone_delay_ms < 0:
            raise InvalidConfigError(
                "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds",
                tombstone_delay_ms,
                "must not be negative",
            )
        self.in_flight_timeout_ms = in_flight_timeout_ms
        self.tombstone_delay_ms = tombstone_delay_ms
        self.validate_each_event = validate
        self._records: dict[str, BundleRecord] = {}
        self._rings: dict[str, frozenset[str]] = {}
        self._log_per_bundle = log_per_bundle
        self._log_bundles = log_bundles
        self._logs: OrderedDict[str, deque[Transition]] = OrderedDict()
        self._log: deque[Transition] = deque(maxlen=log_total)
        self._seq = itertools.count()

    @classmethod
    def from_config(cls, conf: Any, **kwargs: Any) -> OwnershipMachine:
        """Timeouts from Pulsar's keys: ``loadBalancerInFlightServiceUnitStateWaitingTimeInMillis`` and
        ``loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds`` (a ServiceConfig or alike)."""
        return cls(
            in_flight_timeout_ms=int(conf.loadBalancerInFlightServiceUnitStateWaitingTimeInMillis),
            tombstone_delay_ms=int(conf.loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds * 1000),
            **kwargs,
        )

    # ------------------------------------------------------------------ reading
    def record(self, bundle: str) -> BundleRecord:
        """The bundle's record (an Init record if the machine never saw it)."""
        return self._records.get(bundle) or BundleRecord(bundle)

    def state(self, bundle: str) -> BundleState:
        return self.record(bundle).state

    def owner(self, bundle: str) -> str | None:
        """The owning broker if the bundle is Owned, else ``None``."""
        r = self.record(bundle)
        return r.dst if r.state is S.OWNED else None

    def records(self) -> dict[str, BundleRecord]:
        return dict(self._records)

    def in_flight(self) -> list[BundleRecord]:
        return [r for _, r in sorted(self._records.items()) if r.state in IN_FLIGHT]

    def stuck(self, now_ms: int) -> list[BundleRecord]:
        """In-flight records older than the watchdog timeout at ``now_ms``."""
        return [r for r in self.in_flight() if now_ms - r.since_ms >= self.in_flight_timeout_ms]

    def story(self, *keys: str) -> list[Transition]:
        """Transitions of the given bundles or stimulus ids, oldest first."""
        wanted = set(keys)
        lines: dict[int, Transition] = {}
        for key in keys:
            for t in self._logs.get(key, ()):
                lines[id(t)] = t
        for t in self._log:
            if t.stimulus_id in wanted or t.bundle in wanted:
                lines[id(t)] = t
        return sorted(lines.values(), key=lambda t: (t.at_ms, t.version, t.bundle))

    # ------------------------------------------------------------------ handling
    def handle(self, *events: Event) -> list[Instruction]:
        """Apply ``events`` in order; return the instructions for the brokers."""
        out: list[Instruction] = []
        for event in events:
            try:
                out += self._handle(event)
            except InvalidTransitionError as exc:
                exc.instructions = out  # type: ignore[attr-defined]
                raise
            if self.validate_each_event:
                self.validate()
        return out

    def validate(self) -> None:
        """Check the records' invariants (raises AssertionError with the record)."""
        for r in self._records.values():
            if r.state in (S.OWNED, S.ASSIGNING):
                assert r.dst, f"{r.state} bundle without a destination broker: {r}"
            if r.state in (S.RELEASING, S.SPLITTING):
                assert r.src, f"{r.state} bundle without a source broker: {r}"
            if r.state is S.SPLITTING:
                assert len(r.children) >= 2, f"Splitting bundle without children: {r}"
            assert r.state is not S.INIT, f"Init records are dropped, not stored: {r}"

    @singledispatchmethod
    def _handle(self, event: Event) -> list[Instruction]:
        raise InvalidTransitionError(f"Unknown event {event!r}")

    @_handle.register
    def _(self, ev: Assign) -> list[Instruction]:
        r = self.record(ev.bundle)
        if r.state in (S.ASSIGNING, S.OWNED) and r.dst == ev.broker:
            return []
        self._require(r, ev, S.INIT, S.FREE)
        self._move(r, S.ASSIGNING, ev, dst=ev.broker, src=None, children=(), reason=ev.reason or "assign")
        return [AcquireOwnership(bundle=ev.bundle, broker=ev.broker, stimulus_id=ev.stimulus_id)]

    @_handle.register
    def _(self, ev: AssignmentDone) -> list[Instruction]:
        r = self.record(ev.bundle)
        if r.state is S.OWNED and r.dst == ev.broker:
            return []
        self._require(r, ev, S.ASSIGNING)
        if r.dst != ev.broker:
            self._invalid(r, ev, f"it is being assigned to {r.dst}, not {ev.broker}")
        self._move(r, S.OWNED, ev, reason=ev.reason or "assignment done")
        out: list[Instruction] = [
            OwnerChanged(bundle=ev.bundle, owner=ev.broker, state=str(S.OWNED), stimulus_id=ev.stimulus_id)
        ]
        if r.src and r.src != ev.broker:
            out.append(
                DisconnectClients(
                    bundle=ev.bundle, broker=r.src, redirect_to=ev.broker, stimulus_id=ev.stimulus_id
                )
            )
        return out

    @_handle.register
    def _(self, ev: AssignmentFailed) -> list[Instruction]:
        r = self.record(ev.bundle)
        if r.state is not S.ASSIGNING or r.dst != ev.broker:
            return []  # already resolved (the watchdog, a broker loss) or never assigned there
        src = r.src
        self._move(r, S.FREE, ev, dst=None, forced=True, reason=ev.reason or f"{ev.broker} could not take it")
        out: list[Instruction] = [
            OwnerChanged(bundle=ev.bundle, owner=None, state=str(S.FREE), stimulus_id=ev.stimulus_id)
        ]
        if src and src != ev.broker:
            out.append(DisconnectClients(bundle=ev.bundle, broker=src, stimulus_id=ev.stimulus_id))
        return out

    @_handle.register
    def _(self, ev: OwnershipLost) -> list[Instruction]:
        r = self.record(ev.bundle)
        held = (r.state in (S.OWNED, S.ASSIGNING) and r.dst == ev.broker) or (
            r.state in (S.RELEASING, S.SPLITTING) and r.src == ev.broker
        )
        if not held:
            return []
        reason = ev.reason or f"{ev.broker} lost it with its session"
        if r.state is S.RELEASING:
            self._move(r, S.FREE, ev, dst=None, reason=reason)
        else:
            self._move(r, S.FREE, ev, dst=None, children=(), forced=True, reason=reason)
        return [
            DisconnectClients(bundle=ev.bundle, broker=ev.broker, lost=True, stimulus_id=ev.stimulus_id),
            OwnerChanged(bundle=ev.bundle, owner=None, state=str(S.FREE), stimulus_id=ev.stimulus_id),
        ]

    @_handle.register
    def _(self, ev: Unload) -> list[Instruction]:
        r = self.record(ev.bundle)
        if r.state is S.RELEASING and r.dst == ev.to:
            return []
        self._require(r, ev, S.OWNED)
        if ev.to is not None and ev.to == r.dst:
            self._invalid(r, ev, f"it is already owned by {ev.to}; unload to the same broker is not allowed")
        owner = r.dst
        assert owner is not None
        self._move(
            r,
            S.RELEASING,
            ev,
            src=owner,
            dst=ev.to,
            reason=ev.reason or (f"transfer to {ev.to}" if ev.to else "unload"),
        )
        return [CloseBundle(bundle=ev.bundle, broker=owner, transfer_to=ev.to, stimulus_id=ev.stimulus_id)]

    @_handle.register
    def _(self, ev: ReleaseDone) -> list[Instruction]:
        r = self.record(ev.bundle)
        if r.state is S.FREE or (r.state is S.ASSIGNING and r.src):
            return []
        self._require(r, ev, S.RELEASING)
        return self._finish_release(r, ev, ev.reason or "release done")

    @_handle.register
    def _(self, ev: Split) -> list[Instruction]:
        r = self.record(ev.bundle)
        if r.state is S.SPLITTING and r.children == tuple(ev.children):
            return []
        self._require(r, ev, S.OWNED)
        if len(ev.children) < 2 or ev.bundle in ev.children:
            self._invalid(
                r, ev, f"a split needs at least two children other than the bundle, got {ev.children}"
            )
        owner = r.dst
        assert owner is not None
        self._move(r, S.SPLITTING, ev, src=owner, children=tuple(ev.children), reason=ev.reason or "split")
        return [
            SplitBundle(
                bundle=ev.bundle, broker=owner, children=tuple(ev.children), stimulus_id=ev.stimulus_id
            )
        ]

    @_handle.register
    def _(self, ev: SplitDone) -> list[Instruction]:
        r = self.record(ev.bundle)
        if r.state is S.DELETED:
            return []
        self._require(r, ev, S.SPLITTING)
        return self._complete_split(r, ev, ev.reason or "split done")

    @_handle.register
    def _(self, ev: SplitFailed) -> list[Instruction]:
        r = self.record(ev.bundle)
        if r.state is S.OWNED and not r.children:
            return []
        self._require(r, ev, S.SPLITTING)
        return self._roll_back_split(r, ev, ev.reason or "split failed")

    @_handle.register
    def _(self, ev: BrokerLost) -> list[Instruction]:
        out: list[Instruction] = []
        for r in [r for _, r in sorted(self._records.items()) if ev.broker in (r.dst, r.src)]:
            out += self._on_broker_lost(r, ev)
        return out

    @_handle.register
    def _(self, ev: RingUpdated) -> list[Instruction]:
        ring = frozenset(ev.bundles)
        self._rings[ev.namespace] = ring
        out: list[Instruction] = []
        gone = [
            r
            for _, r in sorted(self._records.items())
            if r.namespace == ev.namespace
            and r.bundle not in ring
            and r.state not in (S.DELETED, S.SPLITTING)
        ]
        back = [
            r
            for _, r in sorted(self._records.items())
            if r.namespace == ev.namespace and r.bundle in ring and r.state is S.DELETED
        ]
        for r in back:  # merged back into the same range: a new life starts from Init
            self._move(r, S.INIT, ev, reason=ev.reason or f"back in the bundles of {ev.namespace}")
        for r in gone:
            self._move(
                r,
                S.DELETED,
                ev,
                forced=True,
                reason=ev.reason or f"no longer in the bundles of {ev.namespace}",
            )
            if r.state in (S.OWNED, S.ASSIGNING) and r.dst:
                out.append(ForceRelease(bundle=r.bundle, broker=r.dst, stimulus_id=ev.stimulus_id))
            out.append(
                OwnerChanged(bundle=r.bundle, owner=None, state=str(S.DELETED), stimulus_id=ev.stimulus_id)
            )
        return out

    @_handle.register
    def _(self, ev: Tick) -> list[Instruction]:
        out: list[Instruction] = []
        for r in self.stuck(ev.at_ms):
            out += self._resolve_stuck(r, ev)
        if self.tombstone_delay_ms:
            for r in [r for _, r in sorted(self._records.items()) if r.state in (S.FREE, S.DELETED)]:
                if ev.at_ms - r.since_ms >= self.tombstone_delay_ms:
                    self._move(
                        r,
                        S.INIT,
                        ev,
                        forced=True,
                        who="watchdog",
                        reason=f"tombstoned after {ev.at_ms - r.since_ms} ms in {r.state}",
                    )
        return out

    # ------------------------------------------------------------------ flows
    def _finish_release(self, r: BundleRecord, ev: Event, reason: str) -> list[Instruction]:
        if r.dst:
            self._move(r, S.ASSIGNING, ev, reason=reason + f"; assigning to {r.dst}")
            return [AcquireOwnership(bundle=r.bundle, broker=r.dst, stimulus_id=ev.stimulus_id)]
        self._move(r, S.FREE, ev, dst=None, reason=reason)
        return [OwnerChanged(bundle=r.bundle, owner=None, state=str(S.FREE), stimulus_id=ev.stimulus_id)]

    def _complete_split(
        self,
        r: BundleRecord,
        ev: Event,
        reason: str,
        child_state: BundleState = S.OWNED,
        who: str | None = None,
    ) -> list[Instruction]:
        """Parent → Deleted, Init children → ``child_state``.

        A child that already has another state is an error for a ``SplitDone`` event;
        the watchdog and broker-loss handling (``who`` set or ``BrokerLost``) must
        always finish, so they leave such a child as it is and say so.
        """
        src = r.src
        lenient = who is not None or isinstance(ev, BrokerLost)
        busy = [
            c
            for c in map(self.record, r.children)
            if not (
                c.state is S.INIT
                or (c.state is child_state and c.dst == (src if child_state is S.OWNED else None))
            )
        ]
        if busy and not lenient:
            self._invalid(
                r, ev, f"its split child {busy[0].bundle} is already {busy[0].state} ({busy[0].dst})"
            )
        if busy:
            reason += "; children left as they were: " + ", ".join(f"{c.bundle} ({c.state})" for c in busy)
        self._move(r, S.DELETED, ev, dst=None, reason=reason, who=who)
        out: list[Instruction] = [
            OwnerChanged(bundle=r.bundle, owner=None, state=str(S.DELETED), stimulus_id=ev.stimulus_id)
        ]
        for child in r.children:
            c = self.record(child)
            if c.state is S.INIT:
                dst = src if child_state is S.OWNED else None
                self._move(
                    c, child_state, ev, dst=dst, src=None, reason=f"child of split {r.bundle}", who=who
                )
            out.append(
                OwnerChanged(
                    bundle=child,
                    owner=src if child_state is S.OWNED else None,
                    state=str(child_state),
                    stimulus_id=ev.stimulus_id,
                )
            )
        return out

    def _roll_back_split(
        self, r: BundleRecord, ev: Event, reason: str, who: str | None = None
    ) -> list[Instruction]:
        self._move(r, S.OWNED, ev, dst=r.src, children=(), forced=True, reason=reason, who=who)
        assert r.src is not None
        return [
            AbortSplit(bundle=r.bundle, broker=r.src, children=r.children, stimulus_id=ev.stimulus_id),
            OwnerChanged(bundle=r.bundle, owner=r.src, state=str(S.OWNED), stimulus_id=ev.stimulus_id),
        ]

    def _split_committed(self, r: BundleRecord) -> bool:
        ring = self._rings.get(r.namespace)
        return ring is not None and r.bundle not in ring and all(c in ring for c in r.children)

    def _on_broker_lost(self, r: BundleRecord, ev: BrokerLost) -> list[Instruction]:
        dead = ev.broker
        why = ev.reason or f"broker {dead} lost"
        free: list[Instruction] = [
            OwnerChanged(bundle=r.bundle, owner=None, state=str(S.FREE), stimulus_id=ev.stimulus_id)
        ]
        if r.state in (S.OWNED, S.ASSIGNING) and r.dst == dead:
            self._move(r, S.FREE, ev, dst=None, forced=True, reason=why)
            return free
        if r.state is S.RELEASING and r.src == dead:
            return self._finish_release(r, ev, why)
        if r.state is S.RELEASING and r.dst == dead:
            self._amend(r, ev, dst=None, reason=f"{why}: transfer target gone, plain unload")
            return []
        if r.state is S.SPLITTING and r.src == dead:
            if self._split_committed(r):
                return self._complete_split(r, ev, why + "; split had committed", child_state=S.FREE)
            self._move(
                r, S.FREE, ev, dst=None, children=(), forced=True, reason=why + "; split had not committed"
            )
            return free
        return []

    def _resolve_stuck(self, r: BundleRecord, ev: Tick) -> list[Instruction]:
        waited = ev.at_ms - r.since_ms
        why = f"stuck in {r.state} for {waited} ms (> {self.in_flight_timeout_ms} ms)"
        if r.state is S.ASSIGNING:
            assert r.dst is not None
            self._move(
                r, S.FREE, ev, dst=None, forced=True, who="watchdog", reason=f"{why}: {r.dst} never confirmed"
            )
            return [
                AbortAssignment(bundle=r.bundle, broker=r.dst, stimulus_id=ev.stimulus_id),
                OwnerChanged(bundle=r.bundle, owner=None, state=str(S.FREE), stimulus_id=ev.stimulus_id),
            ]
        if r.state is S.RELEASING:
            assert r.src is not None
            self._move(r, S.FREE, ev, dst=None, who="watchdog", reason=f"{why}: {r.src} never confirmed")
            return [
                ForceRelease(bundle=r.bundle, broker=r.src, stimulus_id=ev.stimulus_id),
                OwnerChanged(bundle=r.bundle, owner=None, state=str(S.FREE), stimulus_id=ev.stimulus_id),
            ]
        if self._split_committed(r):
            return self._complete_split(r, ev, f"{why}: the ring shows it committed", who="watchdog")
        return self._roll_back_split(r, ev, f"{why}: not committed, rolled back", who="watchdog")

    # ------------------------------------------------------------------ bookkeeping
    def _require(self, r: BundleRecord, ev: Event, *states: BundleState) -> None:
        if r.state not in states:
            allowed = " or ".join(str(s) for s in states)
            self._invalid(r, ev, f"it is {r.state}, {type(ev).__name__} needs {allowed}")

    def _invalid(self, r: BundleRecord, ev: Event, why: str) -> None:
        raise InvalidTransitionError(
            f"Invalid {type(ev).__name__} of bundle {r.bundle} [{ev.stimulus_id}]: {why}",
            self.story(r.bundle),
        )

    def _move(
        self,
        r: BundleRecord,
        finish: BundleState,
        ev: Event,
        *,
        dst: object = _KEEP,
        src: object = _KEEP,
        children: object = _KEEP,
        forced: bool = False,
        reason: str = "",
        who: str | None = None,
    ) -> None:
        if not is_valid_transition(r.state, finish) and not (
            forced and is_forced_transition(r.state, finish)
        ):
            self._invalid(r, ev, f"{r.state} -> {finish} is not a valid transition")
        new = replace(
            r,
            state=finish,
            version=r.version + 1,
            since_ms=ev.at_ms,
            stimulus_id=ev.stimulus_id,
            dst=r.dst if dst is _KEEP else dst,  # type: ignore[arg-type]
            src=r.src if src is _KEEP else src,  # type: ignore[arg-type]
            children=r.children if children is _KEEP else children,  # type: ignore[arg-type]
        )
        if finish is S.INIT:
            self._records.pop(r.bundle, None)
        else:
            self._records[r.bundle] = new
        self._log_transition(r, new, ev, reason, forced and not is_valid_transition(r.state, finish), who)

    def _amend(self, r: BundleRecord, ev: Event, *, dst: str | None, reason: str) -> None:
        """Change a record's brokers without changing its state (logged as such)."""
        new = replace(r, dst=dst, version=r.version + 1, stimulus_id=ev.stimulus_id)
        self._records[r.bundle] = new
        self._log_transition(r, new, ev, reason, False, None)

    def _log_transition(
        self, old: BundleRecord, new: BundleRecord, ev: Event, reason: str, forced: bool, who: str | None
    ) -> None:
        t = Transition(
            old.bundle,
            old.state,
            new.state,
            who or ev.by or _actor(ev),
            ev.at_ms,
            reason,
            ev.stimulus_id,
            forced,
            new.version,
            new.dst,
            new.src,
        )
        self._log.append(t)
        log = self._logs.get(old.bundle)
        if log is None:
            log = self._logs[old.bundle] = deque(maxlen=self._log_per_bundle)
            while len(self._logs) > self._log_bundles:
                self._logs.popitem(last=False)
        else:
            self._logs.move_to_end(old.bundle)
        log.append(t)


def _actor(ev: Event) -> str:
    """Who caused an event when it does not say: the broker it names, or the event kind."""
    for name in ("broker", "to"):
        value = getattr(ev, name, None)
        if value:
            return str(value)
    return "watchdog" if isinstance(ev, Tick) else type(ev).__name__
