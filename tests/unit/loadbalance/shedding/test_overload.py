"""OverloadShedder: worked example and edge cases."""

from brokerlb.loadbalance import StrategyState
from tests.unit.loadbalance.shedding.helpers import heavy, shed, skip_reason, unloads, view

A, B, C = "t/ns/0x00000000_0x40000000", "t/ns/0x40000000_0x80000000", "t/ns/0x80000000_0xffffffff"


def test_worked_example_sheds_the_largest_bundle_until_under_threshold() -> None:
    v = view(
        [heavy("b1:8080", 90, {A: 60, B: 30, C: 10}), heavy("b2:8080", 40, {"t/x/0x00000000_0xffffffff": 5})]
    )
    result = shed("OverloadShedder", v)
    assert unloads(result) == [("b1:8080", A)]
    assert result.unloads[0].reason.value == "Overloaded"
    assert result.stats["brokerUsage"]["b1:8080"] == 0.9
    # as Pulsar's log line: the broker's resources by printResourceUsage()
    assert result.unloads[0].detail.endswith("; cpu: 90.00%, memory: 0.00%, directMemory: 0.00%, "
                                             "bandwidthIn: 0.00%, bandwidthOut: 0.00%")  # fmt: skip


def test_enough_bundles_to_cover_the_offload() -> None:
    # usage 0.99 -> 0.19 of 100 MB/s = 19 MB/s: 10 + 8 + 2 (largest first until >= 19)
    v = view([heavy("b1:8080", 99, {A: 10, B: 8, C: 2, "t/ns2/0x0_0x1": 80})])
    assert [b for _, b in unloads(shed("OverloadShedder", v))] == ["t/ns2/0x0_0x1"]


def test_single_bundle_no_bundle_and_no_overload() -> None:
    assert skip_reason(shed("OverloadShedder", view([heavy("b1:8080", 95, {A: 10})]))) == "SingleBundle"
    assert skip_reason(shed("OverloadShedder", view([heavy("b1:8080", 95, {})]))) == "NoBundles"
    assert skip_reason(shed("OverloadShedder", view([heavy("b1:8080", 50, {A: 1, B: 2})]))) == "Balanced"
    assert skip_reason(shed("OverloadShedder", view([]))) == "Balanced"


def test_recently_unloaded_bundles_are_skipped() -> None:
    v = view([heavy("b1:8080", 95, {A: 60, B: 30})], recently={A: 1})
    assert unloads(shed("OverloadShedder", v)) == [("b1:8080", B)]
    v = view([heavy("b1:8080", 95, {A: 60, B: 30})], recently={A: 1, B: 1})
    assert skip_reason(shed("OverloadShedder", v)) == "RecentlyUnloaded"


def test_all_brokers_overloaded_each_sheds() -> None:
    v = view(
        [heavy("b1:8080", 95, {A: 60, B: 30}), heavy("b2:8080", 96, {"t/y/0x0_0x1": 5, "t/y/0x1_0x2": 50})]
    )
    assert sorted(unloads(shed("OverloadShedder", v))) == [("b1:8080", A), ("b2:8080", "t/y/0x1_0x2")]


def test_system_bundles_never_move() -> None:
    v = view([heavy("b1:8080", 95, {"pulsar/system/0x00000000_0xffffffff": 90, A: 1})])
    assert unloads(shed("OverloadShedder", v)) == [("b1:8080", A)]


def test_no_memory_between_cycles() -> None:
    state = StrategyState()
    shed("OverloadShedder", view([heavy("b1:8080", 95, {A: 60, B: 30})]), state)
    assert len(state) == 0
