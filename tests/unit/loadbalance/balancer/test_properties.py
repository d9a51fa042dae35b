"""Properties of the balancer on random clusters (hypothesis): ownership, filters, objective,
determinism, budgets -- over several cycles of shared memory."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerlb.loadbalance import NamespaceIsolationData, NamespacePolicy, StrategyState
from brokerlb.loadbalance.placement.context import PlacementContext
from brokerlb.loadbalance.placement.modular_pipeline import modular_candidates
from brokerlb.loadbalance.placement.unload_checks import (
    should_anti_affinity_namespace_unload,
    should_namespace_policies_unload,
)
from brokerlb.loadbalance.policies import AutoFailoverPolicy
from brokerlb.model import LoadData
from tests.unit.loadbalance.balancer.helpers import MB, NOW, cluster, cycle, node

NAMESPACES = ["t/a", "t/b", "t/c", "t/d"]


@st.composite
def clusters(draw):
    n = draw(st.integers(2, 6))
    slots = iter(range(10_000))
    brokers = []
    for i in range(n):
        bundles = {}
        for _ in range(draw(st.integers(0, 8))):
            ns = draw(st.sampled_from(NAMESPACES))
            j = next(slots)
            bundles[f"{ns}/0x{j:08x}_0x{j + 1:08x}"] = draw(st.floats(0.5, 30))
        cores = draw(st.sampled_from([1, 2, 4]))
        while sum(bundles.values()) > 95 * cores:  # a broker reports at most its limit
            bundles.pop(next(iter(bundles)))
        brokers.append(node(f"b{i}:8080", bundles, cores=cores))
    conf = {
        "brokerlbBalancerMaxMovesPerCycle": draw(st.integers(1, 12)),
        "brokerlbBalancerMaxMovesPerBrokerPerCycle": draw(st.integers(1, 6)),
        "brokerlbBalancerMaxMovedMbytesPerCycle": draw(st.sampled_from([0.0, 20.0, 60.0])),
        "brokerlbBalancerMaxMovedMbytesPerBrokerPerCycle": draw(st.sampled_from([0.0, 15.0, 40.0])),
    }
    view = cluster(brokers, **conf)
    if draw(st.booleans()):  # pin one namespace to one or two brokers
        hosts = draw(st.lists(st.sampled_from([f"b{i}" for i in range(n)]), min_size=1, max_size=2))
        pin = NamespaceIsolationData(
            (draw(st.sampled_from(NAMESPACES)),), tuple(hosts), (), AutoFailoverPolicy(1)
        )
        view = replace(view, isolation_policies={"pin": pin})
    if draw(st.booleans()):  # an anti-affinity group over two namespaces
        view = replace(view, namespace_policies={"t/c": NamespacePolicy("g"), "t/d": NamespacePolicy("g")})
    return view


def check_cycle(view, result) -> None:
    context = PlacementContext(view)
    conf = view.config
    per_broker: Counter[str] = Counter()
    bytes_per_broker: Counter[str] = Counter()
    total_bytes = 0.0
    for d in result.unloads:
        assert d.broker is not None and d.bundle is not None and d.destination is not None
        assert d.bundle in view.bundles_owned_by(d.broker)  # only what its broker owns
        assert d.destination != d.broker
        assert should_namespace_policies_unload(view, d.bundle, d.broker)
        assert should_anti_affinity_namespace_unload(view, d.bundle, d.broker)
        allowed = modular_candidates(context, d.bundle, even_spread=False).candidates
        assert d.destination in allowed  # every placement filter of the pipeline
        context.preallocate(d.bundle, d.destination)
        stats = view.brokers[d.broker].local_data.last_stats[d.bundle]
        tput = stats.msg_throughput_in + stats.msg_throughput_out
        for b in (d.broker, d.destination):
            per_broker[b] += 1
            bytes_per_broker[b] += tput
        total_bytes += tput
    assert len(result.unloads) <= conf.brokerlbBalancerMaxMovesPerCycle
    assert all(n <= conf.brokerlbBalancerMaxMovesPerBrokerPerCycle for n in per_broker.values())
    if conf.brokerlbBalancerMaxMovedMbytesPerCycle:
        assert total_bytes <= conf.brokerlbBalancerMaxMovedMbytesPerCycle * MB + 1e-6
    if conf.brokerlbBalancerMaxMovedMbytesPerBrokerPerCycle:
        limit = conf.brokerlbBalancerMaxMovedMbytesPerBrokerPerCycle * MB + 1e-6
        assert all(v <= limit for v in bytes_per_broker.values())
    if "objectiveAfter" in result.stats:  # never worse
        assert result.stats["objectiveAfter"] <= result.stats["objectiveBefore"] + 1e-12
        assert result.stats["busiestAfter"] <= result.stats["busiestBefore"] + 1e-12 or result.unloads
    assert result.decisions  # a cycle always says what it did or why not


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.integers(0, 5))
def test_properties_over_cycles(view, seed) -> None:
    state = StrategyState()
    moved_at: dict[str, int] = {}
    for i in range(3):  # same (stale) reports, three cycles: pending moves are not repeated
        current = replace(view, now_ms=NOW + i * 60_000)
        result = cycle(current, state, seed)
        check_cycle(current, result)
        for d in result.unloads:
            assert d.bundle not in moved_at  # never twice within the grace period
            moved_at[d.bundle] = current.now_ms
    load = view.load_data  # without the moves the three cycles recorded
    fresh = replace(view, load_data=LoadData(load.broker_data, load.bundle_data, {}))
    again = cycle(fresh, StrategyState(), seed, carried_out=False)
    assert again.to_json() == cycle(fresh, StrategyState(), seed, carried_out=False).to_json()  # same plan
