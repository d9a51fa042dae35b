import json
import random

import pytest

from brokerlb.errors import InvalidInputError, UnknownStrategyError
from brokerlb.kafka.assignors import (
    ASSIGNORS,
    CooperativeStickyAssignor,
    GroupSnapshot,
    Member,
    RangeAssignor,
    RebalanceProtocol,
    RoundRobinAssignor,
    StickyAssignor,
    TopicPartition,
    get_assignor,
    range_for_position,
    resolve_owners,
)
from brokerlb.kafka.checker import check_assignment, check_cooperative_round
from tests.kafka.groups import churn, random_group


def tps(spec: str) -> list[TopicPartition]:
    """'t0p0 t1p2' -> [TopicPartition('t0', 0), TopicPartition('t1', 2)]"""
    out = []
    for item in spec.split():
        topic, part = item.rsplit("p", 1)
        out.append(TopicPartition(topic, int(part)))
    return sorted(out)


def group(members: dict, partitions: dict) -> GroupSnapshot:
    return GroupSnapshot.from_json({"members": members, "partitions": partitions})


# --------------------------------------------------------------------------- Range


def test_range_javadoc_example():
    g = group({"C0": {"topics": ["t0", "t1"]}, "C1": {"topics": ["t0", "t1"]}}, {"t0": 3, "t1": 3})
    result = RangeAssignor().assign(g)
    assert result.assignment == {"C0": tps("t0p0 t0p1 t1p0 t1p1"), "C1": tps("t0p2 t1p2")}
    assert result.moved == 0 and RangeAssignor.protocol is RebalanceProtocol.EAGER


@pytest.mark.parametrize("partitions, consumers", [(10, 3), (3, 5), (7, 7), (1, 1), (100, 7)])
def test_range_formula_of_kafka(partitions, consumers):
    ranges = [range_for_position(partitions, consumers, pos) for pos in range(consumers)]
    flat = [p for r in ranges for p in r]
    assert flat == list(range(partitions))  # contiguous, in order, each once
    sizes = [len(r) for r in ranges]
    assert sizes == sorted(sizes, reverse=True) and max(sizes) - min(sizes) <= 1


def test_range_orders_static_members_first():
    g = group(
        {
            "a": {"topics": ["t"]},
            "z": {"topics": ["t"], "group_instance_id": "host-b"},
            "m": {"topics": ["t"], "group_instance_id": "host-a"},
        },
        {"t": 3},
    )
    assert RangeAssignor().assign(g).assignment == {"a": tps("tp2"), "z": tps("tp1"), "m": tps("tp0")}


def test_range_orders_member_ids_as_java_strings():
    # U+FF21 (fullwidth A) sorts before U+1F600 by code point (Python), after it in Java, whose
    # UTF-16 form of U+1F600 starts with the surrogate 0xD83D < 0xFF21
    g = GroupSnapshot(
        {"\U0001f600": Member("\U0001f600", ("t",)), "\uff21": Member("\uff21", ("t",))}, {"t": 2}
    )
    assert sorted(g.members) == ["\uff21", "\U0001f600"]
    assert RangeAssignor().assign(g).assignment == {"\U0001f600": tps("tp0"), "\uff21": tps("tp1")}


def test_range_reports_moves_and_revocations():
    g = group({"C0": {"topics": ["t"], "owned": {"t": [0, 1, 2, 3]}}, "C1": {"topics": ["t"]}}, {"t": 4})
    result = RangeAssignor().assign(g)
    assert result.moved == 2 and result.revoked == {"C0": tps("tp2 tp3"), "C1": []}
    assert result.to_json()["revoked"] == {"C0": {"t": [2, 3]}}


# --------------------------------------------------------------------------- RoundRobin


def test_roundrobin_javadoc_examples():
    g = group({"C0": {"topics": ["t0", "t1"]}, "C1": {"topics": ["t0", "t1"]}}, {"t0": 3, "t1": 3})
    assert RoundRobinAssignor().assign(g).assignment == {
        "C0": tps("t0p0 t0p2 t1p1"),
        "C1": tps("t0p1 t1p0 t1p2"),
    }
    g = group(
        {"C0": {"topics": ["t0"]}, "C1": {"topics": ["t0", "t1"]}, "C2": {"topics": ["t0", "t1", "t2"]}},
        {"t0": 1, "t1": 2, "t2": 3},
    )
    assert RoundRobinAssignor().assign(g).assignment == {
        "C0": tps("t0p0"),
        "C1": tps("t1p0"),
        "C2": tps("t1p1 t2p0 t2p1 t2p2"),
    }


# --------------------------------------------------------------------------- Sticky


def test_sticky_javadoc_example_1_member_leaves():
    subs = ["t0", "t1", "t2", "t3"]
    parts = {t: 2 for t in subs}
    fresh = StickyAssignor().assign(group({c: {"topics": subs} for c in ("C0", "C1", "C2")}, parts))
    check_assignment(
        group({c: {"topics": subs} for c in ("C0", "C1", "C2")}, parts), fresh.assignment, balance="count"
    )
    # C1 leaves; the javadoc's previous assignment:
    g = group(
        {
            "C0": {"topics": subs, "owned": {"t0": [0], "t1": [1], "t3": [0]}, "generation": 1},
            "C2": {"topics": subs, "owned": {"t1": [0], "t2": [1]}, "generation": 1},
        },
        parts,
    )
    legacy = StickyAssignor(constrained=False).assign(g)
    assert legacy.assignment == {"C0": tps("t0p0 t1p1 t3p0 t2p0"), "C2": tps("t1p0 t2p1 t0p1 t3p1")}
    fast = StickyAssignor().assign(g)
    assert fast.moved == legacy.moved == 0  # both keep every previous assignment
    check_assignment(g, fast.assignment, balance="count")


def test_sticky_javadoc_example_2():
    members = {"C0": {"topics": ["t0"]}, "C1": {"topics": ["t0", "t1"]}, "C2": {"topics": ["t0", "t1", "t2"]}}
    parts = {"t0": 1, "t1": 2, "t2": 3}
    first = StickyAssignor().assign(group(members, parts))
    assert first.assignment == {"C0": tps("t0p0"), "C1": tps("t1p0 t1p1"), "C2": tps("t2p0 t2p1 t2p2")}
    # C0 leaves: sticky keeps all 5 remaining assignments
    owned = {
        "C1": {"topics": members["C1"]["topics"], "owned": {"t1": [0, 1]}, "generation": 1},
        "C2": {"topics": members["C2"]["topics"], "owned": {"t2": [0, 1, 2]}, "generation": 1},
    }
    second = StickyAssignor().assign(group(owned, parts))
    assert second.assignment == {"C1": tps("t1p0 t1p1 t0p0"), "C2": tps("t2p0 t2p1 t2p2")}
    assert second.moved == 0


def test_constrained_quota_example():
    g = group({"A": {"topics": ["t0"], "owned": {"t0": [0, 1, 2]}}, "B": {"topics": ["t0"]}}, {"t0": 3})
    result = StickyAssignor().assign(g)
    assert result.assignment == {"A": tps("t0p0 t0p1"), "B": tps("t0p2")}
    assert result.moved == 1 and result.revoked == {"A": tps("t0p2"), "B": []}


def test_constrained_spreads_topics_when_keeping_owned():
    # owned partitions are kept sorted by (partition, topic): A keeps t0p0 and t1p0, not t0p0 and t0p1
    g = group(
        {"A": {"topics": ["t0", "t1"], "owned": {"t0": [0, 1], "t1": [0, 1]}}, "B": {"topics": ["t0", "t1"]}},
        {"t0": 2, "t1": 2},
    )
    assert StickyAssignor().assign(g).assignment["A"] == tps("t0p0 t1p0")


def test_generation_rules():
    # same generation claims -> nobody owns it; a newer generation beats an older one
    g = group(
        {
            "A": {"topics": ["t"], "owned": {"t": [0, 1]}, "generation": 5},
            "B": {"topics": ["t"], "owned": {"t": [0]}, "generation": 5},
            "C": {"topics": ["t"], "owned": {"t": [1, 2]}, "generation": 4},
        },
        {"t": 3},
    )
    owners = resolve_owners(g)
    assert owners.multi_owned == {TopicPartition("t", 0)}
    assert owners.owner_of() == {TopicPartition("t", 1): "A", TopicPartition("t", 2): "C"}
    assert owners.previous_owner[TopicPartition("t", 1)] == ("C", 4)
    result = CooperativeStickyAssignor().assign(g)
    check_cooperative_round(g, result, balance="count")
    assert TopicPartition("t", 0) in [
        tp for p in result.pending.values() for tp in p
    ]  # both claimants revoke


def _fewest_moves_possible(g: GroupSnapshot) -> int:
    """Equal subscriptions: owned partitions that must change owner in any balanced assignment."""
    owned = resolve_owners(g).owned
    total = sum(n for n in g.partitions_per_topic().values())
    n = len(g.members)
    min_q, extra = total // n, total % n
    counts = sorted((len(tps) for tps in owned.values()), reverse=True)
    kept = sum(min(c, min_q + (1 if i < extra else 0)) for i, c in enumerate(counts))
    return sum(counts) - kept


def test_sticky_is_sticky_over_many_rebalances():
    rng = random.Random(3)
    checked = 0
    for _ in range(60):
        g = random_group(rng, owned=0.0, identical=0.5)
        for gen in range(1, 5):
            result = StickyAssignor().assign(g)
            check_assignment(g, result.assignment, balance="count")
            check_assignment(g, StickyAssignor(constrained=False).assign(g).assignment, balance="count")
            if g.all_subscriptions_equal():
                assert result.moved == _fewest_moves_possible(g), g.to_json()
                checked += 1
            g = churn(rng, g, result.assignment, gen)
    assert checked > 50


# --------------------------------------------------------------------------- CooperativeSticky


def test_cooperative_two_rounds_example():
    g = group(
        {"A": {"topics": ["t0"], "owned": {"t0": [0, 1]}, "generation": 1}, "B": {"topics": ["t0"]}},
        {"t0": 2},
    )
    round1 = CooperativeStickyAssignor().assign(g)
    assert round1.assignment == {"A": tps("t0p0"), "B": []}
    assert round1.pending == {"A": [], "B": tps("t0p1")} and round1.revoked["A"] == tps("t0p1")
    assert round1.to_json()["pending"] == {"B": {"t0": [1]}}
    g2 = group(
        {"A": {"topics": ["t0"], "owned": {"t0": [0]}, "generation": 2}, "B": {"topics": ["t0"]}}, {"t0": 2}
    )
    round2 = CooperativeStickyAssignor().assign(g2)
    assert round2.assignment == {"A": tps("t0p0"), "B": tps("t0p1")} and round2.moved == 0
    assert CooperativeStickyAssignor.protocol is RebalanceProtocol.COOPERATIVE


def test_cooperative_rounds_never_double_assign():
    rng = random.Random(4)
    for _ in range(200):
        g = random_group(rng, owned=1.0, stale=0.3)
        for assignor in (CooperativeStickyAssignor(), CooperativeStickyAssignor(constrained=False)):
            check_cooperative_round(g, assignor.assign(g), balance="count")


# --------------------------------------------------------------------------- model, registry


def test_registry():
    assert set(ASSIGNORS) == {
        "range",
        "roundrobin",
        "sticky",
        "cooperative-sticky",
        "load-aware",
        "uniform",
        "range-server",
    }
    assert get_assignor("sticky", constrained=False).constrained is False
    with pytest.raises(UnknownStrategyError, match="known: range"):
        get_assignor("optimal")


def test_empty_and_unsubscribed():
    empty = GroupSnapshot({}, {"t": 3})
    for name in ASSIGNORS:
        assert get_assignor(name).assign(empty).assignment == {}
    g = group({"A": {"topics": ["missing"]}, "B": {"topics": ["t"]}}, {"t": 2, "other": 4})
    for name in ASSIGNORS:
        result = get_assignor(name).assign(g)
        assert result.target() == {"A": [], "B": tps("tp0 tp1")}


def test_json_round_trip():
    data = {
        "members": {
            "a": {"topics": ["t1", "t0"], "owned": {"t0": [2, 0]}, "generation": 3, "group_instance_id": "h"}
        },
        "partitions": {"t0": 3, "t1": 1},
        "rates": {"t0": [1, 2.5, 0]},
    }
    g = GroupSnapshot.from_json(data)
    assert g.members["a"].topics == ("t0", "t1") and g.members["a"].owned == tuple(tps("t0p0 t0p2"))
    assert GroupSnapshot.from_json(json.loads(json.dumps(g.to_json()))) == g


@pytest.mark.parametrize(
    "data, message",
    [
        ([], "must be a JSON object"),
        ({"members": {}, "partitions": {}, "extra": 1}, "unknown key"),
        ({"members": {"a": {"topics": "t0"}}, "partitions": {}}, "list of topic names"),
        ({"members": {"a": {"topics": ["bad topic"]}}, "partitions": {}}, "invalid topic name 'bad topic'"),
        ({"members": {"a": {"topics": ["t"], "owned": {"t": [0, 0]}}}, "partitions": {"t": 1}}, "twice"),
        (
            {"members": {"a": {"topics": ["t"], "owned": {"t": [-1]}}}, "partitions": {"t": 1}},
            "integers >= 0",
        ),
        ({"members": {"a": {"topics": ["t"], "owns": {}}}, "partitions": {"t": 1}}, "unknown key"),
        ({"members": {"a": {"topics": ["t"], "generation": "1"}}, "partitions": {"t": 1}}, "generation"),
        ({"members": {}, "partitions": {"t": 0}}, "must be an integer >= 1"),
        ({"members": {}, "partitions": {"t": 2}, "rates": {"t": [1]}}, "list of 2 numbers"),
        ({"members": {}, "partitions": {"t": 1}, "rates": {"t": [float("nan")]}}, "finite"),
        ({"members": {}, "partitions": {"t": 1}, "rates": {"u": [1]}}, "not in 'partitions'"),
        ({"members": {"": {"topics": []}}, "partitions": {}}, "non-empty strings"),
    ],
)
def test_bad_group_json_is_refused_clearly(data, message):
    with pytest.raises(InvalidInputError, match=message):
        GroupSnapshot.from_json(data)
