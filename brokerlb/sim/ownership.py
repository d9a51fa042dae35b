"""Who owns every bundle, how ownership moves, and the trail it leaves.

The simulator keeps one ownership record per bundle, as the live cluster's metadata store does,
and runs the same ownership machine over it (:class:`~brokerlb.ownership.machine.OwnershipMachine`,
Pulsar's ``ServiceUnitState`` channel) in the same role -- the one reducer of the table -- acting
for every simulated broker at once: a move is a proposal of the machine (assign, unload, split,
the leader's override), written to the table by compare-and-set, and the machine answers what the
named broker does next (take an assignment, commit a split). A broker that is down does not act.
An invalid move fails loudly and :meth:`OwnershipTable.story` answers "what happened to this
bundle" with the machine's transition log. Beside it, numpy arrays mirror the state per bundle id
for the vectorised traffic sums:

* ``Free`` -- nobody owns it; the next lookup places it (Assign + AssignmentDone);
* ``Owned`` -- a broker serves it (if that broker crashes, the bundle stays ``Owned`` by the
  dead broker until its session expires -- ``BrokerLost`` -- exactly as the ephemeral
  ownership node stays);
* ``Releasing`` -- being unloaded (topics closing) or transferred to a named destination;
* ``Assigning`` -- a transfer whose source is done, until the destination owns it;
* ``Deleted`` -- split into children (Splitting, then the commit: the parent Deleted and the
  children Owned by the parent's owner), or merged with its neighbours (each part is unloaded
  and its record dropped as it leaves the ring; the merged bundle is ``Free`` and placed by the
  next lookup).

Stimulus ids name the cause (``lookup-17``, ``shed-3``, ``transfer-5``, ``split-2``,
``restart-9``, ``failure-1``, ``merge-4``).

A bundle is **unavailable** (counted as "time without an owner") from the moment it loses a
serving owner -- unload started, owner crashed, merged -- until a live broker owns it again. The
first placement of a bundle that never had an owner does not count: a strategy that moved
nothing shows no time without an owner. A **move** is completed when a bundle that had an owner gets one
again: ``returned`` when the new owner is the broker it was shed from (Pulsar issue #21722),
``flap`` when the previous balancer move of the bundle finished less than the grace period
earlier.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from brokerlb.ownership import BundleState as RecordState
from brokerlb.ownership.events import (
    NO_NODE,
    BrokersChanged,
    CommitSplit,
    Reassign,
    RecordChanged,
    Released,
    TableEvent,
    TableInstruction,
    Write,
)
from brokerlb.ownership.machine import OwnershipMachine, Transition

__all__ = ["BundleState", "Move", "OwnershipTable", "BALANCER_CAUSES"]


class BundleState:
    """Mirror of the machine's state per bundle id (only the states the simulator uses): the
    values of the ``state`` array. Plain ints, not an ``IntEnum``: numpy compares whole arrays
    with them every cycle, and it looks up its protocol attributes on an enum member's class
    through the enum's slow ``__getattr__``."""

    FREE = 0
    OWNED = 1
    RELEASING = 2
    ASSIGNING = 3
    DELETED = 4


#: causes of moves made by the load balancer (as opposed to failures and restarts)
BALANCER_CAUSES = frozenset({"shed", "transfer", "split", "merge"})


@dataclass(frozen=True, slots=True)
class Move:
    """A completed ownership move."""

    time_ms: int
    bundle: str
    source: str
    destination: str
    cause: str
    throughput: float
    unowned_ms: int
    flap: bool
    returned: bool


class OwnershipTable:
    """Per-bundle ownership arrays (indexed by bundle id) over the real state machine.

    ``brokers`` are broker ids by index. Times are ms since the epoch.
    """

    def __init__(self, bundle_names: list[str], brokers: list[str], grace_ms: float) -> None:
        self.bundle_names = bundle_names  # shared with the topology: grows with splits
        self.brokers = brokers
        self.grace_ms = grace_ms
        self.machine = OwnershipMachine(me=None, log_per_bundle=64, log_total=1000)
        #: the table: bundle -> (record, its version in the model store)
        self._versions: dict[str, int] = {}
        self._zxid = 0
        #: broker id -> its incarnation (the session of a registered broker)
        self._sessions: dict[str, int] = {}
        self._incarnations = itertools.count(1)
        #: brokers that are down (a crash: registered until their session expires, acting on nothing)
        self._down: set[str] = set()
        self._index: dict[str, int] = {}
        #: every write to the table, in order, when a list is set here (the sim/live equivalence test)
        self.journal: list[Write] | None = None
        for broker in brokers:  # registered from the start (a (re)started broker gets a new session)
            self._sessions[broker] = next(self._incarnations)
        self.machine.handle(BrokersChanged(sessions=dict(self._sessions), at_ms=0))
        n = len(bundle_names)
        self.state = np.zeros(n, dtype=np.int8)
        self.owner = np.full(n, -1, dtype=np.int32)
        self.unavailable_since = np.full(n, np.nan)
        self.lookup_pending = np.zeros(n, dtype=bool)
        self._released_from = np.full(n, -1, dtype=np.int32)
        self._release_cause: list[str] = [""] * n
        self._release_throughput = np.zeros(n)
        self._last_balancer_move = np.full(n, -np.inf)
        self.moves: list[Move] = []
        self.unowned_ms_total = 0.0
        self._cycle_start_ms = 0.0
        self._cycle_unowned_ms = 0.0

    # ------------------------------------------------------------------ size

    def grow(self, n: int) -> None:
        """Make room for bundle ids up to ``n`` (new bundles start ``Free``)."""
        extra = n - len(self.state)
        if extra <= 0:
            return
        self.state = np.concatenate([self.state, np.zeros(extra, dtype=np.int8)])
        self.owner = np.concatenate([self.owner, np.full(extra, -1, dtype=np.int32)])
        self.unavailable_since = np.concatenate([self.unavailable_since, np.full(extra, np.nan)])
        self.lookup_pending = np.concatenate([self.lookup_pending, np.zeros(extra, dtype=bool)])
        self._released_from = np.concatenate([self._released_from, np.full(extra, -1, dtype=np.int32)])
        self._release_cause.extend([""] * extra)
        self._release_throughput = np.concatenate([self._release_throughput, np.zeros(extra)])
        self._last_balancer_move = np.concatenate([self._last_balancer_move, np.full(extra, -np.inf)])

    # ------------------------------------------------------------------ queries

    def owned_by(self, broker: int) -> np.ndarray:
        return np.flatnonzero((self.owner == broker) & (self.state == BundleState.OWNED))

    def served_mask(self, broker_up: np.ndarray) -> np.ndarray:
        """Bundles a live broker serves now."""
        owned = self.state == BundleState.OWNED
        up = np.zeros(len(self.owner), dtype=bool)
        up[owned] = broker_up[self.owner[owned]]
        return up

    def story(self, bundle: str) -> list[Transition]:
        """The bundle's transitions, oldest first (the state machine's log)."""
        return self.machine.story(bundle)

    def sessions(self) -> dict[str, int]:
        """Registered broker -> its session (incarnation), as the machine knows them."""
        return dict(self._sessions)

    def ownership_map(self) -> dict[str, str]:
        """``bundle -> broker`` for every owned bundle (the extensible load manager's channel view)."""
        ids = np.flatnonzero(self.state == BundleState.OWNED)
        names, brokers = self.bundle_names, self.brokers
        return {names[i]: brokers[o] for i, o in zip(ids, self.owner[ids], strict=True)}

    # ------------------------------------------------------------------ cycle accounting

    def start_cycle(self, start_ms: float) -> None:
        self._cycle_start_ms = start_ms
        self._cycle_unowned_ms = 0.0

    def end_cycle(self, end_ms: float) -> float:
        """Bundle-milliseconds without an owner during the cycle that ends at ``end_ms``."""
        waiting = ~np.isnan(self.unavailable_since)
        if waiting.any():
            since = np.maximum(self.unavailable_since[waiting], self._cycle_start_ms)
            self._cycle_unowned_ms += float(np.maximum(end_ms - since, 0.0).sum())
        return self._cycle_unowned_ms

    def _became_available(self, b: int, now_ms: float) -> float:
        since = self.unavailable_since[b]
        if math.isnan(since):
            return 0.0
        self.unavailable_since[b] = np.nan
        self.unowned_ms_total += now_ms - since
        self._cycle_unowned_ms += max(0.0, now_ms - max(since, self._cycle_start_ms))
        return now_ms - since

    def _unavailable(self, b: int, now_ms: float) -> None:
        if math.isnan(self.unavailable_since[b]):
            self.unavailable_since[b] = now_ms

    # ------------------------------------------------------------------ transitions

    def request_lookup(self, b: int, now_ms: float) -> None:
        """Clients want a ``Free`` bundle: it is placed at their lookup. The wait of a bundle that
        lost its owner counts from that loss; the first placement of a bundle that never had an
        owner (at the start, a new namespace) is no time *without* an owner."""
        self.lookup_pending[b] = True

    # ------------------------------------------------------------------ the table

    def broker_registered(self, broker: int, now_ms: float) -> None:
        """``broker`` (re)started: registered under a new session, acting again."""
        name = self.brokers[broker]
        self._sessions[name] = next(self._incarnations)
        self._down.discard(name)
        at = int(now_ms)
        for i in self.machine.handle(BrokersChanged(sessions=dict(self._sessions), at_ms=at)):
            self._apply_instruction(i, at)

    def broker_down(self, broker: int) -> None:
        """``broker`` stopped acting (a crash; still registered until its session expires)."""
        self._down.add(self.brokers[broker])

    def _write(self, writes: list[Write], at_ms: int) -> list[TableInstruction]:
        """Compare-and-set into the model store (all or nothing), then the machine sees the records."""
        for w in writes:
            assert self._versions.get(w.bundle, NO_NODE) == w.expected, f"lost race on {w.bundle}: {w}"
        if self.journal is not None:
            self.journal.extend(writes)
        changed: list[TableEvent] = []
        for w in writes:
            self._zxid += 1
            if w.record is None:
                self._versions.pop(w.bundle, None)
                changed.append(RecordChanged(bundle=w.bundle, record=None, at_ms=at_ms, zxid=self._zxid))
            else:
                version = self._versions.get(w.bundle, NO_NODE) + 1
                self._versions[w.bundle] = version
                changed.append(
                    RecordChanged(
                        bundle=w.bundle, record=w.record, stat_version=version, zxid=self._zxid, at_ms=at_ms
                    )
                )
        follow = list(self.machine.handle(*changed))
        for w in writes:
            self._sync(self._id_of(w.bundle))
        return follow

    def _id_of(self, name: str) -> int:
        if len(self._index) != len(self.bundle_names):
            self._index = {n: i for i, n in enumerate(self.bundle_names)}
        return self._index[name]

    def _sync(self, b: int) -> None:
        """The arrays of bundle ``b`` from its record."""
        record = self.machine.record(self.bundle_names[b])
        state = RecordState.INIT if record is None else record.state
        holder = None if record is None else record.holder()[0]
        mirror = {
            RecordState.OWNED: BundleState.OWNED,
            RecordState.SPLITTING: BundleState.OWNED,
            RecordState.RELEASING: BundleState.RELEASING,
            RecordState.ASSIGNING: BundleState.ASSIGNING,
            RecordState.DELETED: BundleState.DELETED,
        }.get(state, BundleState.FREE)
        self.state[b] = mirror
        self.owner[b] = (
            self.brokers.index(holder) if holder is not None and mirror != BundleState.FREE else -1
        )

    # ------------------------------------------------------------------ transitions

    def assign(
        self, b: int, broker: int, now_ms: float, cause: str = "lookup", detail: str = ""
    ) -> Move | None:
        """``broker`` now owns the bundle (placed at a lookup, or the end of a transfer).
        Returns the completed :class:`Move`, if it was one."""
        name, target, at = self.bundle_names[b], self.brokers[broker], int(now_ms)
        record = self.machine.record(name)
        if record is None or record.state is RecordState.FREE:
            w = self.machine.assign(name, target, at_ms=at, by="leader", reason=detail or cause)
            self._apply_writes([w], at)
        self._sync(b)
        assert self.state[b] == BundleState.OWNED and self.owner[b] == broker, self.machine.story(name)
        self.lookup_pending[b] = False
        waited = self._became_available(b, now_ms)
        source = int(self._released_from[b])
        if source < 0:
            return None
        release_cause = self._release_cause[b]
        flap = release_cause in BALANCER_CAUSES and now_ms - self._last_balancer_move[b] < self.grace_ms
        if release_cause in BALANCER_CAUSES:
            self._last_balancer_move[b] = now_ms
        move = Move(
            int(now_ms),
            name,
            self.brokers[source],
            target,
            release_cause,
            float(self._release_throughput[b]),
            int(waited),
            bool(flap),
            release_cause in ("shed", "transfer") and broker == source,
        )
        self._released_from[b] = -1
        self.moves.append(move)
        return move

    def _apply_writes(self, writes: list[Write], at_ms: int) -> None:
        # what the machine answers for the named brokers (a take, a commit) happens at once
        for i in self._write(writes, at_ms):
            self._apply_instruction(i, at_ms)

    def _apply_instruction(self, i: TableInstruction, at_ms: int) -> None:
        """Carry out an instruction for the brokers that are up, and what follows from it; the source's
        release step (``Release``) and serving are the simulation's to time and count."""
        pending = [i]
        while pending:
            j = pending.pop(0)
            if isinstance(j, Write):
                record = j.record
                if (
                    record is not None
                    and record.state is RecordState.OWNED
                    and record.dst in self._down
                    and not record.force
                ):
                    continue
                pending += [
                    k for k in self._write([j], at_ms) if isinstance(k, Write | CommitSplit | Reassign)
                ]
            elif isinstance(j, CommitSplit):
                writes = self.machine.split_commit(j.bundle, at_ms=at_ms)
                pending += [
                    k for k in self._write(writes, at_ms) if isinstance(k, Write | CommitSplit | Reassign)
                ]
            elif isinstance(j, Reassign):
                w = self.machine.override(
                    j.bundle, None, None, version=j.version, at_ms=at_ms, reason=j.reason
                )
                pending += [
                    k for k in self._write([w], at_ms) if isinstance(k, Write | CommitSplit | Reassign)
                ]

    def release(
        self, b: int, now_ms: float, cause: str, throughput: float, destination: int = -1, detail: str = ""
    ) -> None:
        """Start unloading (or transferring to ``destination``) an owned bundle."""
        source = int(self.owner[b])
        at = int(now_ms)
        w = self.machine.unload(
            self.bundle_names[b],
            self.brokers[destination] if destination >= 0 else None,
            at_ms=at,
            by=self.brokers[source],
            reason=detail or cause,
        )
        self._apply_writes([w], at)  # the source's release step is timed by the simulation
        self._sync(b)
        self._released_from[b] = source
        self._release_cause[b] = cause
        self._release_throughput[b] = throughput
        self._unavailable(b, now_ms)

    def release_done(self, b: int, now_ms: float) -> bool:
        """The source closed the bundle. Returns True if it is now being assigned to the
        transfer destination (then :meth:`assign` it), False if it is ``Free``."""
        name, at = self.bundle_names[b], int(now_ms)
        record = self.machine.record(name)
        assert record is not None and record.state is RecordState.RELEASING, self.machine.story(name)
        for i in self.machine.handle(Released(bundle=name, version=record.version, at_ms=at)):
            self._apply_instruction(i, at)
        record = self.machine.record(name)
        self._sync(b)
        if (
            record is not None
            and record.dst is not None
            and record.state in (RecordState.ASSIGNING, RecordState.OWNED)
        ):
            self.state[b] = BundleState.ASSIGNING
            self.owner[b] = self.brokers.index(record.dst)
            return True
        return False

    def owner_lost(self, bundles: Iterable[int], now_ms: float, throughput: np.ndarray) -> None:
        """The owner of ``bundles`` stopped serving (crash): they are unavailable from now on,
        though still Owned by it until its session expires."""
        for b in bundles:
            self._unavailable(int(b), now_ms)
            self._release_throughput[b] = throughput[b]

    def broker_lost(self, broker: int, now_ms: float, detail: str = "") -> list[int]:
        """The broker's session expired: the leader overrides what it held -- Owned by it, or
        Assigning to it, or its releases -- and frees it (the next lookup places it). Returns the
        bundle ids it owned or was taking."""
        lost = np.flatnonzero(
            (self.owner == broker) & np.isin(self.state, (BundleState.OWNED, BundleState.ASSIGNING))
        )
        at = int(now_ms)
        self._sessions.pop(self.brokers[broker], None)
        for i in self.machine.handle(BrokersChanged(sessions=dict(self._sessions), at_ms=at)):
            self._apply_instruction(i, at)
        for b in np.flatnonzero(self.owner == broker):
            self._sync(int(b))
        for b in lost:
            if self._released_from[b] < 0:
                self._released_from[b] = broker
                self._release_cause[b] = "failure"
            self.state[b] = BundleState.FREE
            self.owner[b] = -1
        return [int(b) for b in lost]

    def split(self, parent: int, children: list[int], now_ms: float, detail: str = "") -> None:
        """Split an owned bundle: the parent is ``Deleted``, the children ``Owned`` by its owner."""
        owner = int(self.owner[parent])
        at = int(now_ms)
        name = self.bundle_names[parent]
        child_names = [self.bundle_names[c] for c in children]
        w = self.machine.split(name, child_names, at_ms=at, by="leader", reason=detail or "split")
        self._apply_writes([w], at)  # the owner commits at once (ring and records)
        self._sync(parent)
        assert self.state[parent] == BundleState.DELETED, self.machine.story(name)
        self.lookup_pending[parent] = False
        self._became_available(parent, now_ms)
        for c in children:
            self._sync(c)
            assert self.state[c] == BundleState.OWNED and self.owner[c] == owner, self.machine.story(
                self.bundle_names[c]
            )

    def merge(
        self,
        parts: list[int],
        merged: int,
        now_ms: float,
        ring: tuple[str, ...],
        throughputs: list[float],
        detail: str = "",
    ) -> None:
        """Merge owned bundles: each part is unloaded and leaves the ring (``ring`` is the
        namespace's bundles after the merge; the parts' records are dropped with it); the merged
        bundle is ``Free``, waiting for a lookup.

        Its placement completes a move of cause ``merge`` from the owner of the busiest part
        (``throughputs``: each part's), carrying the parts' summed throughput."""
        at = int(now_ms)
        sources = [(t, int(self.owner[b])) for b, t in zip(parts, throughputs, strict=True)]
        for b in parts:
            name = self.bundle_names[b]
            w = self.machine.unload(
                name, at_ms=at, by=self.brokers[int(self.owner[b])], reason=detail or "merge"
            )
            self._apply_writes([w], at)
            record = self.machine.record(name)
            assert record is not None
            for i in self.machine.handle(Released(bundle=name, version=record.version, at_ms=at)):
                self._apply_instruction(i, at)
            self._apply_writes(
                [self.machine.tombstone(name, by="leader", reason=f"merged: {detail or 'merge'}")], at
            )
        merged_name = self.bundle_names[merged]
        if self.machine.record(merged_name) is not None:  # a range back in the ring: a new life
            self._apply_writes(
                [self.machine.tombstone(merged_name, by="leader", reason="back in the ring")], at
            )
        assert merged_name in ring
        for b in parts:
            self.state[b] = BundleState.DELETED
            self.owner[b] = -1
            self.lookup_pending[b] = False
            self._became_available(b, now_ms)
        self.state[merged] = BundleState.FREE
        self.owner[merged] = -1
        self._released_from[merged] = max(sources)[1]
        self._release_cause[merged] = "merge"
        self._release_throughput[merged] = sum(t for t, _ in sources)
        self._unavailable(merged, now_ms)
