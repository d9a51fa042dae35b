"""Split triggering: BundleSplitterTask and DefaultNamespaceBundleSplitStrategyImpl."""

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance.decisions import Label, Reason
from brokerlb.loadbalance.policies import NamespacePolicy
from brokerlb.loadbalance.split import SplitHitCounts, find_bundles_to_split
from brokerlb.loadbalance.split.bundle_splitter_task import find_bundles_to_split_modular
from brokerlb.loadbalance.split.default_split_strategy import find_bundles_to_split_extensible
from brokerlb.loadbalance.state import StrategyState
from brokerlb.loadbalance.view import ClusterView
from brokerlb.model import BundleData, LocalBrokerData, NamespaceBundleStats
from brokerlb.ring.bundles import NamespaceBundles
from brokerlb.testing import broker, bundle_data, bundle_stats, load_data

EXT_CONF = dict(
    loadBalancerNamespaceMaximumBundles=100,
    loadBalancerNamespaceBundleMaxTopics=100,
    loadBalancerNamespaceBundleMaxSessions=100,
    loadBalancerNamespaceBundleMaxMsgRate=100,
    loadBalancerNamespaceBundleMaxBandwidthMbytes=100,
    loadBalancerMaxNumberOfBundlesToSplitPerCycle=1,
    loadBalancerNamespaceBundleSplitConditionHitCountThreshold=3,
)
BUNDLE1 = "tenant/namespace/0x00000000_0xFFFFFFFF"
BUNDLE2 = "tenant/namespace/0x00000000_0x0FFFFFFF"


def _modular(last_stats, long_term, conf, count=1):
    reports = {"broker": LocalBrokerData(last_stats=last_stats)}
    histories = {}
    for bundle, rate in long_term.items():
        histories[bundle] = BundleData()
        histories[bundle].long_term_data.msg_rate_in = rate
        histories[bundle].long_term_data.msg_rate_out = 1
    return find_bundles_to_split_modular(reports, histories, lambda ns: count, conf)


def test_modular_skips_single_topic_bundles() -> None:
    """BundleSplitterTaskTest.testSplitTaskWhenTopicJustOne."""
    bundle = "ten/ns/0x00000000_0x80000000"
    decisions = _modular({bundle: NamespaceBundleStats(topics=1)}, {bundle: 30000}, ServiceConfig())
    assert [(d.label, d.reason) for d in decisions] == [(Label.SKIP, Reason.SINGLE_TOPIC)]


def test_modular_namespace_maximum_bundles() -> None:
    """BundleSplitterTaskTest.testLoadBalancerNamespaceMaximumBundles (namespace of 1 bundle)."""
    bundles = ["ten/ns/0x00000000_0x20000000", "ten/ns/0x20000000_0x40000000", "ten/ns/0x40000000_0x60000000"]
    conf = ServiceConfig(loadBalancerNamespaceMaximumBundles=3)
    decisions = _modular(
        {b: NamespaceBundleStats(topics=5) for b in bundles}, {b: 60000 for b in bundles}, conf
    )
    assert [d.is_split for d in decisions] == [True, True, False]
    assert decisions[0].boundaries == (0x10000000,) and decisions[0].reason is Reason.MSG_RATE
    assert decisions[2].reason is Reason.TOO_MANY_BUNDLES


def test_modular_uses_long_term_rates_and_reasons_in_order() -> None:
    conf = ServiceConfig()
    b = "t/n/0x00000000_0x80000000"
    many_sessions = NamespaceBundleStats(topics=5, consumer_count=900, producer_count=200, msg_rate_in=1e9)
    assert _modular({b: many_sessions}, {}, conf)[0].reason is Reason.SESSIONS
    # a huge current rate without long-term data does not split
    assert _modular({b: NamespaceBundleStats(topics=5, msg_rate_in=1e9)}, {}, conf) == []
    assert _modular({b: NamespaceBundleStats(topics=2000)}, {}, conf)[0].reason is Reason.TOPICS
    disabled = ServiceConfig(loadBalancerNamespaceBundleMaxSessions=0)
    assert _modular({b: many_sessions}, {}, disabled) == []


def test_modular_unsplittable_and_opaque_bundles() -> None:
    conf = ServiceConfig(loadBalancerNamespaceBundleMaxTopics=1)
    tiny = "t/n/0x00000005_0x00000006"
    [d] = _modular({tiny: NamespaceBundleStats(topics=5)}, {}, conf)
    assert (d.label, d.reason) == (Label.SKIP, Reason.INVALID_BUNDLE)
    [d] = _modular({"bundle-1": NamespaceBundleStats(topics=5)}, {}, conf)
    assert d.is_split and d.boundaries == ()
    topic_count = ServiceConfig(
        loadBalancerNamespaceBundleMaxTopics=1,
        defaultNamespaceBundleSplitAlgorithm="topic_count_equally_divide",
    )
    [d] = _modular({"t/n/0x00000000_0x80000000": NamespaceBundleStats(topics=5)}, {}, topic_count)
    assert d.is_split and d.boundaries == () and "topic list" in d.detail


def _extensible(state, stats, conf, owner="broker-1", splitting=(), count=0):
    return find_bundles_to_split_extensible(
        {"broker-1": stats},
        state,
        is_owner=lambda b, bundle: b == owner,
        splitting=splitting,
        bundle_count_of=lambda ns: count,
        conf=conf,
    )


def test_extensible_hit_counts_one_split_per_cycle() -> None:
    """DefaultNamespaceBundleSplitStrategyTest.testMaxMsgRate (and testMaxTopics alike)."""
    conf = ServiceConfig(**EXT_CONF)
    stats = {b: NamespaceBundleStats(topics=5, msg_rate_in=51, msg_rate_out=51) for b in (BUNDLE1, BUNDLE2)}
    state = SplitHitCounts()
    for cycle in range(5):
        splits = [(d.bundle, d.boundaries, d.reason) for d in _extensible(state, stats, conf) if d.is_split]
        if cycle == 3:
            assert splits == [(BUNDLE1, (0x7FFFFFFF,), Reason.MSG_RATE)]
        elif cycle == 4:
            assert splits == [(BUNDLE2, (0x07FFFFFF,), Reason.MSG_RATE)]
        else:
            assert splits == []
    assert SplitHitCounts.from_json(state.to_json()) == state


def test_extensible_reasons() -> None:
    conf = ServiceConfig(**dict(EXT_CONF, loadBalancerNamespaceBundleSplitConditionHitCountThreshold=0))
    cases = {
        Reason.TOPICS: NamespaceBundleStats(topics=101),
        Reason.SESSIONS: NamespaceBundleStats(topics=5, producer_count=51, consumer_count=51),
        Reason.BANDWIDTH: NamespaceBundleStats(
            topics=5, msg_throughput_in=50 * 2**20 + 1, msg_throughput_out=50 * 2**20 + 1
        ),
    }
    for reason, stats in cases.items():
        [d] = _extensible(SplitHitCounts(), {BUNDLE1: stats}, conf)
        assert d.is_split and d.reason is reason


def test_extensible_skips() -> None:
    """testNotEnoughTopics, testNamespaceMaximumBundles, testNoBundleOwner, testSplittingBundle, testEmptyBundleStats."""
    conf = ServiceConfig(**dict(EXT_CONF, loadBalancerNamespaceBundleSplitConditionHitCountThreshold=0))
    hot = {b: NamespaceBundleStats(topics=5, msg_rate_in=101) for b in (BUNDLE1, BUNDLE2)}
    assert [d.is_split for d in _extensible(SplitHitCounts(), hot, conf)] == [True]
    one_topic = {b: NamespaceBundleStats(topics=1, msg_rate_in=101) for b in (BUNDLE1, BUNDLE2)}
    assert {d.reason for d in _extensible(SplitHitCounts(), one_topic, conf)} == {Reason.SINGLE_TOPIC}
    assert {d.reason for d in _extensible(SplitHitCounts(), hot, conf, count=100)} == {
        Reason.TOO_MANY_BUNDLES
    }
    assert {d.reason for d in _extensible(SplitHitCounts(), hot, conf, owner="other")} == {Reason.NOT_OWNED}
    assert {d.reason for d in _extensible(SplitHitCounts(), hot, conf, splitting=[BUNDLE1])} == {
        Reason.SPLITTING
    }
    assert _extensible(SplitHitCounts(), {}, conf) == []


def test_extensible_needs_exactly_one_boundary() -> None:
    conf = ServiceConfig(
        **dict(
            EXT_CONF,
            loadBalancerNamespaceBundleSplitConditionHitCountThreshold=0,
            defaultNamespaceBundleSplitAlgorithm="flow_or_qps_equally_divide",
        )
    )
    [d] = _extensible(SplitHitCounts(), {BUNDLE1: NamespaceBundleStats(topics=5, msg_rate_in=101)}, conf)
    assert (d.label, d.reason) == (Label.FAILURE, Reason.UNKNOWN)


def test_extensible_forgets_bundles_and_brokers_that_stop_reporting() -> None:
    conf = ServiceConfig(**EXT_CONF)
    state = SplitHitCounts()
    hot = {BUNDLE1: NamespaceBundleStats(topics=5, msg_rate_in=101)}
    _extensible(state, hot, conf)
    assert state.counts == {"broker-1": {BUNDLE1: 1}}
    _extensible(state, {}, conf)
    assert state.counts == {"broker-1": {}}
    find_bundles_to_split_extensible(
        {}, state, is_owner=lambda b, x: True, splitting=(), bundle_count_of=lambda ns: 0, conf=conf
    )
    assert state.counts == {}


def test_find_bundles_to_split_on_a_view() -> None:
    bundle = "t/n/0x00000000_0x80000000"
    view = ClusterView(
        load_data=load_data([broker("b1:8080", bundles={bundle: bundle_stats(topics=2000)})]),
        namespace_policies={"t/n": NamespacePolicy(bundles=NamespaceBundles.create("t/n", 2))},
    )
    result = find_bundles_to_split(view, StrategyState())
    assert [(d.bundle, d.boundaries) for d in result.splits] == [(bundle, (0x40000000,))]
    assert result.stats["splits"] == 1
    off = view.with_overrides({"loadBalancerAutoBundleSplitEnabled": "false"})
    result = find_bundles_to_split(off, StrategyState())
    assert result.decisions == () and result.stats["skipped"] == "Disabled"
    full = view.with_overrides({"loadBalancerNamespaceMaximumBundles": "2"})
    assert find_bundles_to_split(full, StrategyState()).decisions[0].reason is Reason.TOO_MANY_BUNDLES


def test_extensible_state_carries_across_calls_in_a_state_object() -> None:
    bundle = "t/n/0x00000000_0x80000000"
    view = ClusterView(
        config=ServiceConfig(loadBalancerNamespaceBundleMaxTopics=10),
        load_data=load_data(
            [broker("b1:8080", bundles={bundle: bundle_stats(topics=20)})],
            bundles={bundle: bundle_data(topics=20)},
        ),
    )
    state = StrategyState()
    name = "org.apache.pulsar.broker.loadbalance.extensions.strategy.DefaultNamespaceBundleSplitStrategyImpl"
    results = [find_bundles_to_split(view, state, name) for _ in range(4)]
    assert [len(r.splits) for r in results] == [0, 0, 0, 1]
    assert [r.decisions[0].reason for r in results[:3]] == [Reason.HIT_COUNT] * 3
