"""UniformLoadShedder: rate vs throughput, minimums, per-cycle cap, Java int arithmetic."""

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance import ClusterView
from brokerlb.testing import broker, bundle_data, load_data
from tests.unit.loadbalance.shedding.helpers import NOW, shed, skip_reason, unloads

A, B, C = "t/ns/0x00000000_0x40000000", "t/ns/0x40000000_0x80000000", "t/ns/0x80000000_0xffffffff"


def _view(
    rates: dict[str, float],
    bundles: dict[str, dict[str, float]],
    tputs: dict[str, float] | None = None,
    **conf,
) -> ClusterView:
    brokers = {
        name: broker(
            name,
            bundles=list(bundles.get(name, {})),
            msg_rate_in=rate,
            msg_rate_out=0.0,
            msg_throughput_in=(tputs or {}).get(name, 0.0),
            msg_throughput_out=0.0,
        )
        for name, rate in rates.items()
    }
    histories = {
        b: bundle_data(msg_rate_in=r, msg_throughput_in=r * 1000)
        for per in bundles.values()
        for b, r in per.items()
    }
    return ClusterView(
        config=ServiceConfig(**conf),
        now_ms=NOW,
        load_data=load_data(brokers, histories, history_from_stats=False),
    )


def test_worked_example_by_message_rate() -> None:
    v = _view({"b1:8080": 20000, "b2:8080": 4000}, {"b1:8080": {A: 5000, B: 3000, C: 150}})
    result = shed("UniformLoadShedder", v)
    assert unloads(result) == [("b1:8080", B), ("b1:8080", C)]
    assert result.stats["required"] == 3200 and result.stats["balanceBy"] == "msgRate"


def test_below_the_minimum_to_move() -> None:
    v = _view({"b1:8080": 3000, "b2:8080": 1000}, {"b1:8080": {A: 2000, B: 1000}})
    # (3000 - 1000) * 0.2 = 400 < minUnloadMessage 1000
    assert skip_reason(shed("UniformLoadShedder", v)) == "BelowThreshold"


def test_balanced_cluster() -> None:
    v = _view(
        {"b1:8080": 1200, "b2:8080": 1000},
        {"b1:8080": {A: 600, B: 600}},
        tputs={"b1:8080": 10, "b2:8080": 10},
    )
    assert skip_reason(shed("UniformLoadShedder", v)) == "Balanced"


def test_throughput_when_rates_are_even() -> None:
    mb = 1024 * 1024
    v = _view(
        {"b1:8080": 1000, "b2:8080": 1000},
        {"b1:8080": {A: 1, B: 1}},
        tputs={"b1:8080": 100 * mb, "b2:8080": 10 * mb},
    )
    # throughput 10x > 4x; histories give each bundle 1000 B/s, need int(90 MB * 0.2) -> both fit
    result = shed("UniformLoadShedder", v)
    assert result.stats["balanceBy"] == "msgThroughput" and len(result.unloads) == 2


def test_cap_per_cycle_and_single_bundle() -> None:
    bundles = {f"t/ns/0x{i:08x}_0x{i + 1:08x}": 100.0 for i in range(10)}
    v = _view({"b1:8080": 50000, "b2:8080": 0}, {"b1:8080": bundles}, maxUnloadBundleNumPerShedding=3)
    assert len(shed("UniformLoadShedder", v).unloads) == 3
    v = _view({"b1:8080": 50000, "b2:8080": 0}, {"b1:8080": {A: 50000}})
    assert skip_reason(shed("UniformLoadShedder", v)) == "SingleBundle"


def test_need_is_reduced_by_the_truncated_value() -> None:
    # min rate 0 counts as 1: need int((10000 - 1) * 0.2) = 1999; 1998.9 fits and leaves
    # 1999 - int(1998.9) = 1 (Java's MutableInt), so 0.9 fits too (with exact arithmetic it would not)
    v = _view({"b1:8080": 10000, "b2:8080": 0}, {"b1:8080": {A: 1998.9, B: 0.9, C: 5000}})
    assert [b for _, b in unloads(shed("UniformLoadShedder", v))] == [A, B]
