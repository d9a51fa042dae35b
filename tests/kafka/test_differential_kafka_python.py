"""Differential tests against kafka-python 3.0.12, an independent implementation.

Member-ordering and other reference quirks are handled explicitly in
:mod:`tests.kafka.kafka_python_ref` (static members first, sorted topics, the
arbitrary ``HashSet`` element made deterministic). The sticky assignors are
compared with ``constrained=False`` -- kafka-python runs the general algorithm for
every group, as Kafka 2.3-2.7 did; Java 2.8+'s fast path for equal subscriptions
is checked against the same balance and stickiness instead.
"""

from __future__ import annotations

import random

import pytest

from brokerlb.kafka.assignors import (
    CooperativeStickyAssignor,
    GroupSnapshot,
    Member,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    resolve_owners,
)
from brokerlb.kafka.checker import check_assignment, check_cooperative_round
from tests.kafka.groups import churn, random_group
from tests.kafka.kafka_python_ref import JoinMember, StubCluster, kafka_python_assign

GROUPS = 300


def _groups(seed: int, **kw) -> list[GroupSnapshot]:
    rng = random.Random(seed)
    return [random_group(rng, **kw) for _ in range(GROUPS)]


def _kp_roundrobin_needs_skip(group: GroupSnapshot) -> bool:
    """kafka-python 3.0.12's RoundRobin crashes (KeyError) whenever it must skip a member."""
    try:
        kafka_python_assign("roundrobin", group)
    except KeyError:
        return True
    return False


@pytest.mark.parametrize("seed", [1, 2])
def test_range_identical_to_kafka_python(seed):
    for group in _groups(seed, static=0.3, stale=0.2):
        ours = RangeAssignor().assign(group)
        assert ours.assignment == kafka_python_assign("range", group), group.to_json()
        check_assignment(group, ours.assignment, balance="per_topic")


@pytest.mark.parametrize("seed", [3, 4])
def test_roundrobin_identical_to_kafka_python(seed):
    compared = crashed = 0
    for group in _groups(seed, static=0.3):
        ours = RoundRobinAssignor().assign(group)
        check_assignment(
            group, ours.assignment, balance="count" if group.all_subscriptions_equal() else "none"
        )
        if _kp_roundrobin_needs_skip(group):
            crashed += 1
            assert not group.all_subscriptions_equal()
            continue
        assert ours.assignment == kafka_python_assign("roundrobin", group), group.to_json()
        compared += 1
    assert compared >= GROUPS // 2 and crashed > 0


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_sticky_general_identical_to_kafka_python(seed):
    for group in _groups(seed, stale=0.2):
        ours = StickyAssignor(constrained=False).assign(group)
        assert ours.assignment == kafka_python_assign("sticky", group), group.to_json()
        check_assignment(group, ours.assignment, balance="count")


@pytest.mark.parametrize("seed", [8, 9])
def test_cooperative_sticky_identical_to_kafka_python(seed):
    for group in _groups(seed, stale=0.2):
        ours = CooperativeStickyAssignor(constrained=False).assign(group)
        assert ours.assignment == kafka_python_assign("cooperative-sticky", group), group.to_json()
        check_cooperative_round(group, ours, balance="count")


def test_sticky_identical_over_successive_rebalances():
    """Members leave, join and resubscribe; each round starts from the previous answer."""
    rng = random.Random(10)
    rounds = 0
    for _ in range(40):
        group = random_group(rng, owned=0.0)
        for generation in range(1, 6):
            ours = StickyAssignor(constrained=False).assign(group)
            assert ours.assignment == kafka_python_assign("sticky", group), group.to_json()
            group = churn(rng, group, ours.assignment, generation)
            rounds += 1
    assert rounds == 200


def test_cooperative_rounds_converge_like_kafka_python():
    """Round 1 withholds moving partitions; the owners revoke; follow-up rounds finish the move.

    Each follow-up round re-runs the sticky algorithm on the new ownership, so it
    may pick further moves (Kafka behaves the same); every round must equal
    kafka-python's and the group must settle within a few rounds.
    """
    rng = random.Random(11)
    rounds_needed = []
    for _ in range(100):
        group = random_group(rng, owned=1.0)
        for rnd in range(1, 6):
            result = CooperativeStickyAssignor(constrained=False).assign(group)
            assert result.assignment == kafka_python_assign("cooperative-sticky", group), group.to_json()
            check_cooperative_round(group, result, balance="count")
            if not any(result.pending.values()):
                rounds_needed.append(rnd)
                break
            # members now own exactly this round's assignment (revoked partitions released)
            group = GroupSnapshot(
                {
                    mid: Member(mid, m.topics, tuple(result.assignment[mid]), rnd + 1)
                    for mid, m in group.members.items()
                },
                group.partitions,
            )
        else:
            raise AssertionError(f"cooperative rebalance did not settle in 5 rounds: {group.to_json()}")
    assert max(rounds_needed) <= 3 and rounds_needed.count(2) > rounds_needed.count(3)


def test_constrained_fast_path_is_as_balanced_and_as_sticky():
    """Java 2.8+'s quota algorithm for equal subscriptions vs the general one kafka-python runs."""
    rng = random.Random(12)
    for _ in range(GROUPS):
        group = random_group(rng, identical=1.0, owned=1.0)
        fast = StickyAssignor().assign(group)
        check_assignment(group, fast.assignment, balance="count")
        reference = kafka_python_assign("sticky", group)
        counts = sorted(len(tps) for tps in fast.assignment.values())
        assert counts == sorted(len(tps) for tps in reference.values())
        owner = resolve_owners(group).owner_of()
        kept_ref = sum(1 for m, tps in reference.items() for tp in tps if owner.get(tp) == m)
        kept_fast = sum(1 for m, tps in fast.assignment.items() for tp in tps if owner.get(tp) == m)
        assert kept_fast >= kept_ref, group.to_json()


def test_kafka_python_drops_interleaved_static_members():
    """Why the adapter hands members over static-first: kafka-python's groupby keeps the last run only."""
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    group = GroupSnapshot.from_json(
        {
            "members": {
                "a": {"topics": ["t"], "group_instance_id": "i1"},
                "b": {"topics": ["t"]},
                "c": {"topics": ["t"], "group_instance_id": "i2"},
            },
            "partitions": {"t": 6},
        }
    )
    sub = ConsumerProtocolSubscription(version=0, topics=["t"], user_data=b"")
    interleaved = [JoinMember("a", "i1", sub), JoinMember("b", None, sub), JoinMember("c", "i2", sub)]
    raw = RangePartitionAssignor.assign(StubCluster(group), interleaved)
    assert raw["a"].assigned_partitions == []  # member a silently gets nothing
    ours = RangeAssignor().assign(group).assignment
    assert [tp.partition for tp in ours["a"]] == [0, 1]  # i1 < i2 < dynamic, as Java's MemberInfo
    assert ours == kafka_python_assign("range", group)


def test_kafka_python_roundrobin_crashes_when_it_must_skip():
    group = GroupSnapshot.from_json(
        {
            "members": {
                "C0": {"topics": ["t0"]},
                "C1": {"topics": ["t0", "t1"]},
                "C2": {"topics": ["t0", "t1", "t2"]},
            },
            "partitions": {"t0": 1, "t1": 2, "t2": 3},
        }
    )
    assert _kp_roundrobin_needs_skip(group)
