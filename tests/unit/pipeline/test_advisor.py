"""The split/merge advisor: balanced splits that isolate hot topics, compared with Pulsar's algorithms."""

from __future__ import annotations

import numpy as np
import pytest

from brokerlb.errors import InvalidInputError
from brokerlb.pipeline.advisor import AdvisorOptions, BundleLimits, TopicLoads, plan_namespace
from brokerlb.plan import Plan
from brokerlb.ring import (
    BundleSplitOption,
    FlowOrQpsEquallyDivide,
    NamespaceBundles,
    RangeEquallyDivide,
    TopicCountEquallyDivide,
    TopicRates,
    topic_hash,
)
from brokerlb.testing import assert_ring_covers_keyspace

NS = "t/ns"
LAYOUT = NamespaceBundles.create(NS, 4)
FIRST = LAYOUT.bundles[0]


def topics_in(bundle, count, prefix="t"):
    names, i = [], 0
    while len(names) < count:
        name = f"persistent://{NS}/{prefix}{i}"
        if bundle.includes_hash(topic_hash(name)):
            names.append(name)
        i += 1
    return sorted(names, key=topic_hash)


def loads(names, rates, sessions=None):
    return TopicLoads.of(
        [topic_hash(n) for n in names], rates, [0.0] * len(names), sessions or [2.0] * len(names), names
    )


def children(points, bundle, names, rates):
    """(topics, msg rate) of each child of ``bundle`` split at ``points``."""
    edges = [bundle.lower, *points, bundle.upper]
    out = []
    for a, b in zip(edges, edges[1:], strict=False):
        inside = [
            (n, r)
            for n, r in zip(names, rates, strict=True)
            if a <= topic_hash(n) < b or topic_hash(n) == b == 0xFFFFFFFF
        ]
        out.append(([n for n, _ in inside], sum(r for _, r in inside)))
    return out


def hot_topic_bundle():
    """Worked example of the module docstring: 25 000 msg/s on one topic amid 20 topics at 1 000."""
    names = topics_in(FIRST, 21)
    hot = names[10]
    rates = [25_000.0 if n == hot else 1_000.0 for n in names]
    return names, rates, hot


def test_hot_topic_ends_up_alone_where_pulsars_algorithms_need_more_rounds():
    names, rates, hot = hot_topic_bundle()
    plan = plan_namespace(NS, LAYOUT.boundaries, loads(names, rates))
    (split,) = plan.splits
    ours = children(split.boundaries, FIRST, names, rates)
    assert [hot] in [kids for kids, _ in ours]
    assert max(rate for _, rate in ours) == 25_000.0  # nothing beside the hot topic
    assert all(rate <= 30_000 for _, rate in ours)
    assert split.unload and "hot topic(s) alone" in split.reason
    assert [k["topics"] for k in split.expected] == [len(k) for k, _ in ours]

    option = BundleSplitOption(
        FIRST, topics=names, topic_rates={n: TopicRates(r, 0.0) for n, r in zip(names, rates, strict=True)}
    )
    for algorithm in (RangeEquallyDivide(), TopicCountEquallyDivide(), FlowOrQpsEquallyDivide()):
        points = algorithm.split_boundaries(option)
        theirs = children(points, FIRST, names, rates)
        hot_child = next(kids for kids, _ in theirs if hot in kids)
        worst = max(rate for _, rate in theirs)
        assert len(hot_child) > 1, algorithm.name  # the hot topic shares its bundle...
        assert worst > max(rate for _, rate in ours), algorithm.name  # ...and the worst child is heavier


def test_many_small_topics_give_balanced_children_under_the_target():
    names = topics_in(FIRST, 200)
    rates = [375.0] * 200  # 75 000 msg/s: fill 2.5
    plan = plan_namespace(NS, LAYOUT.boundaries, loads(names, rates))
    (split,) = plan.splits
    kids = children(split.boundaries, FIRST, names, rates)
    assert len(kids) == 4  # ceil(2.5 / 0.8)
    assert max(r for _, r in kids) <= 0.8 * 30_000
    assert max(r for _, r in kids) - min(r for _, r in kids) <= 375.0  # as even as single topics allow
    assert sum(len(k) for k, _ in kids) == 200


def test_topic_count_limit_and_sessions_count_too():
    names = topics_in(FIRST, 2500)
    plan = plan_namespace(NS, LAYOUT.boundaries, loads(names, [0.0] * 2500, [0.0] * 2500))
    (split,) = plan.splits
    assert all(k["topics"] <= 800 for k in split.expected) and len(split.expected) == 4
    assert "topics 2500 > 1000" in split.reason
    busy = plan_namespace(NS, LAYOUT.boundaries, loads(names[:100], [0.0] * 100, [30.0] * 100))
    assert busy.splits and all(k["sessions"] <= 800 for k in busy.splits[0].expected)


def test_single_topic_bundle_cannot_be_split_and_says_so():
    (name,) = topics_in(FIRST, 1)
    plan = plan_namespace(NS, LAYOUT.boundaries, loads([name], [90_000.0]))
    assert not plan.splits
    assert any("partition the topic" in note and name in note for note in plan.advice["notes"])


def test_bundle_budget_limits_children_and_balances_them():
    names = topics_in(FIRST, 100)
    rates = [1_000.0] * 100  # fill 3.33: 5 children wanted
    limits = BundleLimits(max_bundles=5)  # 4 bundles now: one more allowed
    (split,) = plan_namespace(NS, LAYOUT.boundaries, loads(names, rates), limits).splits
    assert len(split.boundaries) == 1
    halves = [r for _, r in children(split.boundaries, FIRST, names, rates)]
    assert halves == [50_000.0, 50_000.0]
    at_max = plan_namespace(NS, LAYOUT.boundaries, loads(names, rates), BundleLimits(max_bundles=4))
    assert not at_max.splits and any("MaximumBundles" in n for n in at_max.advice["notes"])


def test_cold_adjacent_bundles_merge_within_limits():
    layout = NamespaceBundles.create(NS, 8)
    warm = layout.bundles[3]
    names = topics_in(warm, 5, "w")
    plan = plan_namespace(NS, layout.boundaries, loads(names, [3_000.0] * 5))  # fill 0.5 in bundle 3
    merged = [op.bundles for op in plan.merges]
    assert merged == [tuple(b.range for b in layout.bundles[:3]), tuple(b.range for b in layout.bundles[4:])]
    assert plan.advice["bundlesAfterPlan"] == 3 and plan.advice["coldBundles"] == 7
    kept = plan_namespace(
        NS, layout.boundaries, loads(names, [3_000.0] * 5), options=AdvisorOptions(min_bundles=6)
    )
    assert sum(len(op.bundles) - 1 for op in kept.merges) == 2


def test_a_namespace_keeps_a_bundle_per_eligible_broker():
    """Pulsar's default limits, a cold 4-bundle namespace on 3 brokers: merging it into one bundle
    leaves two brokers the namespace cannot use. The floor keeps 3 (and advises 3)."""
    layout = NamespaceBundles.create(NS, 4)
    names = [n for b in layout for n in topics_in(b, 2, f"c{b.lower}")]
    cold = loads(names, [10.0] * len(names))
    alone = plan_namespace(NS, layout.boundaries, cold)
    assert alone.advice["bundlesAfterPlan"] == 1 and alone.advice["advisedBundles"] == 1
    floor = plan_namespace(NS, layout.boundaries, cold, options=AdvisorOptions(brokers=3))
    assert floor.advice["bundlesAfterPlan"] == 3 and sum(len(op.bundles) - 1 for op in floor.merges) == 1
    assert floor.advice["advisedBundles"] == 3 and floor.advice["floor"] == 3
    more_brokers = plan_namespace(NS, layout.boundaries, cold, options=AdvisorOptions(brokers=5))
    assert not more_brokers.merges and more_brokers.advice["advisedBundles"] == 5


def test_merged_load_stays_under_merge_fill():
    layout = NamespaceBundles.create(NS, 4)
    names = [n for b in layout for n in topics_in(b, 1, f"c{b.lower}")]
    rates = [2_500.0] * 4  # each bundle at fill 0.083 (cold); two together 0.167
    plan = plan_namespace(NS, layout.boundaries, loads(names, rates), options=AdvisorOptions(merge_fill=0.2))
    assert [len(op.bundles) for op in plan.merges] == [2, 2]
    assert all(op.expected["fill"] <= 0.2 for op in plan.merges)


def test_plan_applies_to_the_layout_and_covers_the_ring():
    names, rates, _ = hot_topic_bundle()
    ns_plan = plan_namespace(NS, LAYOUT.boundaries, loads(names, rates))
    plan = Plan(tuple(ns_plan.splits) + tuple(ns_plan.merges))
    after = plan.apply_to({NS: LAYOUT})[NS]
    assert_ring_covers_keyspace(after)
    assert len(after) == ns_plan.advice["bundlesAfterPlan"]


def test_system_namespaces_are_left_alone():
    layout = NamespaceBundles.create("pulsar/system", 1)
    names = [f"persistent://pulsar/system/t{i}" for i in range(10)]
    plan = plan_namespace(
        "pulsar/system",
        layout.boundaries,
        TopicLoads.of([topic_hash(n) for n in names], [10_000.0] * 10, [0.0] * 10, [0.0] * 10),
    )
    assert not plan.splits and not plan.merges and "system namespace" in plan.advice["notes"][-1]


def test_disabled_limits_and_bad_options():
    limits = BundleLimits(max_topics=0, max_sessions=0, max_msg_rate=0, max_bandwidth_mbytes=0)
    assert np.isinf(limits.divisors()).all()
    with pytest.raises(InvalidInputError):
        AdvisorOptions(target_fill=1.5)
    with pytest.raises(InvalidInputError):
        AdvisorOptions(cold_fill=0.6, merge_fill=0.5)
