import random

import pytest

from brokerlb.errors import InvalidConfigError
from brokerlb.kafka.assignors import (
    GroupSnapshot,
    LoadAwareAssignor,
    RangeAssignor,
    StickyAssignor,
    TopicPartition,
    member_loads,
    partition_rates,
)
from brokerlb.kafka.checker import check_assignment, check_cooperative_round
from tests.kafka.groups import random_group


def _group(members, partitions, rates=None):
    data = {"members": members, "partitions": partitions}
    if rates:
        data["rates"] = rates
    return GroupSnapshot.from_json(data)


def test_docstring_example_hot_partition():
    g = _group({"A": {"topics": ["t0"]}, "B": {"topics": ["t0"]}}, {"t0": 5}, {"t0": [10, 1, 1, 1, 1]})
    target = LoadAwareAssignor().assign(g).target()
    assert target == {"A": [TopicPartition("t0", 0)], "B": [TopicPartition("t0", p) for p in range(1, 5)]}
    rates = partition_rates(g)
    assert member_loads(target, rates) == {"A": 10.0, "B": 4.0}
    assert member_loads(RangeAssignor().assign(g).assignment, rates) == {"A": 12.0, "B": 2.0}


def test_without_rates_it_balances_counts():
    g = _group({m: {"topics": ["t"]} for m in "ABC"}, {"t": 10})
    counts = sorted(len(v) for v in LoadAwareAssignor().assign(g).target().values())
    assert counts == [3, 3, 4]


def test_missing_topic_rates_get_the_mean():
    g = _group({"A": {"topics": ["t", "u"]}}, {"t": 2, "u": 2}, {"t": [1.0, 3.0]})
    assert partition_rates(g)[TopicPartition("u", 1)] == 2.0


def test_sticky_when_already_balanced_and_hysteresis():
    g = _group(
        {
            "A": {"topics": ["t"], "owned": {"t": [0, 1]}, "generation": 1},
            "B": {"topics": ["t"], "owned": {"t": [2, 3]}, "generation": 1},
        },
        {"t": 4},
        {"t": [5.0, 5.0, 4.9, 5.0]},
    )
    result = LoadAwareAssignor().assign(g)
    assert result.moved == 0 and not any(result.pending.values())
    skewed = _group(
        {
            "A": {"topics": ["t"], "owned": {"t": [0, 1, 2]}, "generation": 1},
            "B": {"topics": ["t"], "owned": {"t": [3]}, "generation": 1},
        },
        {"t": 4},
        {"t": [5.0, 5.0, 5.0, 5.0]},
    )
    moved = LoadAwareAssignor().assign(skewed)
    assert moved.moved == 1 and sum(len(v) for v in moved.pending.values()) == 1  # cooperative: withheld
    eager = LoadAwareAssignor(cooperative=False).assign(skewed)
    assert eager.moved == 1 and not any(eager.pending.values())


def test_respects_subscriptions():
    g = _group(
        {"A": {"topics": ["hot"]}, "B": {"topics": ["cold"]}},
        {"hot": 3, "cold": 3},
        {"hot": [10, 10, 10], "cold": [1, 1, 1]},
    )
    target = LoadAwareAssignor().assign(g).target()
    assert all(tp.topic == "hot" for tp in target["A"]) and all(tp.topic == "cold" for tp in target["B"])


def test_random_groups_pass_the_load_checker():
    rng = random.Random(21)
    better = 0
    for _ in range(300):
        g = random_group(rng, rates=1.0, owned=0.5)
        assignor = LoadAwareAssignor()
        result = assignor.assign(g)
        rates = partition_rates(g)
        check_cooperative_round(g, result, balance="load", rates=rates, tolerance=assignor.tolerance_for(g))
        sticky = StickyAssignor().assign(g).assignment
        if (
            max(member_loads(result.target(), rates).values())
            <= max(member_loads(sticky, rates).values()) + 1e-9
        ):
            better += 1
    assert better >= 270  # the max member load is at most sticky's in (nearly) every group


def test_successive_rebalances_move_little():
    rng = random.Random(22)
    for _ in range(40):
        g = random_group(rng, rates=1.0, owned=0.0, identical=1.0)
        first = LoadAwareAssignor(cooperative=False).assign(g)
        again = LoadAwareAssignor(cooperative=False).assign(_owned_as(g, first.assignment))
        assert again.moved == 0, g.to_json()  # same members, same rates: nothing moves
        check_assignment(
            g,
            again.assignment,
            balance="load",
            rates=partition_rates(g),
            tolerance=LoadAwareAssignor().tolerance_for(g),
        )


def _owned_as(g: GroupSnapshot, assignment):
    from brokerlb.kafka.assignors import Member

    return GroupSnapshot(
        {m: Member(m, g.members[m].topics, tuple(assignment[m]), 1) for m in g.members}, g.partitions, g.rates
    )


def test_bad_config():
    with pytest.raises(InvalidConfigError, match="tolerance_ratio"):
        LoadAwareAssignor(tolerance_ratio=1.5)
