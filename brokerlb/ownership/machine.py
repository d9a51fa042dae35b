"""The ownership machine: the one reducer of the ownership table. Records in, what to do out, no I/O.

There is one ownership record per bundle in the metadata store
(:class:`~brokerlb.ownership.record.OwnershipRecord`, Pulsar's ``ServiceUnitStateData``), written
only by compare-and-set. Every broker runs one :class:`OwnershipMachine`, fed the records as the
store's watches deliver them (:class:`~brokerlb.ownership.events.RecordChanged`) -- the
machine *is* the broker's ownership state, Pulsar's ``ServiceUnitStateChannel`` over its table
view. A broker acts on the records that name it, under its live session:

=================================  ===============================================================
the record                         what the named broker does (instructions)
=================================  ===============================================================
Assigning(dst = me)                takes it: writes Owned(dst = me, my session)
Owned(dst = me, my session)        serves it (:class:`StartServing`)
Releasing(src = me, my session)    stops serving (:class:`StopServing`: unload, or a transfer's
                                   fence), closes the bundle (:class:`Release`), then writes
                                   Assigning(dst) for a transfer, else Free
Owned(dst = other, src = me)       a transfer it fenced is over: clients told the new owner
                                   (:class:`ClientsMoved`)
Splitting(src = me, my session)    commits the split: the ring, the parent Deleted and the children
                                   Owned by it, in one transaction (:class:`CommitSplit`,
                                   :meth:`OwnershipMachine.split_commit`)
anything else that was mine        stops serving it (``lost``: ended session, override, or a
                                   session not known alive)
=================================  ===============================================================

**Moves are proposals.** :meth:`OwnershipMachine.assign` (a lookup of an unowned bundle),
:meth:`~OwnershipMachine.unload` (an unload or a transfer: the leader moves a bundle by writing one
transition), :meth:`~OwnershipMachine.split` and :meth:`~OwnershipMachine.override` (the leader's
``force``) return the compare-and-set :class:`Write` that makes the move; nothing changes here until
the new record comes back. Each is checked by Pulsar's conflict resolver
(:func:`~brokerlb.ownership.record.check_next`) first.

**The leader's monitor** (when :class:`LeadershipChanged` says this broker leads; Pulsar's
``monitorOwnerships`` and broker clean-up): a record naming a broker whose registration now belongs
to another session, or is gone (:class:`BrokersChanged`), is an orphan -- and so is a state in flight
longer than ``in_flight_timeout_ms`` (``loadBalancerInFlightServiceUnitStateWaitingTimeInMillis``),
timed from when this machine first saw it: the leader overrides it (:class:`Reassign`, then
:meth:`~OwnershipMachine.override`). Free and Deleted records older than ``tombstone_delay_ms`` are
deleted (``loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds``).

``me=None`` makes the machine act for every broker (the simulator, which plays the whole cluster);
a live broker's machine acts for ``me`` only. Time is given (``at_ms``), never read.

>>> from brokerlb.ownership.events import RecordChanged, SessionChanged
>>> m = OwnershipMachine(me="b1")
>>> _ = m.handle(SessionChanged(session=7, at_ms=0))
>>> w = m.assign("t/ns/0x00000000_0xffffffff", "b1", at_ms=1, by="b3", reason="least loaded")
>>> w.record
OwnershipRecord(state=<BundleState.ASSIGNING: 'Assigning'>, dst='b1', src=None, children=(), force=False, timestamp=1, version=1, dst_session=None, src_session=None)
>>> [type(i).__name__ for i in m.handle(RecordChanged(bundle=w.bundle, record=w.record, stat_version=0, at_ms=2))]
['Write']
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from brokerlb.errors import InvalidConfigError, InvalidTransitionError
from brokerlb.ownership.events import (
    NO_NODE,
    BrokersChanged,
    ClientsMoved,
    CommitSplit,
    LeadershipChanged,
    OwnerChanged,
    Reassign,
    ReassignFailed,
    RecordChanged,
    Release,
    Released,
    SessionChanged,
    StartServing,
    StopCause,
    StopServing,
    TableEvent,
    TableInstruction,
    Tick,
    Write,
)
from brokerlb.ownership.record import OwnershipRecord, check_next, state_of
from brokerlb.ownership.states import BundleState

__all__ = [
    "OwnershipMachine",
    "Transition",
    "Owner",
    "DEFAULT_IN_FLIGHT_TIMEOUT_MS",
    "DEFAULT_TOMBSTONE_DELAY_MS",
]

S = BundleState
#: ``loadBalancerInFlightServiceUnitStateWaitingTimeInMillis``
DEFAULT_IN_FLIGHT_TIMEOUT_MS = 30_000
#: ``loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds`` × 1000
DEFAULT_TOMBSTONE_DELAY_MS = 3_600_000


class OwnershipKeys(Protocol):
    """The broker.conf keys of the machine (a :class:`~brokerlb.config.ServiceConfig`)."""

    loadBalancerInFlightServiceUnitStateWaitingTimeInMillis: int
    loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds: float


@dataclass(frozen=True, slots=True)
class Transition:
    """One line of a bundle's story: a change of its record, who made it and why."""

    bundle: str
    start: BundleState
    finish: BundleState
    version: int
    at_ms: int
    who: str
    reason: str
    forced: bool
    dst: str | None = None
    src: str | None = None

    def __str__(self) -> str:
        brokers = ", ".join(f"{k} {v}" for k, v in (("src", self.src), ("dst", self.dst)) if v)
        where = f" ({brokers})" if brokers else ""
        forced = " FORCED" if self.forced else ""
        by = f" by {self.who}" if self.who else ""
        why = f": {self.reason}" if self.reason else ""
        return f"{self.bundle}: {self.start} -> {self.finish}{where}{forced} v{self.version} at {self.at_ms} ms{by}{why}"


@dataclass(frozen=True, slots=True)
class Owner:
    """A lookup's view of a bundle (Pulsar's ``getOwnerAsync``): ``broker`` serves it now (Owned, or
    Splitting: its source); ``moving_to`` is where an in-flight move goes (Assigning, Releasing: its
    destination, if any); ``deleted``: the bundle left the ring (split or merged)."""

    state: BundleState
    broker: str | None = None
    moving_to: str | None = None

    @property
    def deleted(self) -> bool:
        return self.state is S.DELETED

    @property
    def in_flight(self) -> bool:
        return self.state in (S.ASSIGNING, S.RELEASING)


@dataclass(slots=True)
class _Entry:
    record: OwnershipRecord
    stat_version: int
    #: when this machine first saw this version of the record (ms)
    since_ms: int
    #: the store's transaction id of the change (0: unknown)
    zxid: int = 0


class OwnershipMachine:
    """The reducer of the ownership table (module docstring). Not thread-safe: one caller."""

    def __init__(
        self,
        *,
        me: str | None = None,
        in_flight_timeout_ms: int = DEFAULT_IN_FLIGHT_TIMEOUT_MS,
        tombstone_delay_ms: int = DEFAULT_TOMBSTONE_DELAY_MS,
        log_per_bundle: int = 32,
        log_bundles: int = 100_000,
        log_total: int = 10_000,
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
        self.me = me
        self.in_flight_timeout_ms = in_flight_timeout_ms
        self.tombstone_delay_ms = tombstone_delay_ms
        self._table: dict[str, _Entry] = {}
        self._my_session: int | None = None
        self._last_session: int | None = None
        self._sessions: dict[str, int] = {}
        self.leading = me is None
        #: bundle -> the broker serving it (StartServing given, StopServing not yet)
        self._serving: dict[str, str] = {}
        #: bundle -> the broker holding its clients fenced for a transfer
        self._fenced: dict[str, str] = {}
        #: bundle -> the record version whose action (take, release, split) was given
        self._acted: dict[str, int] = {}
        #: bundle -> the record version a Reassign was given for
        self._reassigning: dict[str, int] = {}
        #: bundle -> the transaction id of its record's deletion (a read older than it is stale)
        self._gone: dict[str, int] = {}
        #: (bundle, version) -> (by, reason) of this machine's own proposals, for the story
        self._proposed: dict[tuple[str, int], tuple[OwnershipRecord | None, str, str]] = {}
        self._log_per_bundle = log_per_bundle
        self._log_bundles = log_bundles
        self._logs: OrderedDict[str, deque[Transition]] = OrderedDict()
        self._log: deque[Transition] = deque(maxlen=log_total)

    @classmethod
    def from_config(cls, conf: OwnershipKeys, *, me: str | None = None) -> OwnershipMachine:
        """Timeouts from Pulsar's keys (``loadBalancerInFlightServiceUnitStateWaitingTimeInMillis``,
        ``loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds``)."""
        return cls(
            me=me,
            in_flight_timeout_ms=int(conf.loadBalancerInFlightServiceUnitStateWaitingTimeInMillis),
            tombstone_delay_ms=int(conf.loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds * 1000),
        )

    # ------------------------------------------------------------------ reading
    def record(self, bundle: str) -> OwnershipRecord | None:
        entry = self._table.get(bundle)
        return None if entry is None else entry.record

    def stat_version(self, bundle: str) -> int:
        entry = self._table.get(bundle)
        return NO_NODE if entry is None else entry.stat_version

    def state(self, bundle: str) -> BundleState:
        return state_of(self.record(bundle))

    def records(self) -> dict[str, OwnershipRecord]:
        return {b: e.record for b, e in self._table.items()}

    def bundles(self) -> list[str]:
        return sorted(self._table)

    def owner(self, bundle: str) -> Owner:
        """Who serves the bundle, for a lookup (:class:`Owner`; Pulsar's ``getOwnerAsync``)."""
        return owner_of(self.record(bundle))

    def owned_by(self, broker: str) -> list[str]:
        """Bundles Owned by ``broker`` (or being split by it), whatever the session."""
        return sorted(
            b
            for b, e in self._table.items()
            if e.record.holder()[0] == broker and e.record.state in (S.OWNED, S.SPLITTING)
        )

    def serving(self, bundle: str) -> bool:
        """Whether this machine's broker serves the bundle (StartServing given, no StopServing since)."""
        broker = self._serving.get(bundle)
        return broker is not None and broker == self.me

    def served(self, broker: str | None = None) -> list[str]:
        """The bundles ``broker`` (default: this machine's) serves, sorted."""
        who = self.me if broker is None else broker
        return sorted(b for b, k in self._serving.items() if k == who)

    def session(self, broker: str) -> int | None:
        """The live session of ``broker`` as this machine knows it (its own, or the registry's)."""
        if self.me is not None and broker == self.me:
            return self._my_session
        return self._sessions.get(broker)

    def in_flight(self) -> list[tuple[str, OwnershipRecord, int]]:
        """``(bundle, record, since_ms)`` of every record in flight."""
        return [(b, e.record, e.since_ms) for b, e in sorted(self._table.items()) if e.record.in_flight]

    def story(self, *keys: str) -> list[Transition]:
        """Transitions of the given bundles, oldest first."""
        lines: dict[int, Transition] = {}
        for key in keys:
            for t in self._logs.get(key, ()):
                lines[id(t)] = t
        for t in self._log:
            if t.bundle in keys:
                lines[id(t)] = t
        return sorted(lines.values(), key=lambda t: (t.at_ms, t.version, t.bundle))

    # ------------------------------------------------------------------ proposals
    def assign(self, bundle: str, broker: str, *, at_ms: int, by: str = "", reason: str = "assign") -> Write:
        """Assign an unowned (Init or Free) bundle to ``broker``: → Assigning(dst = broker)."""
        prev = self.record(bundle)
        return self._propose(bundle, self._next(prev, S.ASSIGNING, at_ms, dst=broker), by, reason)

    def unload(
        self, bundle: str, to: str | None = None, *, at_ms: int, by: str = "", reason: str = ""
    ) -> Write:
        """Move an Owned bundle off its owner: → Releasing(src = owner, dst = ``to``) -- a transfer with
        ``to``, else an unload (the next lookup places it)."""
        prev = self.record(bundle)
        if prev is None or prev.state is not S.OWNED:
            self._refuse(bundle, f"it is {state_of(prev)}, an unload needs Owned")
        assert prev is not None
        if to is not None and to == prev.dst:
            self._refuse(bundle, f"it is already owned by {to}; unload to the same broker is not allowed")
        new = self._next(prev, S.RELEASING, at_ms, src=prev.dst, dst=to, src_session=prev.dst_session)
        return self._propose(bundle, new, by, reason or (f"transfer to {to}" if to else "unload"))

    def split(
        self, bundle: str, children: Iterable[str], *, at_ms: int, by: str = "", reason: str = "split"
    ) -> Write:
        """Split an Owned bundle into ``children`` (full names or ranges): → Splitting(src = owner)."""
        prev = self.record(bundle)
        ranges = tuple(c.rpartition("/")[2] for c in children)
        if len(ranges) < 2 or bundle.rpartition("/")[2] in ranges:
            self._refuse(bundle, f"a split needs at least two children other than the bundle, got {ranges}")
        if prev is None or prev.state is not S.OWNED:
            self._refuse(bundle, f"it is {state_of(prev)}, a split needs Owned")
        assert prev is not None
        new = self._next(
            prev, S.SPLITTING, at_ms, src=prev.dst, children=ranges, src_session=prev.dst_session
        )
        return self._propose(bundle, new, by, reason)

    def override(
        self,
        bundle: str,
        broker: str | None,
        session: int | None,
        *,
        version: int,
        at_ms: int,
        by: str = "leader",
        reason: str = "",
    ) -> Write:
        """The leader's override (``force``) of the record at ``version`` (the one found orphaned or
        stuck: a record that moved on since is not overridden): the bundle Owned by ``broker`` under
        ``session`` -- or Free when ``broker`` is ``None``. The former holder is named as the source, so
        it closes what it may still serve (Pulsar's ``overrideOwnership``)."""
        prev = self.record(bundle)
        if prev is None or prev.state is S.DELETED:
            self._refuse(bundle, f"it is {state_of(prev)}: nothing to override")
        assert prev is not None
        if prev.version != version:
            self._refuse(
                bundle, f"it moved on (v{prev.version}) since v{version} was found orphaned or stuck"
            )
        holder = prev.holder()[0] or prev.src
        src = holder if holder != broker else None
        if broker is None:
            new = prev.next(S.FREE, at_ms=at_ms, src=holder, force=True)
        else:
            if session is None:
                self._refuse(bundle, f"an override names the owner's session ({broker}: none known)")
            new = prev.next(S.OWNED, at_ms=at_ms, dst=broker, src=src, dst_session=session, force=True)
        return self._propose(bundle, new, by, reason or "override")

    def split_commit(self, bundle: str, *, at_ms: int) -> list[Write]:
        """The writes of a split's commit, for one transaction with the namespace's new bundles: the
        parent Splitting → Deleted, each child → Owned by the parent's owner under its session."""
        prev = self.record(bundle)
        if prev is None or prev.state is not S.SPLITTING:
            self._refuse(bundle, f"it is {state_of(prev)}, a split commit needs Splitting")
        assert prev is not None and prev.src is not None
        namespace = bundle.rpartition("/")[0]
        out = [
            self._propose(
                bundle,
                prev.next(S.DELETED, at_ms=at_ms, src=prev.src, children=prev.children),
                prev.src,
                "split committed",
                commit=True,
            )
        ]
        for child in prev.children:
            name = f"{namespace}/{child}"
            old = self.record(name)
            new = self._next(old, S.OWNED, at_ms, dst=prev.src, dst_session=prev.src_session)
            out.append(self._propose(name, new, prev.src, f"child of split {bundle}", commit=True))
        return out

    def merge_commit(self, parts: Iterable[str], merged: str, *, at_ms: int) -> list[Write]:
        """The writes of a merge's commit (brokerlb; Pulsar has no merge), for one transaction with the
        namespace's new bundles: every part Owned by one broker under one session → Deleted, the merged
        bundle → Owned by that broker. The parts are moved to one broker first (transfers)."""
        names = list(parts)
        holders = {
            (r.dst, r.dst_session) if (r := self.record(p)) and r.state is S.OWNED else None for p in names
        }
        if len(holders) != 1 or None in holders:
            self._refuse(merged, f"the parts {names} are not all Owned by one broker under one session")
        ((owner, session),) = holders  # type: ignore[misc]
        assert owner is not None
        out: list[Write] = []
        for part in names:
            prev = self.record(part)
            assert prev is not None
            reason = f"merged into {merged}"
            out.append(
                self._propose(part, prev.next(S.DELETED, at_ms=at_ms, src=owner), owner, reason, commit=True)
            )
        new = self._next(self.record(merged), S.OWNED, at_ms, dst=owner, dst_session=session)
        out.append(self._propose(merged, new, owner, "merge committed", commit=True))
        return out

    def tombstone(self, bundle: str, *, by: str = "leader", reason: str = "tombstone") -> Write:
        """Delete a Free or Deleted record (back to Init)."""
        prev = self.record(bundle)
        try:
            check_next(prev, None)
        except InvalidTransitionError as exc:
            self._refuse(bundle, str(exc))
        prev_version = 0 if prev is None else prev.version
        self._proposed[(bundle, prev_version + 1)] = (None, by, reason)
        return Write(bundle=bundle, record=None, expected=self.stat_version(bundle), by=by, reason=reason)

    # ------------------------------------------------------------------ handling
    def handle(self, *events: TableEvent) -> list[TableInstruction]:
        """Apply ``events`` in order; what the brokers this machine acts for must do."""
        out: list[TableInstruction] = []
        for event in events:
            out += self._handle(event)
        return out

    def _handle(self, ev: TableEvent) -> list[TableInstruction]:
        if isinstance(ev, RecordChanged):
            return self._on_record(ev)
        if isinstance(ev, SessionChanged):
            if ev.session == self._my_session:
                return []
            if ev.session is not None and ev.session != self._last_session:
                self._acted.clear()  # a new session acts afresh on what names it
                self._last_session = ev.session
            self._my_session = ev.session
            return self._reduce_all(ev.at_ms)
        if isinstance(ev, BrokersChanged):
            old, self._sessions = self._sessions, dict(ev.sessions)
            moved = {b for b in old.keys() | self._sessions.keys() if old.get(b) != self._sessions.get(b)}
            if moved and self.me is None:  # a broker's new incarnation acts afresh on what names it
                for bundle, entry in self._table.items():
                    if entry.record.dst in moved or entry.record.src in moved:
                        self._acted.pop(bundle, None)
            return self._reduce_all(ev.at_ms)
        if isinstance(ev, LeadershipChanged):
            self.leading = ev.leading
            self._reassigning.clear()
            return self._reduce_all(ev.at_ms) if ev.leading else []
        if isinstance(ev, Released):
            return self._on_released(ev)
        if isinstance(ev, ReassignFailed):
            self._reassigning.pop(ev.bundle, None)
            return []
        if isinstance(ev, Tick):
            return self._on_tick(ev.at_ms)
        raise InvalidTransitionError(f"Unknown event {ev!r}")

    def _on_record(self, ev: RecordChanged) -> list[TableInstruction]:
        bundle, new = ev.bundle, ev.record
        entry = self._table.get(bundle)
        old = None if entry is None else entry.record
        if ev.zxid:
            if entry is not None and ev.zxid <= entry.zxid:
                return []  # a read older than (or the same as) the one applied
            if entry is None and new is not None and ev.zxid <= self._gone.get(bundle, 0):
                return []  # a read from before the record was deleted
        if new is None:
            if entry is None:
                return []
            self._gone[bundle] = max(entry.zxid, ev.zxid)
            del self._table[bundle]
        else:
            if old == new and entry is not None:
                entry.stat_version, entry.zxid = ev.stat_version, max(entry.zxid, ev.zxid)
                return []
            same = (
                entry is not None
                and old is not None
                and old.state is new.state
                and old.version == new.version
            )
            since = entry.since_ms if same and entry is not None else ev.at_ms
            self._table[bundle] = _Entry(new, ev.stat_version, since, ev.zxid)
            self._gone.pop(bundle, None)
        self._reassigning.pop(bundle, None)
        self._log_change(bundle, old, new, ev.at_ms)
        return self._reduce(bundle, old, ev.at_ms)

    def _on_released(self, ev: Released) -> list[TableInstruction]:
        r = self.record(ev.bundle)
        if r is None or r.state is not S.RELEASING or r.version != ev.version or r.src is None:
            return []  # the record moved on (an override, the watchdog): nothing to finish
        to = r.dst
        if to and self._sessions and self.session(to) is None:
            to = None  # the destination left meanwhile: the transfer ends as an unload
        if to:
            new = r.next(S.ASSIGNING, at_ms=ev.at_ms, dst=to, src=r.src)
            reason = "released; transfer goes on"
        else:
            new = r.next(S.FREE, at_ms=ev.at_ms, src=r.src)
            reason = "released" if not r.dst else f"released; {r.dst} left, the transfer ends as an unload"
        return [self._propose(ev.bundle, new, r.src, reason)]

    def _on_tick(self, at_ms: int) -> list[TableInstruction]:
        if not self.leading:
            return []
        out: list[TableInstruction] = []
        for bundle, entry in sorted(self._table.items()):
            r = entry.record
            if r.in_flight and at_ms - entry.since_ms >= self.in_flight_timeout_ms:
                out += self._reassign(
                    bundle,
                    r,
                    f"in {r.state} for {at_ms - entry.since_ms} ms (> {self.in_flight_timeout_ms} ms)",
                    stuck=True,
                )
            elif r.active:
                out += self._orphan(bundle, r)
            elif self.tombstone_delay_ms and at_ms - entry.since_ms >= self.tombstone_delay_ms:
                out.append(
                    self.tombstone(bundle, by="leader", reason=f"{r.state} for {at_ms - entry.since_ms} ms")
                )
        return out

    # ------------------------------------------------------------------ reducing one bundle
    def _reduce_all(self, at_ms: int) -> list[TableInstruction]:
        out: list[TableInstruction] = []
        for bundle in sorted(set(self._table) | set(self._serving) | set(self._fenced)):
            out += self._reduce(bundle, self.record(bundle), at_ms)
        return out

    def _reduce(self, bundle: str, old: OwnershipRecord | None, at_ms: int) -> list[TableInstruction]:
        r = self.record(bundle)
        out: list[TableInstruction] = []
        out += self._owner_change(bundle, old, r)
        out += self._serving_change(bundle, r)
        fenced = self._fenced.get(bundle)
        if fenced is not None and not (
            r is not None and r.state in (S.RELEASING, S.ASSIGNING) and r.src == fenced
        ):
            del self._fenced[bundle]
            owner = r.dst if r is not None and r.state is S.OWNED else None
            out.append(ClientsMoved(bundle=bundle, broker=fenced, owner=owner))
        if r is None:
            self._acted.pop(bundle, None)
            return out
        if self._acted.get(bundle) != r.version:
            out += self._act(bundle, r, at_ms)
        if self.leading:
            out += self._orphan(bundle, r)
        return out

    def _owner_change(
        self, bundle: str, old: OwnershipRecord | None, new: OwnershipRecord | None
    ) -> list[TableInstruction]:
        before, after = _owner_view(old), _owner_view(new)
        if before == after:
            return []
        return [OwnerChanged(bundle=bundle, owner=after[0], deleted=after[1])]

    def _serving_change(self, bundle: str, r: OwnershipRecord | None) -> list[TableInstruction]:
        want: tuple[str, int] | None = None
        if r is not None and r.state in (S.OWNED, S.SPLITTING):
            holder, session = r.holder()
            if (
                holder is not None
                and self._acts_for(holder)
                and session is not None
                and session == self.session(holder)
            ):
                want = (holder, session)
        current = self._serving.get(bundle)
        out: list[TableInstruction] = []
        if current is not None and (want is None or want[0] != current):
            del self._serving[bundle]
            cause = self._stop_cause(r, current)
            if cause.kind == "transfer":
                self._fenced[bundle] = current
            out.append(StopServing(bundle=bundle, broker=current, cause=cause))
        if want is not None and self._serving.get(bundle) != want[0]:
            self._serving[bundle] = want[0]
            out.append(StartServing(bundle=bundle, broker=want[0], session=want[1]))
        return out

    def _stop_cause(self, r: OwnershipRecord | None, broker: str) -> StopCause:
        if r is None or r.force:
            return StopCause("lost")
        if r.state is S.RELEASING and r.src == broker:
            return StopCause("transfer", r.dst) if r.dst else StopCause("unload")
        if r.state is S.DELETED and r.src == broker:
            if r.children:
                return StopCause("split", successors=r.children)
            return StopCause("merge")
        return StopCause("lost")

    def _act(self, bundle: str, r: OwnershipRecord, at_ms: int) -> list[TableInstruction]:
        """What the broker the record names must do (the table in the module docstring)."""
        if r.state is S.ASSIGNING and r.dst is not None and self._acts_for(r.dst):
            session = self.session(r.dst)
            if session is None:
                return []  # not known alive: it takes nothing (the watchdog reassigns if it stays so)
            self._acted[bundle] = r.version
            new = r.next(S.OWNED, at_ms=at_ms, dst=r.dst, src=r.src, dst_session=session)
            return [self._propose(bundle, new, r.dst, "assignment taken")]
        if r.state in (S.RELEASING, S.SPLITTING) and r.src is not None and self._acts_for(r.src):
            if r.src_session is None or r.src_session != self.session(r.src):
                return []  # an earlier incarnation's: the leader overrides it
            self._acted[bundle] = r.version
            if r.state is S.RELEASING:
                return [Release(bundle=bundle, broker=r.src, version=r.version, transfer_to=r.dst)]
            namespace = bundle.rpartition("/")[0]
            return [
                CommitSplit(
                    bundle=bundle,
                    broker=r.src,
                    children=tuple(f"{namespace}/{c}" for c in r.children),
                    version=r.version,
                )
            ]
        return []

    # ------------------------------------------------------------------ the leader's monitor
    def _orphan(self, bundle: str, r: OwnershipRecord) -> list[TableInstruction]:
        """A record whose holder -- the broker that serves it or must act on it -- is an ended session:
        its registration is gone, or belongs to another session now. (A transfer whose destination
        left is not overridden while its live source releases it: the source ends it.)"""
        if not self._sessions and self.me is not None:
            return []  # no view of the registry yet
        holder, session = r.holder()
        if holder is None:
            return []
        live = self.session(holder)
        if live is None or (session is not None and session != live):
            what = "gone" if live is None else "registered under another session"
            return self._reassign(bundle, r, f"{holder} is {what}", dead=holder)
        return []

    def _reassign(
        self, bundle: str, r: OwnershipRecord, why: str, *, dead: str | None = None, stuck: bool = False
    ) -> list[TableInstruction]:
        if self._reassigning.get(bundle) == r.version:
            return []
        self._reassigning[bundle] = r.version
        keep_on = None
        if stuck and r.state is S.SPLITTING and r.src is not None and self._alive(r.src, r.src_session):
            keep_on = r.src  # a split that never committed: rolled back on its live owner
        return [Reassign(bundle=bundle, version=r.version, exclude=dead, reason=why, keep_on=keep_on)]

    def _alive(self, broker: str, session: int | None) -> bool:
        live = self.session(broker)
        return live is not None and (session is None or session == live)

    # ------------------------------------------------------------------ bookkeeping
    def _acts_for(self, broker: str) -> bool:
        return self.me is None or broker == self.me

    def _next(
        self, prev: OwnershipRecord | None, state: BundleState, at_ms: int, **changes: object
    ) -> OwnershipRecord:
        if prev is None:
            return OwnershipRecord(state, timestamp=at_ms, **changes)  # type: ignore[arg-type]
        return prev.next(state, at_ms=at_ms, **changes)

    def _propose(
        self, bundle: str, new: OwnershipRecord, by: str, reason: str, *, commit: bool = False
    ) -> Write:
        prev = self.record(bundle)
        try:
            check_next(prev, new, commit=commit)
        except InvalidTransitionError as exc:
            self._refuse(bundle, str(exc))
        self._proposed[(bundle, new.version)] = (new, by, reason)
        if len(self._proposed) > 10_000:
            for key in list(self._proposed)[:5_000]:
                del self._proposed[key]
        return Write(bundle=bundle, record=new, expected=self.stat_version(bundle), by=by, reason=reason)

    def _refuse(self, bundle: str, why: str) -> None:
        raise InvalidTransitionError(f"Invalid change of bundle {bundle}: {why}", self.story(bundle))

    def _log_change(
        self, bundle: str, old: OwnershipRecord | None, new: OwnershipRecord | None, at_ms: int
    ) -> None:
        version = new.version if new is not None else (old.version + 1 if old is not None else 0)
        if new is not None:
            # changes this machine proposed itself but did not see (the view read a later record): its
            # own story still tells them
            for missed in range((0 if old is None else old.version) + 1, version):
                proposed = self._proposed.pop((bundle, missed), None)
                if proposed is not None and proposed[0] is not None:
                    # told at the moment it was proposed (the record's timestamp), not when seen
                    when = min(at_ms, proposed[0].timestamp)
                    self._log_one(bundle, old, proposed[0], when, proposed[1], proposed[2])
                    old = proposed[0]
        _record, by, reason = self._proposed.pop((bundle, version), (None, "", ""))
        if new is None:
            reason = reason or "tombstoned"
        self._log_one(bundle, old, new, at_ms, by, reason)

    def _log_one(
        self,
        bundle: str,
        old: OwnershipRecord | None,
        new: OwnershipRecord | None,
        at_ms: int,
        by: str,
        reason: str,
    ) -> None:
        version = new.version if new is not None else (old.version + 1 if old is not None else 0)
        t = Transition(
            bundle,
            state_of(old),
            state_of(new),
            version,
            at_ms,
            by,
            reason,
            new is not None and new.force,
            None if new is None else new.dst,
            None if new is None else new.src,
        )
        self._log.append(t)
        log = self._logs.get(bundle)
        if log is None:
            log = self._logs[bundle] = deque(maxlen=self._log_per_bundle)
            while len(self._logs) > self._log_bundles:
                self._logs.popitem(last=False)
        else:
            self._logs.move_to_end(bundle)
        log.append(t)


def owner_of(r: OwnershipRecord | None) -> Owner:
    """A record's owner view (:meth:`OwnershipMachine.owner`)."""
    if r is None:
        return Owner(S.INIT)
    if r.state is S.OWNED:
        return Owner(r.state, r.dst)
    if r.state is S.SPLITTING:
        return Owner(r.state, r.src)
    if r.state in (S.ASSIGNING, S.RELEASING):
        return Owner(r.state, None, r.dst)
    return Owner(r.state)


def _owner_view(r: OwnershipRecord | None) -> tuple[str | None, bool]:
    if r is None:
        return None, False
    if r.state is S.OWNED:
        return r.dst, False
    if r.state is S.SPLITTING:
        return r.src, False
    return None, r.state is S.DELETED


def sessions_of(registrations: Mapping[str, int | None]) -> dict[str, int]:
    """The registry's ``broker -> session`` with the unknown ones left out."""
    return {b: s for b, s in registrations.items() if s is not None}
