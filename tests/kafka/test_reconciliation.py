"""KIP-848 reconciliation, logic level: the pure coordinator driven by simulated members on explicit time.

Every step is checked: the coordinator never lets two members hold a partition, no partition is
*used* by two members at any instant (each simulated member uses a partition from when it starts
until it drops it or its lease ends, even while stalled), and after settling every partition is
owned and the target is the assignor's balanced answer (the shared checker).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerlb.errors import InvalidConfigError
from brokerlb.kafka.assignors import TopicPartition, get_assignor
from brokerlb.kafka.checker import check_reconciliation_step
from brokerlb.kafka.reconciliation import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    ConsumerGroupCoordinator,
    HeartbeatError,
    HeartbeatRequest,
    MemberLease,
    MemberState,
)
from brokerlb.testing.invariants import InvariantViolation

T = TopicPartition
SESSION = 3.0
REBALANCE = 1.0
INTERVAL = 0.25


def tps(*names: str) -> frozenset[TopicPartition]:
    return frozenset(T(n.rsplit("-", 1)[0], int(n.rsplit("-", 1)[1])) for n in names)


def test_docstring_example_a_revokes_before_b_gets():
    c = ConsumerGroupCoordinator("g", session_timeout_s=SESSION, heartbeat_interval_s=INTERVAL)
    c.set_partitions({"t0": 4})
    a = c.heartbeat(HeartbeatRequest("A", JOIN_EPOCH, ("t0",)), 0.0)
    assert (a.member_epoch, a.assignment, a.state) == (
        1,
        tps("t0-0", "t0-1", "t0-2", "t0-3"),
        MemberState.STABLE,
    )
    b = c.heartbeat(HeartbeatRequest("B", JOIN_EPOCH, ("t0",)), 0.1)
    assert c.group_epoch == 2 and b.state is MemberState.UNRELEASED_PARTITIONS and b.assignment == frozenset()
    a = c.heartbeat(HeartbeatRequest("A", 1, owned=tps("t0-0", "t0-1", "t0-2", "t0-3")), 0.2)
    assert (
        a.state is MemberState.UNREVOKED_PARTITIONS
        and a.member_epoch == 1
        and a.assignment == tps("t0-0", "t0-1")
    )
    b = c.heartbeat(HeartbeatRequest("B", 2), 0.3)
    assert b.assignment == frozenset()  # A has not revoked yet
    a = c.heartbeat(HeartbeatRequest("A", 1, owned=tps("t0-0", "t0-1")), 0.4)
    assert (a.state, a.member_epoch) == (MemberState.STABLE, 2)
    b = c.heartbeat(HeartbeatRequest("B", 2), 0.5)
    assert (b.state, b.assignment) == (MemberState.STABLE, tps("t0-2", "t0-3")) and c.is_stable()


def test_errors_fencing_and_leaving():
    c = ConsumerGroupCoordinator("g", session_timeout_s=SESSION, heartbeat_interval_s=INTERVAL)
    c.set_partitions({"t0": 2})
    assert c.heartbeat(HeartbeatRequest("X", 5), 0.0).error is HeartbeatError.UNKNOWN_MEMBER_ID
    a = c.heartbeat(HeartbeatRequest("A", JOIN_EPOCH, ("t0",), rebalance_timeout_s=REBALANCE), 0.0)
    assert (
        c.heartbeat(HeartbeatRequest("A", a.member_epoch + 7), 0.1).error
        is HeartbeatError.FENCED_MEMBER_EPOCH
    )
    assert "A" not in c.members and not c.holder
    a = c.heartbeat(HeartbeatRequest("A", JOIN_EPOCH, ("t0",), rebalance_timeout_s=REBALANCE), 0.2)
    c.heartbeat(HeartbeatRequest("B", JOIN_EPOCH, ("t0",), rebalance_timeout_s=REBALANCE), 0.3)
    a2 = c.heartbeat(HeartbeatRequest("A", a.member_epoch, owned=a.assignment), 0.4)
    assert a2.state is MemberState.UNREVOKED_PARTITIONS
    assert c.tick(0.4 + REBALANCE / 2) == []
    fenced = c.tick(0.4 + REBALANCE + 0.01)
    assert [(f.member_id, f.reason.split(" (")[0]) for f in fenced] == [("A", "rebalance timeout")]
    b = c.heartbeat(HeartbeatRequest("B", c.members["B"].member_epoch), 1.5)
    assert b.assignment == tps("t0-0", "t0-1")  # freed by the fencing
    assert c.heartbeat(HeartbeatRequest("B", LEAVE_EPOCH), 1.6).member_epoch == LEAVE_EPOCH
    assert c.members == {} and c.holder == {}
    with pytest.raises(InvalidConfigError):
        ConsumerGroupCoordinator("g", session_timeout_s=1.0, heartbeat_interval_s=2.0)


def test_session_timeout_fences_a_silent_member():
    c = ConsumerGroupCoordinator("g", session_timeout_s=SESSION, heartbeat_interval_s=INTERVAL)
    c.set_partitions({"t0": 2})
    c.heartbeat(HeartbeatRequest("A", JOIN_EPOCH, ("t0",)), 0.0)
    assert c.tick(SESSION) == []
    assert [f.member_id for f in c.tick(SESSION + 0.01)] == ["A"] and c.group_epoch == 2


def test_lease_counts_from_send_times():
    lease = MemberLease(session_timeout_s=SESSION, rebalance_timeout_s=REBALANCE)
    owned = tps("t-0", "t-1")
    assert lease.deadline() == float("-inf")  # nothing answered yet: nothing leased
    lease.sending(0, 9.0, frozenset())
    lease.answered(0, owned)
    assert lease.deadline() == 9.0 + SESSION
    lease.sending(1, 10.0, owned)
    assert lease.deadline() == 10.0 + REBALANCE  # unanswered: a timer may have started
    lease.sending(2, 10.5, owned)
    lease.answered(2, tps("t-0"))  # covers 1 and 2: the revocation counts from 10.0, for everything
    assert lease.deadline() == 10.0 + REBALANCE and lease.expired(11.0) and not lease.expired(10.9)
    lease.answered(1, owned)  # an older answer changes nothing
    assert lease.deadline() == 10.0 + REBALANCE
    lease.sending(3, 10.6, tps("t-0"))  # revoked t-1; the ack is unanswered: still bounded
    assert lease.deadline() == 10.0 + REBALANCE
    lease.answered(3, tps("t-0"))
    assert lease.deadline() == 10.6 + SESSION


# --------------------------------------------------------------------------- simulation


@dataclass
class SimMember:
    member_id: str
    subscription: tuple[str, ...]
    epoch: int = JOIN_EPOCH
    owned: set[TopicPartition] = field(default_factory=set)
    since: dict[TopicPartition, float] = field(default_factory=dict)
    lease: MemberLease = field(default_factory=lambda: MemberLease(SESSION, REBALANCE))
    seq: int = 0
    stalled: bool = False
    inbox: list = field(default_factory=list)
    resubscribe: bool = True


@dataclass
class Sim:
    coordinator: ConsumerGroupCoordinator
    now: float = 0.0
    members: dict[str, SimMember] = field(default_factory=dict)
    #: closed usage intervals (partition, member, start, end)
    used: list[tuple[TopicPartition, str, float, float]] = field(default_factory=list)

    def drop(self, m: SimMember, tps, ends: dict | None = None) -> None:
        end = min(self.now, m.lease.deadline())  # nobody uses a partition past its lease
        for tp in list(tps):
            if tp in m.owned:
                m.owned.discard(tp)
                start = m.since.pop(tp)
                self.used.append((tp, m.member_id, start, max(end, start)))

    def check_lease(self, m: SimMember) -> None:
        if m.owned and m.lease.expired(self.now):  # lost its lease: stopped using them then; rejoin
            self.drop(m, list(m.owned))
            m.epoch, m.inbox = JOIN_EPOCH, []
            m.lease.reset()

    def heartbeat(self, m: SimMember) -> None:
        if m.stalled:
            return
        self.check_lease(m)
        m.seq += 1
        m.lease.sending(m.seq, self.now, m.owned)
        sub = m.subscription if (m.epoch == JOIN_EPOCH or m.resubscribe) else None
        m.resubscribe = False
        request = HeartbeatRequest(m.member_id, m.epoch, sub, frozenset(m.owned), REBALANCE)
        response = self.coordinator.heartbeat(request, self.now)
        self.check_coordinator()
        m.inbox.append((m.seq, response))
        self.deliver(m)

    def deliver(self, m: SimMember) -> None:
        if m.stalled:
            return
        self.check_lease(m)
        for seq, r in m.inbox:
            if r.error is not None:
                self.drop(m, list(m.owned))
                m.epoch = JOIN_EPOCH
                m.lease.reset()
                continue
            before = frozenset(m.owned)
            m.lease.answered(seq, r.assignment)
            m.epoch = r.member_epoch
            self.drop(m, before - r.assignment)
            for tp in sorted(r.assignment - before):
                m.owned.add(tp)
                m.since[tp] = self.now
        m.inbox = []
        self.check_usage()

    def check_coordinator(self) -> None:
        c = self.coordinator
        check_reconciliation_step(c.snapshot(), c.holdings(), settled=False)
        for mid, rec in c.members.items():  # a member reconciled to the target holds only target partitions
            if rec.member_epoch == c.target_epoch and rec.state is not MemberState.UNREVOKED_PARTITIONS:
                assert rec.assigned <= c.target.get(mid, frozenset())

    def in_use(self) -> dict[TopicPartition, list[str]]:
        users: dict[TopicPartition, list[str]] = {}
        for m in self.members.values():
            for tp in m.owned:
                if m.lease.deadline() > self.now:
                    users.setdefault(tp, []).append(m.member_id)
        return users

    def check_usage(self) -> None:
        for tp, users in self.in_use().items():
            if len(users) > 1:
                raise InvariantViolation(f"{tp} used by {users} at {self.now}")

    def check_intervals(self) -> None:
        spans = self.used + [
            (tp, m.member_id, m.since[tp], float("inf")) for m in self.members.values() for tp in m.owned
        ]
        by_tp: dict[TopicPartition, list[tuple[float, float, str]]] = {}
        for tp, mid, start, end in spans:
            by_tp.setdefault(tp, []).append((start, end, mid))
        for tp, lst in by_tp.items():
            reach, holder = float("-inf"), None  # the latest end so far, and whose
            for start, end, mid in sorted(lst):
                if start < reach and mid != holder:
                    raise InvariantViolation(
                        f"{tp}: {holder} (until {reach}) overlaps {mid} [{start}, {end})"
                    )
                if end > reach:
                    reach, holder = end, mid

    def advance(self, dt: float) -> None:
        self.now += dt
        fenced = self.coordinator.tick(self.now)
        if fenced:
            self.check_coordinator()
        self.check_usage()

    def settle(self) -> None:
        for m in self.members.values():
            m.stalled = False
            self.deliver(m)
        for _ in range(200):
            for mid in sorted(self.members):
                self.heartbeat(self.members[mid])
            self.advance(INTERVAL / 4)
            if self.coordinator.is_stable() and all(
                m.epoch == self.coordinator.target_epoch for m in self.members.values()
            ):
                break
        c = self.coordinator
        assert c.is_stable(), "did not settle"
        check_reconciliation_step(c.snapshot(), c.holdings(), settled=True, assignor=c.assignor)
        for mid, m in self.members.items():
            assert m.owned == set(c.members[mid].assigned)
        self.check_intervals()


TOPICS = ["a", "b", "c"]
event = st.one_of(
    st.tuples(st.just("heartbeat"), st.integers(0, 5)),
    st.tuples(st.just("advance"), st.sampled_from([0.05, 0.2, 0.6, 1.2, 3.5])),
    st.tuples(st.just("join"), st.integers(0, 5)),
    st.tuples(st.just("leave"), st.integers(0, 5)),
    st.tuples(st.just("stall"), st.integers(0, 5)),
    st.tuples(st.just("resume"), st.integers(0, 5)),
    st.tuples(st.just("resubscribe"), st.integers(0, 1 << 20)),
    st.tuples(st.just("partitions"), st.integers(0, 1 << 20)),
)


@pytest.mark.parametrize("assignor", ["uniform", "range-server"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(event, min_size=1, max_size=40), seed=st.integers(0, 1 << 20))
def test_random_event_sequences_keep_single_ownership_and_settle(assignor, events, seed):
    rng = random.Random(seed)
    c = ConsumerGroupCoordinator(
        "g", get_assignor(assignor), session_timeout_s=SESSION, heartbeat_interval_s=INTERVAL
    )
    c.set_partitions({"a": 4, "b": 2, "c": 3})
    sim = Sim(c)
    for i in range(2):
        sim.members[f"m{i}"] = SimMember(f"m{i}", tuple(TOPICS))
    joined = 0
    for kind, arg in events:
        ids = sorted(sim.members)
        if kind == "heartbeat" and ids:
            sim.heartbeat(sim.members[ids[arg % len(ids)]])
        elif kind == "advance":
            sim.advance(arg)
        elif kind == "join" and len(ids) < 5:
            joined += 1  # member ids are never reused (Kafka's clients generate a fresh one per process)
            mid = f"m{joined}-{arg}"
            sim.members[mid] = SimMember(mid, tuple(sorted(rng.sample(TOPICS, rng.randint(1, 3)))))
        elif kind == "leave" and ids:
            m = sim.members.pop(ids[arg % len(ids)])
            if not m.stalled:
                sim.drop(m, list(m.owned))
                c.heartbeat(HeartbeatRequest(m.member_id, LEAVE_EPOCH), sim.now)
            else:  # a crashed member: it stops using its partitions when its lease ends
                for tp in list(m.owned):
                    start = m.since.pop(tp)
                    sim.used.append((tp, m.member_id, start, max(start, m.lease.deadline())))
            sim.check_coordinator()
        elif kind == "stall" and ids:
            sim.members[ids[arg % len(ids)]].stalled = True
        elif kind == "resume" and ids:
            m = sim.members[ids[arg % len(ids)]]
            m.stalled = False
            sim.deliver(m)
        elif kind == "resubscribe" and ids:
            m = sim.members[ids[arg % len(ids)]]
            m.subscription = tuple(sorted(rng.sample(TOPICS, rng.randint(1, 3))))
            m.resubscribe = True
        elif kind == "partitions":
            topic = TOPICS[arg % 3]
            counts = dict(c.partitions)
            if counts[topic] < 8:
                counts[topic] += 1 + arg % 2
                c.set_partitions(counts)
    sim.settle()
