"""The placement pipelines end to end on small views."""

import random

import pytest

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance.broker_lookup import BrokerLookupData
from brokerlb.loadbalance.decisions import Reason
from brokerlb.loadbalance.placement import (
    PlacementContext,
    anti_affinity_can_unload,
    has_placement_policies,
    place_bundle,
    select_broker_for_assignment,
    should_anti_affinity_namespace_unload,
    should_namespace_policies_unload,
)
from brokerlb.loadbalance.policies import AutoFailoverPolicy, NamespaceIsolationData, NamespacePolicy
from brokerlb.loadbalance.state import StrategyState, new_rng
from brokerlb.loadbalance.view import ClusterView
from brokerlb.model import BundleData
from brokerlb.testing import broker, broker_load, bundle_data, load_data

EXTENSIBLE_LM = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
EXT_LRUWW = "org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight"


def place(view: ClusterView, bundle: str, strategy: str | None = None, seed: int = 0, **kw):
    return select_broker_for_assignment(view, bundle, StrategyState(), new_rng(seed), strategy=strategy, **kw)


def test_least_loaded_broker_wins_and_detail_explains() -> None:
    view = ClusterView(
        load_data=load_data(
            [
                broker("b1:8080", bundles={"t/a/0x00000000_0x80000000": _stats(1000)}),
                broker("b2:8080", bundles={"t/a/0x80000000_0xffffffff": _stats(10)}),
            ]
        )
    )
    decision = place(view, "t/b/0x00000000_0xffffffff")
    assert decision.broker == "b2:8080" and decision.reason is Reason.SELECTED
    assert decision.candidates == ("b1:8080", "b2:8080")
    assert "LeastLongTermMessageRate picked b2:8080" in decision.detail


def _stats(rate: float):
    from brokerlb.testing import bundle_stats

    return bundle_stats(msg_rate_in=rate, topics=2)


def test_preallocated_bundle_goes_to_its_broker() -> None:
    data = load_data([broker("b1:8080"), broker("b2:8080")])
    data.broker_data["b1:8080"].preallocated_bundle_data["t/a/0x00000000_0xffffffff"] = (
        BundleData.new_default()
    )
    decision = place(ClusterView(load_data=data), "t/a/0x00000000_0xffffffff")
    assert (decision.broker, decision.reason) == ("b1:8080", Reason.PREALLOCATED)


def test_preallocation_spreads_a_burst_of_assignments() -> None:
    """Pulsar's testCandidateConsistency idea: with preallocation two new bundles go to two brokers."""
    view = ClusterView(load_data=load_data([broker("b1:8080"), broker("b2:8080")]))
    context = PlacementContext(view)
    state, rng = StrategyState(), new_rng(0)
    picks = [
        place_bundle(context, f"{i}/{i}/0x00000000_0xffffffff", state, rng, preallocate=True).broker
        for i in range(2)
    ]
    assert sorted(picks) == ["b1:8080", "b2:8080"]
    assert place_bundle(context, "0/0/0x00000000_0xffffffff", state, rng).reason is Reason.PREALLOCATED
    # the view and its cached context are untouched
    assert not any(d.preallocated_bundle_data for d in view.brokers.values())


def test_max_topic_distribution() -> None:
    """Pulsar's testMaxTopicDistributionToBroker: a broker over loadBalancerBrokerMaxTopics gets nothing more."""
    conf = ServiceConfig(loadBalancerBrokerMaxTopics=100)
    bundles = [f"test/test/test/0x{i * 0x10000000:08x}_0x{(i + 1) * 0x10000000:08x}" for i in range(15)]
    data = load_data(
        [broker("b1:8080"), broker("b2:8080"), broker("b3:8080")],
        bundles={bundles[0]: bundle_data(long_msg_rate_in=1000, topics=110)},
    )
    context = PlacementContext(ClusterView(config=conf, load_data=data))
    state, rng = StrategyState(), new_rng(3)
    heavy = place_bundle(context, bundles[0], state, rng, preallocate=True).broker
    for bundle in bundles[1:]:
        decision = place_bundle(context, bundle, state, rng, preallocate=True)
        assert decision.broker != heavy, decision.detail


def test_overloaded_pick_is_replaced_from_the_policy_candidates() -> None:
    view = ClusterView(
        config=ServiceConfig(loadBalancerLoadPlacementStrategy="RoundRobinBrokerSelector"),
        load_data=load_data([broker("b1:8080", cpu=95), broker("b2:8080", cpu=10)]),
    )
    decision = place(view, "t/a/0x00000000_0xffffffff")
    assert decision.broker == "b2:8080"
    assert "b1:8080 is overloaded" in decision.detail


def test_isolation_policy_and_no_candidates() -> None:
    policy = NamespaceIsolationData(("iso/.*",), ("b1",), ("b2",), AutoFailoverPolicy(min_limit=1))
    view = ClusterView(
        load_data=load_data([broker("b1:8080"), broker("b2:8080"), broker("b3:8080")]),
        isolation_policies={"p": policy},
    )
    assert place(view, "iso/ns/0x00000000_0xffffffff").candidates == ("b1:8080",)
    assert place(view, "other/ns/0x00000000_0xffffffff").candidates == ("b2:8080", "b3:8080")
    only_shared = ClusterView(load_data=load_data([broker("b3:8080")]), isolation_policies={"p": policy})
    decision = place(only_shared, "iso/ns/0x00000000_0xffffffff")
    assert decision.broker is None and decision.reason is Reason.NO_CANDIDATES


def test_no_brokers() -> None:
    decision = place(ClusterView(), "t/a/0x00000000_0xffffffff")
    assert decision.broker is None and decision.reason is Reason.NO_BROKERS


def test_version_filter_failure_restores_policy_candidates() -> None:
    conf = ServiceConfig(preferLaterVersions=True)
    new = load_data([broker("b1:8080", version="3.1.0"), broker("b2:8080", version="3.0.0")])
    assert place(ClusterView(config=conf, load_data=new), "t/a/0x00000000_0xffffffff").broker == "b1:8080"
    bad = load_data([broker("b1:8080", version="3.1.0"), broker("b2:8080", version="not-a-version")])
    decision = place(ClusterView(config=conf, load_data=bad), "t/a/0x00000000_0xffffffff")
    assert decision.candidates == ("b1:8080", "b2:8080")
    assert "Cannot determine newest broker version" in decision.detail


def test_anti_affinity_and_even_spread() -> None:
    data = load_data(
        [
            broker("b1:8080", bundles=["t/ns1/0x00000000_0xffffffff"]),
            broker("b2:8080", bundles=["t/x/0x00000000_0x80000000", "t/x/0x80000000_0xffffffff"]),
            broker("b3:8080"),
        ]
    )
    policies = {"t/ns1": NamespacePolicy("g"), "t/ns2": NamespacePolicy("G")}
    view = ClusterView(load_data=data, namespace_policies=policies)
    assert place(view, "t/ns2/0x00000000_0xffffffff").candidates == ("b2:8080", "b3:8080")
    # the second bundle of t/x avoids b2, which holds both others (even spread)
    assert "b2:8080" not in place(view, "t/x/0x00000000_0x40000000").candidates
    uneven = ClusterView(
        config=ServiceConfig(loadBalancerDistributeBundlesEvenlyEnabled=False), load_data=data
    )
    assert "b2:8080" in place(uneven, "t/x/0x00000000_0x40000000").candidates


def test_load_manager_class_filter_empty_resets() -> None:
    data = load_data([broker("b1:8080"), broker("b2:8080")])
    for b in data.broker_data.values():
        b.local_data.load_manager_class_name = None
    decision = place(ClusterView(load_data=data), "t/a/0x00000000_0xffffffff")
    assert decision.broker is not None
    assert "load manager class: 0" in decision.detail and "back to the 2 policy candidates" in decision.detail


def test_heartbeat_and_sla_routing() -> None:
    view = ClusterView(load_data=load_data([broker("b1:8080"), broker("b2:8080")]))
    assert place(view, "pulsar/use/b2:8080/0x00000000_0xffffffff").broker == "b2:8080"
    assert place(view, "pulsar/b1:8080/0x00000000_0xffffffff").reason is Reason.HEARTBEAT
    assert place(view, "sla-monitor/use/b2:8080/0x00000000_0xffffffff").broker == "b2:8080"
    dead_sla = place(view, "sla-monitor/use/b9:8080/0x00000000_0xffffffff")
    assert dead_sla.reason is Reason.SELECTED  # placed like any other bundle
    extensible = ClusterView(
        config=ServiceConfig(loadManagerClassName=EXTENSIBLE_LM),
        broker_load_data={"b1:8080": broker_load(cpu=10)},
    )
    assert place(extensible, "pulsar/b9:8080/0x00000000_0xffffffff").reason is Reason.NO_BROKERS


def _extensible_view(**kw) -> ClusterView:
    lookup = {
        "b1:8080": BrokerLookupData(load_manager_class_name=EXTENSIBLE_LM, broker_version="3.1.0"),
        "b2:8080": BrokerLookupData(load_manager_class_name=EXTENSIBLE_LM, broker_version="3.0.0"),
        "b3:8080": BrokerLookupData(load_manager_class_name=None, broker_version="3.1.0"),
    }
    loads = {
        "b1:8080": broker_load(cpu=50, topics=5),
        "b2:8080": broker_load(cpu=10, topics=20),
        "b3:8080": broker_load(cpu=1),
    }
    return ClusterView(
        config=ServiceConfig(loadManagerClassName=EXTENSIBLE_LM, **kw),
        broker_lookup_data=lookup,
        broker_load_data=loads,
    )


def test_extensible_pipeline_filters() -> None:
    view = _extensible_view()
    decision = place(view, "t/a/0x00000000_0xffffffff")
    assert decision.candidates == ("b1:8080", "b2:8080")  # b3 reports no load manager class
    assert decision.broker == "b2:8080"  # 0.1 + 0.1 <= 0.3
    assert (
        place(_extensible_view(loadBalancerBrokerMaxTopics=10), "t/a/0x00000000_0xffffffff").broker
        == "b1:8080"
    )
    assert place(_extensible_view(preferLaterVersions=True), "t/a/0x00000000_0xffffffff").candidates == (
        "b1:8080",
    )
    none_left = place(_extensible_view(loadBalancerBrokerMaxTopics=1), "t/a/0x00000000_0xffffffff")
    assert none_left.broker is None and none_left.reason is Reason.NO_CANDIDATES


def test_extensible_strategy_named_explicitly_uses_extensible_pipeline() -> None:
    """Asking for the extensible strategy under a modular config runs the extensible pipeline as
    ExtensibleLoadManagerImpl would (its class filter expects ExtensibleLoadManagerImpl)."""
    base = _extensible_view()
    view = ClusterView(broker_lookup_data=base.broker_lookup_data, broker_load_data=base.broker_load_data)
    decision = place(view, "t/a/0x00000000_0xffffffff", strategy=EXT_LRUWW)
    assert decision.candidates == ("b1:8080", "b2:8080") and decision.broker == "b2:8080"
    assert decision.detail.startswith("available: 3; load manager class: 2")


def test_seed_makes_ties_reproducible() -> None:
    view = ClusterView(load_data=load_data([broker(f"b{i}:8080") for i in range(8)]))
    first = [place(view, "t/a/0x00000000_0xffffffff", seed=s).broker for s in range(10)]
    again = [place(view, "t/a/0x00000000_0xffffffff", seed=s).broker for s in range(10)]
    assert first == again and len(set(first)) > 1


def test_should_namespace_policies_unload() -> None:
    """Pulsar's testLoadSheddingWithNamespaceIsolationPolicies."""
    data = load_data([broker("localhost:8080"), broker("localhost:8081")])
    bundle = "my-tenant/use/my-ns/0x00000000_0xffffffff"
    assert should_namespace_policies_unload(ClusterView(load_data=data), bundle, "localhost:8080")

    def with_policy(host: str) -> ClusterView:
        policy = NamespaceIsolationData(
            ("my-tenant/use/my-ns.*",), (host,), (host,), AutoFailoverPolicy(min_limit=1)
        )
        return ClusterView(load_data=data, isolation_policies={"my-ns-isolation-policies": policy})

    assert not should_namespace_policies_unload(with_policy("localhost1"), bundle, "localhost1:8080")
    assert should_namespace_policies_unload(with_policy("localhost"), bundle, "localhost:8080")
    single = ClusterView(
        load_data=load_data([broker("localhost:8080")]),
        isolation_policies=with_policy("localhost").isolation_policies,
    )
    assert not should_namespace_policies_unload(single, bundle, "localhost:8080")
    assert has_placement_policies(with_policy("x"), bundle)
    assert not has_placement_policies(ClusterView(load_data=data), bundle)


def test_should_anti_affinity_namespace_unload_on_a_view() -> None:
    bundles = {f"my-tenant/use/my-ns{i}/0x00000000_0xffffffff": f"broker-{i}:8080" for i in range(3)}
    policies = {f"my-tenant/use/my-ns{i}": NamespacePolicy("my-antiaffinity") for i in range(3)}
    two = load_data(
        [
            broker("broker-0:8080", bundles=[list(bundles)[0]]),
            broker("broker-1:8080", bundles=[list(bundles)[1]]),
            broker("broker-2:8080"),
        ]
    )
    view = ClusterView(load_data=two, namespace_policies=policies)
    assert should_anti_affinity_namespace_unload(view, list(bundles)[0], "broker-0:8080")
    three = load_data([broker(b, bundles=[n]) for n, b in bundles.items()])
    view = ClusterView(load_data=three, namespace_policies=policies)
    assert not should_anti_affinity_namespace_unload(view, list(bundles)[0], "broker-0:8080")
    assert should_anti_affinity_namespace_unload(view, "other/ns/0x00000000_0xffffffff", "broker-0:8080")


def test_extensible_anti_affinity_can_unload() -> None:
    policies = {"t/a": NamespacePolicy("g"), "t/b": NamespacePolicy("g"), "t/c": NamespacePolicy("g")}
    owners = {
        "t/a/0x00000000_0xffffffff": "b1",
        "t/b/0x00000000_0xffffffff": "b2",
        "t/c/0x00000000_0xffffffff": "b2",
    }
    view = ClusterView(
        broker_load_data={"b1": broker_load(), "b2": broker_load()},
        namespace_policies=policies,
        ownership=owners,
    )
    # b1 holds 1, b2 holds 2: only b1 is left by the filter, so t/a cannot leave b1
    assert not anti_affinity_can_unload(view, "t/a/0x00000000_0xffffffff", "b1")
    assert not anti_affinity_can_unload(view, "t/a/0x00000000_0xffffffff", "b1", "b2")
    assert anti_affinity_can_unload(view, "t/b/0x00000000_0xffffffff", "b2", "b1")
    three = ClusterView(
        broker_load_data={"b1": broker_load(), "b2": broker_load(), "b3": broker_load()},
        namespace_policies=policies,
        ownership=owners,
    )
    assert anti_affinity_can_unload(three, "t/a/0x00000000_0xffffffff", "b1", "b3")
    assert not anti_affinity_can_unload(three, "t/a/0x00000000_0xffffffff", "b1", "b2")
    assert anti_affinity_can_unload(three, "x/y/0x00000000_0xffffffff", "b1", "b2")  # no group


@pytest.mark.parametrize(
    "strategy",
    ["LeastLongTermMessageRate", "LeastResourceUsageWithWeight", "RoundRobinBrokerSelector", EXT_LRUWW],
)
def test_every_strategy_places_through_the_pipeline(strategy: str) -> None:
    view = ClusterView(
        load_data=load_data([broker("b1:8080", cpu=20), broker("b2:8080", cpu=40)]),
        broker_load_data={"b1:8080": broker_load(cpu=20), "b2:8080": broker_load(cpu=40)},
    )
    decision = place(view, "t/a/0x00000000_0xffffffff", strategy=strategy, seed=random.Random(1).randrange(9))
    assert decision.broker in ("b1:8080", "b2:8080")


def test_the_cached_context_of_a_view_goes_with_the_view() -> None:
    """``context_for`` caches one context per view without keeping the view alive (the leader
    builds a view per step: a cache that held them all would hold every old report)."""
    import gc
    import weakref

    from brokerlb.loadbalance.placement import context_for

    view = ClusterView(load_data=load_data([broker("b1:8080"), broker("b2:8080")]))
    assert context_for(view) is context_for(view)
    gone = weakref.ref(view)
    del view
    gc.collect()
    assert gone() is None
