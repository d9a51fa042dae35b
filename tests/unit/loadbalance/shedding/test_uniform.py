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
    # 1999 - int(1998.9) = 1 (Java's MutableInt); 1000.95 <= 1 + 1000 then fits too (with exact
    # arithmetic the need would be 0.1 and 1000.95 > 1000.1 would not)
    v = _view({"b1:8080": 10000, "b2:8080": 0}, {"b1:8080": {A: 1998.9, B: 1000.95, C: 5000}})
    assert [b for _, b in unloads(shed("UniformLoadShedder", v))] == [A, B]


# Pulsar rule (UniformLoadShedder since apache/pulsar 01b54f3c): bundles without traffic are no
# candidates (``bundle load > 0``), and a bundle moves when ``bundle <= remaining need + 1000``,
# in the message-rate and in the throughput mode alike.

FIVE = [f"t/ns/0x{i:08x}_0x{i + 1:08x}" for i in range(5)]


def _two_brokers(rate: bool, **conf) -> ClusterView:
    """Pulsar's testFilterOutNonTrafficBundlesForUnloading: brokers at 10,000 / 100,000 msg/s
    (10 / 100 MB/s); the busy broker's bundles at 60,000 / 20,000 / 20,000 / 0 / 0 msg/s."""
    mb = 1024 * 1024
    shares = [60_000, 20_000, 20_000, 0, 0]
    brokers = {
        "b0:8080": broker(
            "b0:8080", bundles=["t/idle/0x00000000_0xffffffff"], msg_rate_in=10_000, msg_throughput_in=10 * mb
        ),
        "b1:8080": broker("b1:8080", bundles=FIVE, msg_rate_in=100_000, msg_throughput_in=100 * mb),
    }
    histories = {"t/idle/0x00000000_0xffffffff": bundle_data(msg_rate_in=10_000, msg_throughput_in=10 * mb)}
    for bundle, share in zip(FIVE, shares, strict=True):
        histories[bundle] = bundle_data(msg_rate_in=share, msg_throughput_in=share / 1000 * mb)
    thresholds = (
        {
            "loadBalancerMsgRateDifferenceShedderThreshold": 50,
            "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold": 0,
        }
        if rate
        else {
            "loadBalancerMsgRateDifferenceShedderThreshold": 0,
            "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold": 2,
        }
    )
    return ClusterView(
        config=ServiceConfig(maxUnloadPercentage=0.5, maxUnloadBundleNumPerShedding=5, **thresholds, **conf),
        now_ms=NOW,
        load_data=load_data(brokers, histories, history_from_stats=False),
    )


def test_bundles_without_traffic_never_move_by_message_rate() -> None:
    # need int(90000 * 0.5) = 45000: 60000 > 46000 stays, 20000 fits (25000 left), 20000 fits
    # (5000 left); the two idle bundles would fit the need but are no candidates
    result = shed("UniformLoadShedder", _two_brokers(rate=True))
    assert result.stats["balanceBy"] == "msgRate" and result.stats["required"] == 45000
    assert unloads(result) == [("b1:8080", FIVE[1]), ("b1:8080", FIVE[2])]


def test_bundles_without_traffic_never_move_by_throughput() -> None:
    # need int(90 MB * 0.5) = 47185920 B/s: 60 MB stays, 20 MB and 20 MB fit, the idle ones are out
    result = shed("UniformLoadShedder", _two_brokers(rate=False))
    assert result.stats["balanceBy"] == "msgThroughput" and result.stats["required"] == 47185920
    assert unloads(result) == [("b1:8080", FIVE[1]), ("b1:8080", FIVE[2])]


def test_a_broker_whose_bundles_are_all_idle_sheds_nothing() -> None:
    v = _view({"b1:8080": 50000, "b2:8080": 0}, {"b1:8080": {A: 0.0, B: 0.0, C: 0.0}})
    result = shed("UniformLoadShedder", v)
    assert skip_reason(result) == "NoBundles" and "with traffic" in result.stats["skippedBrokers"]["b1:8080"]


def test_a_bundle_up_to_1000_above_the_need_still_moves() -> None:
    # need int((20000 - 4000) * 0.2) = 3200: 4200 = need + 1000 moves, 4201 does not
    v = _view({"b1:8080": 20000, "b2:8080": 4000}, {"b1:8080": {A: 4200, B: 9000}})
    assert unloads(shed("UniformLoadShedder", v)) == [("b1:8080", A)]
    v = _view({"b1:8080": 20000, "b2:8080": 4000}, {"b1:8080": {A: 4201, B: 9000}})
    assert skip_reason(shed("UniformLoadShedder", v)) == "NoBundles"


def test_a_saturated_need_wraps_when_the_margin_is_added_as_in_java() -> None:
    # by throughput, need int(20 GB/s * 0.2) saturates at 2**31 - 1; Java's int sum need + 1000
    # wraps to a negative number, so no bundle fits (Pulsar's behaviour, kept)
    gb = 1024**3
    v = _view(
        {"b1:8080": 1000, "b2:8080": 1000},
        {"b1:8080": {A: 1, B: 1}},
        tputs={"b1:8080": 20 * gb, "b2:8080": 1},
    )
    result = shed("UniformLoadShedder", v)
    assert result.stats["required"] == 2**31 - 1 and skip_reason(result) == "NoBundles"
