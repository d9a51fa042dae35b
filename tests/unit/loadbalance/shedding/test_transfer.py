"""TransferShedder: stats, skip reasons, swaps, cool-down bookkeeping, the swap-gain option."""

from __future__ import annotations

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance import ClusterView, StrategyState
from brokerlb.loadbalance.shedding.transfer import LoadStats, TransferShedder, TransferShedderState
from brokerlb.model import NamespaceBundleStats, TopBundlesLoadData
from brokerlb.testing import broker_load
from tests.unit.loadbalance.shedding.helpers import NOW, shed, skip_reason

EXT = {
    "loadManagerClassName": "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl",
    "loadBalancerSheddingConditionHitCountThreshold": 0,
}


def top(broker: str, *outs: float) -> TopBundlesLoadData:
    return TopBundlesLoadData.of(
        {
            f"t/{broker.split(':')[0]}/0x{i:08x}_0x{i + 1:08x}": NamespaceBundleStats(msg_throughput_out=v)
            for i, v in enumerate(outs)
        },
        10,
    )


def ext_view(
    cpus: dict[str, float], tops: dict[str, TopBundlesLoadData], *, now: int = NOW, updated: int = NOW, **conf
) -> ClusterView:
    loads = {}
    for b, c in cpus.items():
        out = sum(e.stats.msg_throughput_out for e in tops[b].top_bundles_load_data) if b in tops else 0.0
        loads[b] = broker_load(cpu=c, msg_throughput_out=out, now_ms=updated)
    return ClusterView(
        config=ServiceConfig(**{**EXT, **conf}), now_ms=now, broker_load_data=loads, top_bundles=tops
    )


def test_worked_example_transfers_from_max_to_min() -> None:
    tops = {b: top(b, 1e6, 2e6) for b in ("b1:8080", "b2:8080", "b3:8080")}
    v = ext_view({"b1:8080": 10, "b2:8080": 20, "b3:8080": 90}, tops)
    result = shed("TransferShedder", v)
    (unload,) = result.unloads
    assert (unload.broker, unload.destination, unload.reason.value) == ("b3:8080", "b1:8080", "Overloaded")
    assert result.stats["loadAvg"] == (0.1 + 0.2 + 0.9) / 3
    assert result.stats["loadStdAfter"] < result.stats["loadStd"]


def test_transfer_disabled_unloads_without_destination() -> None:
    tops = {b: top(b, 1e6, 2e6) for b in ("b1:8080", "b2:8080", "b3:8080")}
    v = ext_view({"b1:8080": 10, "b2:8080": 20, "b3:8080": 90}, tops, loadBalancerTransferEnabled=False)
    assert [u.destination for u in shed("TransferShedder", v).unloads] == [None]


def test_skip_reasons() -> None:
    tops = {b: top(b, 1e6, 2e6) for b in ("b1:8080", "b2:8080")}
    assert skip_reason(shed("TransferShedder", ClusterView(config=ServiceConfig(**EXT)))) == "NoBrokers"
    stale = ext_view({"b1:8080": 10, "b2:8080": 90}, tops, updated=1, now=NOW)
    assert skip_reason(shed("TransferShedder", stale)) == "OutDatedData"
    balanced = ext_view({"b1:8080": 40, "b2:8080": 45}, tops)
    assert skip_reason(shed("TransferShedder", balanced)) == "HitCount"
    no_tops = ext_view({"b1:8080": 10, "b2:8080": 90}, {})
    assert skip_reason(shed("TransferShedder", no_tops)) == "NoLoadData"
    # a registered broker without load data
    from brokerlb.loadbalance import BrokerLookupData

    missing = ClusterView(
        config=ServiceConfig(**EXT),
        now_ms=NOW,
        broker_load_data={"b1:8080": broker_load(cpu=10, now_ms=NOW)},
        broker_lookup_data={"b2:8080": BrokerLookupData()},
    )
    assert skip_reason(shed("TransferShedder", missing)) == "NoLoadData"


def test_cool_down_after_an_unload_and_forgetting_it_later() -> None:
    tops = {b: top(b, 1e6, 2e6) for b in ("b1:8080", "b2:8080")}
    base = ext_view({"b1:8080": 10, "b2:8080": 90}, tops)
    cooling = ClusterView(
        config=base.config,
        now_ms=NOW,
        broker_load_data=base.broker_load_data,
        top_bundles=tops,
        recently_unloaded_brokers={"b2:8080": NOW - 1000},
    )
    assert skip_reason(shed("TransferShedder", cooling)) == "CoolDown"
    cooled = ClusterView(
        config=base.config,
        now_ms=NOW,
        broker_load_data=base.broker_load_data,
        top_bundles=tops,
        recently_unloaded_brokers={"b2:8080": NOW - 200_000},
    )
    result = shed("TransferShedder", cooled)
    assert result.stats["cooledDownBrokers"] == ["b2:8080"] and result.unloads


def test_hit_count_is_memory_and_resets_after_decisions() -> None:
    tops = {b: top(b, 1e6, 2e6) for b in ("b1:8080", "b2:8080")}
    v = ext_view({"b1:8080": 10, "b2:8080": 90}, tops, loadBalancerSheddingConditionHitCountThreshold=2)
    state = StrategyState()
    assert [skip_reason(shed("TransferShedder", v, state)) for _ in range(2)] == ["HitCount", "HitCount"]
    assert shed("TransferShedder", v, state).unloads
    assert state.get(TransferShedder.class_name, TransferShedderState).unload_condition_hit_count == 0


def test_never_the_last_listed_bundle_and_never_zero_traffic() -> None:
    tops = {"b1:8080": top("b1:8080", 1e6, 1e6), "b2:8080": top("b2:8080", 0.0, 5e6)}
    v = ext_view({"b1:8080": 10, "b2:8080": 90}, tops)
    # b2: the zero-traffic bundle is skipped and the last one must stay
    assert skip_reason(shed("TransferShedder", v)) == "NoBundles"


def test_swap_gain_counts_only_in_debug_mode_unless_the_option_is_set() -> None:
    # b2 (110 MB/s) should move ~49 MB/s: 20 fits, 20 + 40 overshoots -- unless b1 sends back
    # 5 + 10 + 15 MB/s (a swap): then b2 ends at 80 < 0.75 * 110 and b1 at 60 <= 80
    tops = {"b1:8080": top("b1:8080", 5e6, 10e6, 15e6), "b2:8080": top("b2:8080", 20e6, 40e6, 50e6)}
    plain = shed("TransferShedder", ext_view({"b1:8080": 10, "b2:8080": 95}, tops))
    counted = shed(
        "TransferShedder",
        ext_view({"b1:8080": 10, "b2:8080": 95}, tops, brokerlbTransferShedderCountSwapGain=True),
    )
    debug = shed(
        "TransferShedder", ext_view({"b1:8080": 10, "b2:8080": 95}, tops, loadBalancerDebugModeEnabled=True)
    )
    assert [(u.broker, u.bundle) for u in counted.unloads] == [(u.broker, u.bundle) for u in debug.unloads]
    assert counted.stats["loadStdAfter"] == debug.stats["loadStdAfter"]
    swapped = [u for u in counted.unloads if u.broker == "b1:8080"]
    assert swapped and all(u.destination == "b2:8080" for u in swapped)
    assert plain.stats["loadStdAfter"] != counted.stats["loadStdAfter"]


def test_load_stats_offload_keeps_the_average() -> None:
    stats = LoadStats(sorted_brokers=["a", "b"], max_per_cycle=3)
    stats.max_index = 1
    stats.set(1.0, 0.1**2 + 0.9**2, 2)
    assert stats.avg == 0.5 and abs(stats.std - 0.4) < 1e-12
    stats.offload(0.9, 0.1, 0.4)
    assert abs(stats.std) < 1e-9 and stats.min_index == 1 and not stats.has_transferable_brokers()
