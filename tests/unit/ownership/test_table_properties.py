"""The ownership machine under any interleaving: many brokers with lagging views of one table.

A model of the metadata store (records changed only by compare-and-set on their version, the
namespace's bundles, the registry's sessions, the leader's epoch) and three brokers, each running
its own :class:`~brokerlb.ownership.machine.OwnershipMachine` fed the store's changes in order but
late. Hypothesis interleaves lookups, unloads and transfers, splits, merges, session losses (a
broker frozen past its session comes back under a new one), leader changes and time. After every
step:

* the store: a bundle has a live record (not Deleted) exactly when it is in the ring -- so no reader
  ever sees a parent and a child both owned;
* serving: no two brokers serve overlapping ranges at once (split parents and children included) --
  a broker serves what its machine says, and only while its session is alive;

and at the end, once every broker has caught up and the leader's monitor ran past the in-flight
bound, nothing is in flight and every bundle of the ring is owned by a live broker's live session
or free.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerlb.errors import InvalidTransitionError
from brokerlb.ownership import BundleState
from brokerlb.ownership.events import (
    NO_NODE,
    BrokersChanged,
    CommitSplit,
    LeadershipChanged,
    Reassign,
    ReassignFailed,
    RecordChanged,
    Release,
    Released,
    SessionChanged,
    StartServing,
    StopServing,
    TableInstruction,
    Tick,
    Write,
)
from brokerlb.ownership.machine import OwnershipMachine
from brokerlb.ownership.record import OwnershipRecord

S = BundleState
NS = "t/ns"
BROKERS = ("b1", "b2", "b3")
TIMEOUT = 30_000
FULL = (0x00000000, 0xFFFFFFFF)


def name(lo: int, hi: int) -> str:
    return f"{NS}/0x{lo:08x}_0x{hi:08x}"


def bounds(bundle: str) -> tuple[int, int]:
    lo, hi = bundle.rpartition("/")[2].split("_")
    return int(lo, 16), int(hi, 16)


def overlap(a: str, b: str) -> bool:
    (a0, a1), (b0, b1) = bounds(a), bounds(b)
    return a0 < b1 and b0 < a1


def halves(bundle: str) -> tuple[str, str]:
    lo, hi = bounds(bundle)
    mid = lo + (hi - lo) // 2
    return name(lo, mid), name(mid, hi)


@dataclass
class Broker:
    id: str
    session: int
    alive: bool = True
    machine: OwnershipMachine = field(default_factory=OwnershipMachine)
    inbox: deque[RecordChanged] = field(default_factory=deque)
    todo: deque[TableInstruction] = field(default_factory=deque)
    serving: set[str] = field(default_factory=set)


class Cluster:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.now = 0
        self.zxid = 0
        self.store: dict[str, tuple[OwnershipRecord, int, int]] = {}
        self.ring: list[str] = [name(*FULL)]
        self.epoch = 1
        self.sessions = 100
        self.brokers = {b: Broker(b, self._session()) for b in BROKERS}
        self.leader = "b1"
        for b in self.brokers.values():
            b.machine = OwnershipMachine(
                me=b.id, in_flight_timeout_ms=TIMEOUT, tombstone_delay_ms=10 * TIMEOUT
            )
            self._feed(b, SessionChanged(session=b.session, at_ms=0))
        self._registry_changed()
        self._feed(self.brokers[self.leader], LeadershipChanged(leading=True, at_ms=0))

    def _session(self) -> int:
        self.sessions += 1
        return self.sessions

    # ------------------------------------------------------------------ the store
    def registry(self) -> dict[str, int]:
        return {b.id: b.session for b in self.brokers.values() if b.alive}

    def _registry_changed(self) -> None:
        for b in self.brokers.values():
            if b.alive:
                self._feed(b, BrokersChanged(sessions=self.registry(), at_ms=self.now))

    def cas(
        self,
        writes: list[Write],
        *,
        epoch: int | None = None,
        ring: list[str] | None = None,
        ring_was: list[str] | None = None,
    ) -> bool:
        """All of ``writes`` (and the ring change) or nothing."""
        if epoch is not None and epoch != self.epoch:
            return False
        if ring_was is not None and ring_was != self.ring:
            return False
        for w in writes:
            stored = self.store.get(w.bundle)
            if (stored[1] if stored else NO_NODE) != w.expected:
                return False
        for w in writes:
            self.zxid += 1
            if w.record is None:
                del self.store[w.bundle]
            else:
                stored = self.store.get(w.bundle)
                self.store[w.bundle] = (w.record, stored[1] + 1 if stored else 0, self.zxid)
            for b in self.brokers.values():
                rec = self.store.get(w.bundle)
                b.inbox.append(
                    RecordChanged(
                        bundle=w.bundle,
                        record=rec[0] if rec else None,
                        stat_version=rec[1] if rec else NO_NODE,
                        zxid=self.zxid,
                        at_ms=self.now,
                    )
                )
        if ring is not None:
            self.ring = ring
        return True

    # ------------------------------------------------------------------ brokers
    def _feed(self, b: Broker, *events) -> None:
        for instruction in b.machine.handle(*events):
            if isinstance(instruction, StartServing):
                b.serving.add(instruction.bundle)
            elif isinstance(instruction, StopServing):
                b.serving.discard(instruction.bundle)
            else:
                b.todo.append(instruction)
        self.check_serving()

    def run(self, b: Broker) -> None:
        """The broker catches up and does what it has to (a few rounds)."""
        for _ in range(4):
            self.deliver(b, len(b.inbox))
            while b.todo:
                self.act(b)

    def deliver(self, b: Broker, count: int = 1) -> None:
        for _ in range(count):
            if not b.inbox:
                return
            ev = b.inbox.popleft()
            self._feed(
                b,
                RecordChanged(
                    bundle=ev.bundle,
                    record=ev.record,
                    stat_version=ev.stat_version,
                    zxid=ev.zxid,
                    at_ms=self.now,
                ),
            )

    def act(self, b: Broker) -> None:
        if not b.todo:
            return
        i = b.todo.popleft()
        leader_epoch = self.epoch if b.id == self.leader else -1
        if isinstance(i, Write):
            r = i.record
            if r is not None and r.dst == b.id and r.dst_session not in (None, b.session):
                return  # made under an earlier session: the shell drops it
            if b.alive:
                self.cas([i])
        elif isinstance(i, Release):
            self._feed(b, Released(bundle=i.bundle, version=i.version, at_ms=self.now))
        elif isinstance(i, CommitSplit):
            try:
                writes = b.machine.split_commit(i.bundle, at_ms=self.now)
            except InvalidTransitionError:
                return
            ring = self.ring
            if i.bundle not in ring:
                return
            k = ring.index(i.bundle)
            if b.alive:
                self.cas(writes, ring=[*ring[:k], *i.children, *ring[k + 1 :]], ring_was=list(ring))
        elif isinstance(i, Reassign):
            machine = b.machine
            choices = [x for x in self.registry() if x != i.exclude]
            target = i.keep_on or (self.rng.choice(choices) if choices else None)
            try:
                w = machine.override(
                    i.bundle,
                    target,
                    self.registry().get(target) if target else None,
                    version=i.version,
                    at_ms=self.now,
                )
            except InvalidTransitionError:
                self._feed(b, ReassignFailed(bundle=i.bundle, at_ms=self.now))
                return
            if not (b.alive and self.cas([w], epoch=leader_epoch)):
                self._feed(b, ReassignFailed(bundle=i.bundle, at_ms=self.now))

    # ------------------------------------------------------------------ the leader's moves
    def lead(self, kind: str, pick: int, arg: int) -> None:
        b = self.brokers[self.leader]
        m = b.machine
        if arg < 4:  # the leader's view is usually up to date; sometimes it lags
            self.deliver(b, len(b.inbox))
        bundles = sorted(set(self.ring) | set(m.bundles()))
        bundle = bundles[pick % len(bundles)]
        target = BROKERS[arg % len(BROKERS)]
        try:
            if kind == "assign":
                writes = [m.assign(bundle, target, at_ms=self.now)]
                ring_was = None
                ring = None
            elif kind == "unload":
                writes = [m.unload(bundle, target if arg % 2 else None, at_ms=self.now)]
                ring_was = ring = None
            elif kind == "split":
                if bounds(bundle)[1] - bounds(bundle)[0] < 0x3FFFFFFF:
                    return
                writes = [m.split(bundle, halves(bundle), at_ms=self.now)]
                ring_was = ring = None
            else:  # merge two adjacent halves of one parent into it, when one broker owns both
                lo, hi = bounds(bundle)
                parent_span = (hi - lo) * 2
                if parent_span > 0x100000000 or lo % parent_span:
                    return
                left, right = bundle, name(hi, min(hi + (hi - lo), 0xFFFFFFFF))
                merged = name(lo, bounds(right)[1])
                if halves(merged) != (left, right):
                    return
                writes = m.merge_commit([left, right], merged, at_ms=self.now)
                ring_was = list(self.ring)
                if left not in ring_was or right not in ring_was:
                    return
                k = ring_was.index(left)
                ring = [*ring_was[:k], merged, *ring_was[k + 2 :]]
        except InvalidTransitionError:
            return
        if kind == "assign" and bundle not in self.ring:
            return  # the lookup's ring guard
        if b.alive:
            self.cas(writes, epoch=self.epoch, ring=ring, ring_was=ring_was)

    # ------------------------------------------------------------------ faults and time
    def expire(self, which: int) -> None:
        b = self.brokers[BROKERS[which % len(BROKERS)]]
        if not b.alive:
            return
        b.alive = False  # frozen past its session: it serves nothing (its session is not known alive)
        self._registry_changed()
        if b.id == self.leader:
            self.elect()

    def recover(self, which: int) -> None:
        b = self.brokers[BROKERS[which % len(BROKERS)]]
        if b.alive:
            return
        b.alive = True
        b.session = self._session()
        self._feed(b, SessionChanged(session=b.session, at_ms=self.now))
        self._registry_changed()
        if not self.brokers[self.leader].alive or not self.brokers[self.leader].machine.leading:
            self.elect()

    def elect(self) -> None:
        alive = [x for x in BROKERS if self.brokers[x].alive]
        old = self.brokers[self.leader]
        self._feed(old, LeadershipChanged(leading=False, at_ms=self.now))
        if not alive:
            return
        self.leader = self.rng.choice(alive)
        self.epoch += 1
        self._feed(self.brokers[self.leader], LeadershipChanged(leading=True, at_ms=self.now))

    def tick(self, dt: int) -> None:
        # watches reach a live session well within the in-flight bound: everything older is delivered
        for b in self.brokers.values():
            if b.alive:
                self.deliver(b, len(b.inbox))
        self.now += dt
        self._feed(self.brokers[self.leader], Tick(at_ms=self.now))

    # ------------------------------------------------------------------ invariants
    def check_store(self) -> None:
        ring = set(self.ring)
        for bundle, (record, _v, _z) in self.store.items():
            if record.state is S.DELETED:
                assert bundle not in ring, f"{bundle} is Deleted but in the ring"
            else:
                assert bundle in ring, f"{bundle} is {record} but not in the ring {sorted(ring)}"
        for a in self.ring:
            for b in self.ring:
                assert a == b or not overlap(a, b), "the ring overlaps itself"

    def check_serving(self) -> None:
        served = [(b.id, x) for b in self.brokers.values() if b.alive for x in b.serving]
        for i, (b1, x1) in enumerate(served):
            for b2, x2 in served[i + 1 :]:
                assert b1 == b2 or not overlap(x1, x2), f"{b1} serves {x1} while {b2} serves {x2}"

    def settle(self) -> None:
        for b in self.brokers.values():
            self.recover(BROKERS.index(b.id))
        for _round in range(60):
            for b in self.brokers.values():
                self.deliver(b, len(b.inbox))
                while b.todo:
                    self.act(b)
                    self.deliver(b, len(b.inbox))
            if not any(b.inbox or b.todo for b in self.brokers.values()):
                self.tick(TIMEOUT)
                if not any(b.inbox or b.todo for b in self.brokers.values()):
                    break
        live = self.registry()
        for bundle, (record, _v, _z) in self.store.items():
            assert not record.in_flight, f"{bundle} still {record}"
            if record.state is S.OWNED:
                assert live.get(record.dst) == record.dst_session, (
                    f"{bundle} {record} is an orphan; live {live}"
                )


step = st.one_of(
    st.tuples(st.just("deliver"), st.integers(0, 2), st.integers(1, 4)),
    st.tuples(st.just("act"), st.integers(0, 2), st.integers(1, 3)),
    st.tuples(st.just("run"), st.integers(0, 2), st.just(0)),
    st.tuples(st.sampled_from(["assign", "unload", "split", "merge"]), st.integers(0, 7), st.integers(0, 5)),
    st.tuples(st.just("expire"), st.integers(0, 2), st.just(0)),
    st.tuples(st.just("recover"), st.integers(0, 2), st.just(0)),
    st.tuples(st.just("elect"), st.just(0), st.just(0)),
    st.tuples(st.just("tick"), st.integers(1, 40_000), st.just(0)),
)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow], report_multiple_bugs=False
)
@given(st.lists(step, min_size=1, max_size=80), st.integers(0, 1000))
def test_any_interleaving_keeps_ownership_single_and_ends_every_move(steps, seed):
    c = Cluster(seed)
    for kind, a, n in steps:
        if kind == "deliver":
            c.deliver(c.brokers[BROKERS[a]], n)
        elif kind == "run":
            c.run(c.brokers[BROKERS[a]])
        elif kind == "act":
            for _ in range(n):
                c.act(c.brokers[BROKERS[a]])
        elif kind == "expire":
            c.expire(a)
        elif kind == "recover":
            c.recover(a)
        elif kind == "elect":
            c.elect()
        elif kind == "tick":
            c.tick(a)
        else:
            c.lead(kind, a, n)
        c.check_store()
        c.check_serving()
    c.settle()
    c.check_store()
    c.check_serving()


def play(c: Cluster, kind: str, a: int, n: int) -> None:
    if kind == "deliver":
        c.deliver(c.brokers[BROKERS[a]], n)
    elif kind == "run":
        c.run(c.brokers[BROKERS[a]])
    elif kind == "act":
        for _ in range(n):
            c.act(c.brokers[BROKERS[a]])
    elif kind == "expire":
        c.expire(a)
    elif kind == "recover":
        c.recover(a)
    elif kind == "elect":
        c.elect()
    elif kind == "tick":
        c.tick(a)
    else:
        c.lead(kind, a, n)
    c.check_store()
    c.check_serving()


WEIGHTS = {
    "deliver": 20,
    "act": 20,
    "run": 15,
    "assign": 10,
    "unload": 8,
    "split": 6,
    "merge": 6,
    "expire": 2,
    "recover": 3,
    "elect": 1,
    "tick": 3,
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32))
def test_long_random_walks_keep_ownership_single_and_end_every_move(seed):
    """Longer walks than the shrinking test reaches: hundreds of moves, splits and merges."""
    rng = random.Random(seed)
    c = Cluster(seed)
    kinds = list(WEIGHTS)
    moves = {"split": 0, "merge": 0}
    for _ in range(600):
        kind = rng.choices(kinds, weights=[WEIGHTS[k] for k in kinds])[0]
        a = (
            rng.randrange(40_000)
            if kind == "tick"
            else rng.randrange(8 if kind in ("assign", "unload", "split", "merge") else 3)
        )
        before = len(c.ring)
        play(c, kind, a, rng.randrange(6))
        if len(c.ring) > before:
            moves["split"] += 1
        elif len(c.ring) < before:
            moves["merge"] += 1
    c.settle()
    c.check_store()
    c.check_serving()
