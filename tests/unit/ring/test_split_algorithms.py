import pytest

from brokerlb import NamespaceBundles
from brokerlb.errors import InvalidSplitError, UnknownStrategyError
from brokerlb.ring import (
    BundleSplitOption,
    TopicRates,
    get_split_algorithm,
    resolve_split_algorithm,
    topic_hash,
)

NS = "t/ns"


def full():
    return NamespaceBundles.create(NS, 1).bundles[0]


def topics_in(bundle, n, prefix="topic"):
    out, i = [], 0
    while len(out) < n:
        name = f"persistent://{NS}/{prefix}-{i}"
        if bundle.includes_hash(topic_hash(name)):
            out.append(name)
        i += 1
    return out


def test_range_equally_divide():
    algo = get_split_algorithm("range_equally_divide")
    assert algo.split_boundaries(BundleSplitOption(full())) == [0x7FFFFFFF]
    quarter = NamespaceBundles.create(NS, 2).bundles[0]
    assert algo.split_boundaries(BundleSplitOption(quarter)) == [0x40000000]


def test_topic_count_equally_divide_rule():
    algo = get_split_algorithm("topic_count_equally_divide")
    b = full()
    names = topics_in(b, 5)
    h = sorted(topic_hash(n) for n in names)
    start, end = h[1], h[2]  # n=5: h[max(5//2-1,0)] = h[1], h[5//2] = h[2]
    assert algo.split_boundaries(BundleSplitOption(b, topics=names)) == [start + (end - start) // 2]
    assert algo.split_boundaries(BundleSplitOption(b, topics=names[:1])) is None
    assert algo.split_boundaries(BundleSplitOption(b, topics=[])) is None


def test_topic_count_ignores_topics_outside_and_duplicates():
    algo = get_split_algorithm("topic_count_equally_divide")
    nb = NamespaceBundles.create(NS, 4)
    b = nb.bundles[1]
    inside = topics_in(b, 2)
    outside = topics_in(nb.bundles[0], 3)
    assert algo.split_boundaries(BundleSplitOption(b, topics=inside[:1] + outside + inside[:1])) is None
    two = algo.split_boundaries(BundleSplitOption(b, topics=inside + outside))
    h = sorted(topic_hash(n) for n in inside)
    assert two == [h[0] + (h[1] - h[0]) // 2]


def test_specified_positions():
    algo = get_split_algorithm("specified_positions_divide")
    b = NamespaceBundles.create(NS, 2).bundles[0]
    names = topics_in(b, 2)
    opt = BundleSplitOption(b, topics=names, positions=[0x90000000, 0x30000000, 0x10000000, 0])
    assert algo.split_boundaries(opt) == [0x10000000, 0x30000000]
    assert algo.split_boundaries(BundleSplitOption(b, topics=names, positions=[0x90000000])) is None
    # a bundle with one topic is not split (Pulsar's check), unless forced
    one = BundleSplitOption(b, topics=names[:1], positions=[0x10000000])
    assert algo.split_boundaries(one) is None
    assert resolve_split_algorithm("specified_positions_divide_force").split_boundaries(one) == [0x10000000]
    with pytest.raises(InvalidSplitError, match="can't be empty"):
        algo.split_boundaries(BundleSplitOption(b, topics=names, positions=[]))


def test_flow_or_qps_below_limits_is_noop():
    algo = get_split_algorithm("flow_or_qps_equally_divide")
    b = full()
    names = topics_in(b, 10)
    rates = {n: TopicRates(1000, 1_000_000) for n in names}
    assert algo.split_boundaries(BundleSplitOption(b, topics=names, topic_rates=rates)) is None


def test_flow_or_qps_cuts_with_plus_one():
    algo = get_split_algorithm("flow_or_qps_equally_divide")
    b = full()
    names = topics_in(b, 6)
    by_hash = sorted(names, key=topic_hash)
    # each topic 12,000 msg/s: two fit under 30,000, a third would not
    rates = {n: TopicRates(12_000, 1.0) for n in names}
    cuts = algo.split_boundaries(BundleSplitOption(b, topics=names, topic_rates=rates))
    h = [topic_hash(n) for n in by_hash]
    assert cuts == [h[1] + (h[2] - h[1]) // 2 + 1, h[3] + (h[4] - h[3]) // 2 + 1]
    # a hot topic alone over the limit gets cut on both sides
    rates[by_hash[2]] = TopicRates(40_000, 1.0)
    cuts = algo.split_boundaries(BundleSplitOption(b, topics=names, topic_rates=rates))
    assert cuts == [
        h[1] + (h[2] - h[1]) // 2 + 1,
        h[2] + (h[3] - h[2]) // 2 + 1,
        h[4] + (h[5] - h[4]) // 2 + 1,
    ]


def test_flow_or_qps_ignores_idle_topics_and_needs_two_busy():
    algo = get_split_algorithm("flow_or_qps_equally_divide")
    b = full()
    names = topics_in(b, 3)
    rates = {names[0]: TopicRates(100_000, 0), names[1]: TopicRates(0, 0)}
    assert algo.split_boundaries(BundleSplitOption(b, topics=names, topic_rates=rates)) is None


def test_unknown_algorithm_named():
    with pytest.raises(UnknownStrategyError, match="'halves'"):
        get_split_algorithm("halves")
    with pytest.raises(UnknownStrategyError):
        get_split_algorithm("flow_or_qps_equally_divide", supported=["range_equally_divide"])


def test_lenient_resolution_like_pulsar():
    assert resolve_split_algorithm(None).name == "range_equally_divide"
    assert (
        resolve_split_algorithm("nope", default="topic_count_equally_divide").name
        == "topic_count_equally_divide"
    )
    assert resolve_split_algorithm("nope", default="also-nope").name == "range_equally_divide"


def test_split_boundaries_by_pulsar_name_with_the_inputs_as_keywords():
    from brokerlb.ring import split_boundaries

    full = "t/ns/0x00000000_0xffffffff"
    assert split_boundaries("range_equally_divide", full) == [0x7FFFFFFF]
    # the force variant skips the topic-count check, the plain one needs two topics
    assert split_boundaries("specified_positions_divide", full, positions=[0x10]) is None
    assert split_boundaries("specified_positions_divide_force", full, positions=[0x10]) == [0x10]
    with pytest.raises(UnknownStrategyError, match="no_such_divide"):
        split_boundaries("no_such_divide", full)
