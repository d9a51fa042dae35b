"""Properties of placement and split on random clusters (hypothesis).

* placement returns a broker the filters allow -- or none, with a reason; the same seed gives
  the same answer;
* split never splits a bundle with fewer than two topics, one its broker does not own, one
  that passes no threshold, or beyond the namespace's bundle cap; boundaries fall inside the range.
"""

from __future__ import annotations

import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance.broker_lookup import BrokerLookupData
from brokerlb.loadbalance.decisions import Reason
from brokerlb.loadbalance.placement import select_broker_for_assignment
from brokerlb.loadbalance.placement.isolation import apply_namespace_policies
from brokerlb.loadbalance.policies import AutoFailoverPolicy, NamespaceIsolationData, NamespacePolicy
from brokerlb.loadbalance.split import find_bundles_to_split
from brokerlb.loadbalance.split.thresholds import SplitThresholds, range_bounds
from brokerlb.loadbalance.state import StrategyState, new_rng
from brokerlb.loadbalance.view import ClusterView
from brokerlb.ring.bundles import NamespaceBundles
from brokerlb.testing import broker, broker_load, bundle_stats, load_data

MODULAR_LM = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
EXTENSIBLE_LM = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
STRATEGIES = [
    "LeastLongTermMessageRate",
    "LeastResourceUsageWithWeight",
    "RoundRobinBrokerSelector",
    "org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight",
]
NAMESPACES = ["t/a", "t/b", "u/c"]
RANGES = ["0x00000000_0x40000000", "0x40000000_0x80000000", "0x80000000_0xffffffff"]
BUNDLES = [f"{ns}/{r}" for ns in NAMESPACES for r in RANGES]


@st.composite
def clusters(draw):
    n = draw(st.integers(0, 6))
    names = [f"b{i}:8080" for i in range(n)]
    reports = []
    for name in names:
        held = draw(st.lists(st.sampled_from(BUNDLES), max_size=4, unique=True))
        reports.append(
            broker(
                name,
                cpu=draw(st.floats(0, 100)),
                bandwidth_in=draw(st.floats(0, 100)),
                bundles={
                    b: bundle_stats(
                        msg_rate_in=draw(st.floats(0, 5e4)),
                        topics=draw(st.integers(0, 3000)),
                        producer_count=draw(st.integers(0, 800)),
                    )
                    for b in held
                },
                version=draw(st.sampled_from(["3.0.0", "3.1.0", "3.1.0-SNAPSHOT", "bad"])),
            )
        )
        if draw(st.booleans()):
            reports[-1].load_manager_class_name = draw(st.sampled_from([None, EXTENSIBLE_LM]))
        reports[-1].persistent_topics_enabled = draw(st.booleans()) or True
    policies = {}
    if names and draw(st.booleans()):
        policies["p"] = NamespaceIsolationData(
            ("t/.*",),
            (draw(st.sampled_from(["b0", "b1", "b[0-2]", "nobody"])),),
            (draw(st.sampled_from(["b3", "b.*", "nobody"])),),
            AutoFailoverPolicy(min_limit=draw(st.integers(0, 3))),
        )
    groups = {
        ns: NamespacePolicy(
            draw(st.sampled_from([None, "g", "G"])), NamespaceBundles.create(ns, draw(st.integers(1, 4)))
        )
        for ns in NAMESPACES
    }
    config = ServiceConfig(
        loadBalancerBrokerMaxTopics=draw(st.sampled_from([50000, 100, 1])),
        preferLaterVersions=draw(st.booleans()),
        loadBalancerDistributeBundlesEvenlyEnabled=draw(st.booleans()),
        failureDomainsEnabled=draw(st.booleans()),
        loadBalancerNamespaceBundleMaxTopics=draw(st.sampled_from([1000, 10])),
        loadBalancerNamespaceMaximumBundles=draw(st.integers(1, 6)),
        loadBalancerMaxNumberOfBundlesToSplitPerCycle=draw(st.integers(1, 3)),
        loadBalancerNamespaceBundleSplitConditionHitCountThreshold=draw(st.integers(0, 2)),
    )
    lookup = {
        b: BrokerLookupData(
            load_manager_class_name=draw(st.sampled_from([EXTENSIBLE_LM, None])),
            broker_version=draw(st.sampled_from(["3.0.0", "3.1.0", None])),
            persistent_topics_enabled=draw(st.booleans()),
        )
        for b in names
        if draw(st.booleans())
    }
    loads = {
        b: broker_load(cpu=draw(st.floats(0, 100)), topics=draw(st.integers(0, 200)))
        for b in names
        if draw(st.booleans())
    }
    ownership = {b: draw(st.sampled_from(names)) for b in BUNDLES if names and draw(st.booleans())}
    return ClusterView(
        config=config,
        load_data=load_data(reports),
        namespace_policies=groups,
        isolation_policies=policies,
        broker_lookup_data=lookup,
        broker_load_data=loads,
        ownership=ownership,
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    clusters(),
    st.sampled_from(STRATEGIES),
    st.sampled_from(BUNDLES + ["t/a/0x00000000_0xffffffff"]),
    st.integers(0, 3),
)
def test_placement_picks_an_allowed_broker_or_none_with_a_reason(view, strategy, bundle, seed) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        decision = select_broker_for_assignment(
            view, bundle, StrategyState(), new_rng(seed), strategy=strategy
        )
        again = select_broker_for_assignment(view, bundle, StrategyState(), new_rng(seed), strategy=strategy)
    assert decision == again
    if decision.broker is None:
        assert decision.reason in (Reason.NO_BROKERS, Reason.NO_CANDIDATES), decision
        assert decision.detail
        return
    assert decision.reason is Reason.SELECTED, decision
    assert decision.broker in decision.candidates
    namespace = bundle.rpartition("/")[0]
    extensible = "extensions" in strategy
    if not extensible:
        # every fallback of the modular pipeline returns to the isolation-policy candidates
        allowed = apply_namespace_policies(
            namespace,
            [b for b in view.available_brokers if b in view.brokers],
            dict(sorted(view.isolation_policies.items())),
            serves_domain=lambda b, np: view.brokers[b].local_data.persistent_topics_enabled,
        ).candidates
        assert decision.broker in allowed
    else:
        lookup = view.broker_lookup_data.get(decision.broker)
        assert lookup is None or lookup.load_manager_class_name == EXTENSIBLE_LM
        load = view.broker_load_data.get(decision.broker)
        assert load is None or load.topics < view.config.loadBalancerBrokerMaxTopics
        policy = view.isolation_policy_for(namespace)
        if policy is None:
            assert lookup is None or lookup.persistent_topics_enabled


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    clusters(),
    st.sampled_from(["BundleSplitterTask", "DefaultNamespaceBundleSplitStrategyImpl"]),
    st.integers(1, 4),
)
def test_split_only_splits_what_the_rules_allow(view, strategy, cycles) -> None:
    state = StrategyState()
    thresholds = SplitThresholds.from_config(view.config)
    extensible = strategy.startswith("Default")
    for _ in range(cycles):
        result = find_bundles_to_split(view, state, strategy)
        picked: dict[tuple[str | None, str], int] = {}
        per_broker: dict[str, int] = {}
        for decision in result.splits:
            namespace = decision.bundle.rpartition("/")[0]
            lower, upper = range_bounds(decision.bundle)
            assert all(lower < b < upper for b in decision.boundaries)
            reporters = {
                b: d.local_data.last_stats[decision.bundle]
                for b, d in view.brokers.items()
                if decision.bundle in d.local_data.last_stats
            }
            if extensible:  # each broker decides for the bundles it owns, on their current stats
                owner = decision.detail.rpartition("split by ")[2].split(" ")[0]
                assert view.is_owner(owner, decision.bundle)
                stats = reporters[owner]
                sessions = stats.consumer_count + stats.producer_count
                rate = stats.msg_rate_in + stats.msg_rate_out
                tput = stats.msg_throughput_in + stats.msg_throughput_out
                assert stats.topics >= 2
                assert thresholds.reason(stats.topics, sessions, rate, tput) is decision.reason
                assert len(decision.boundaries) == 1
                per_broker[owner] = per_broker.get(owner, 0) + 1
                key = (owner, namespace)
            else:
                assert any(stats.topics >= 2 for stats in reporters.values())
                key = (None, namespace)
            picked[key] = picked.get(key, 0) + 1
            assert view.bundle_count(namespace) + picked[key] <= thresholds.max_bundles
        assert all(
            n <= view.config.loadBalancerMaxNumberOfBundlesToSplitPerCycle for n in per_broker.values()
        )
