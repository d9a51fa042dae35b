"""Properties of every shedding strategy, raw and inside the leader's loop (hypothesis).

* never unloads a bundle its broker does not own (``ClusterView.is_owner``);
* never unloads a recently unloaded bundle (raw: any entry; loop: within the grace period);
* a destination is an available broker other than the source;
* the same view, state and seed give the same decisions.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance import ClusterView, SheddingResult, StrategyState, new_rng
from brokerlb.loadbalance.registry import StrategyKind, create
from brokerlb.loadbalance.shedding.loop import run_shedding_cycle
from brokerlb.model import NamespaceBundleStats, TopBundlesLoadData
from brokerlb.testing import broker, broker_load, bundle_stats, load_data

NOW = 1_700_000_000_000
MB = 1024 * 1024
MODULAR = ["OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder"]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw: st.DrawFn) -> ClusterView:
    n = draw(st.integers(min_value=1, max_value=5))
    names = [f"b{i}:8080" for i in range(n)]
    bundles = [f"t/ns{i % 3}/0x{i:08x}_0x{i + 1:08x}" for i in range(draw(st.integers(0, 14)))]
    owner = {b: draw(st.sampled_from(names)) for b in bundles}
    tput = {b: draw(st.floats(0, 60)) for b in bundles}
    brokers, tops, loads = [], {}, {}
    for name in names:
        mine = {
            b: bundle_stats(
                msg_throughput_in=tput[b] * MB / 2,
                msg_throughput_out=tput[b] * MB / 2,
                msg_rate_in=tput[b] * 50,
                msg_rate_out=tput[b] * 50,
            )
            for b in bundles
            if owner[b] == name
        }
        cpu = draw(st.floats(0, 100))
        brokers.append(broker(name, cpu=cpu, bandwidth_in=draw(st.floats(0, 100)), bundles=mine))
        tops[name] = TopBundlesLoadData.of(
            {b: NamespaceBundleStats(msg_throughput_out=tput[b] * MB) for b in mine}, 10
        )
        loads[name] = broker_load(cpu=cpu, msg_throughput_out=sum(tput[b] for b in mine) * MB, now_ms=NOW)
    recently = {b: NOW - draw(st.integers(0, 3_600_000)) for b in bundles if draw(st.booleans())}
    # the channel may say another broker owns a bundle (e.g. during a transfer)
    ownership = {b: draw(st.sampled_from(names)) for b in bundles if draw(st.integers(0, 5)) == 0}
    conf = ServiceConfig(
        loadBalancerSheddingConditionHitCountThreshold=0,
        loadBalancerBundleUnloadMinThroughputThreshold=0,
        lowerBoundarySheddingEnabled=draw(st.booleans()),
        loadBalancerAvgShedderHitCountHighThreshold=1,
        loadBalancerAvgShedderHitCountLowThreshold=1,
        maxUnloadPercentage=0.5,
        brokerlbTransferShedderCheckSwapCandidates=True,
    )
    return ClusterView(
        config=conf,
        now_ms=NOW,
        load_data=load_data(brokers, recently_unloaded=recently),
        broker_load_data=loads,
        top_bundles=tops,
        ownership=ownership,
    )


def check(view: ClusterView, result: SheddingResult, recently: dict[str, int]) -> None:
    for d in result.unloads:
        assert view.is_owner(d.broker, d.bundle), d
        assert d.bundle not in recently, d
        assert not view.is_system_bundle(d.bundle)
        if d.destination is not None:
            assert d.destination in view.available_brokers and d.destination != d.broker, d


@SETTINGS
@given(clusters(), st.sampled_from(MODULAR + ["TransferShedder"]), st.integers(0, 3))
def test_raw_strategies_respect_ownership_and_recent_unloads(view: ClusterView, name: str, seed: int) -> None:
    strategy = create(StrategyKind.SHEDDING, name)
    result = strategy.find_bundles_for_unloading(view, StrategyState(), new_rng(seed))
    check(view, result, dict(view.recently_unloaded_bundles))
    again = strategy.find_bundles_for_unloading(view, StrategyState(), new_rng(seed))
    assert again == result


@SETTINGS
@given(clusters(), st.sampled_from(MODULAR + ["TransferShedder"]), st.integers(0, 3))
def test_loop_respects_ownership_grace_period_and_destinations(
    view: ClusterView, name: str, seed: int
) -> None:
    grace_ms = 30 * 60_000
    within_grace = {b: t for b, t in view.recently_unloaded_bundles.items() if t >= NOW - grace_ms}
    result = run_shedding_cycle(view, StrategyState(), new_rng(seed), strategy=name)
    check(view, result, within_grace)
    assert run_shedding_cycle(view, StrategyState(), new_rng(seed), strategy=name) == result


@SETTINGS
@given(clusters())
def test_multi_cycle_state_never_breaks_the_properties(view: ClusterView) -> None:
    state = StrategyState()
    recently = dict(view.recently_unloaded_bundles)
    for cycle in range(3):
        current = replace(view, load_data=replace(view.load_data, recently_unloaded_bundles=dict(recently)))
        for name in MODULAR:
            result = create(StrategyKind.SHEDDING, name).find_bundles_for_unloading(
                current, state, new_rng(cycle)
            )
            check(current, result, recently)
