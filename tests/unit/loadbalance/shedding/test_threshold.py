"""ThresholdShedder: history across cycles, lower-boundary shedding, limits."""

from brokerlb.loadbalance import StrategyState
from brokerlb.loadbalance.shedding.threshold import ThresholdShedder, ThresholdShedderState
from tests.unit.loadbalance.shedding.helpers import heavy, shed, skip_reason, unloads, view

A, B, C = "t/ns/0x00000000_0x40000000", "t/ns/0x40000000_0x80000000", "t/ns/0x80000000_0xffffffff"
X, Y = "t/x/0x00000000_0x80000000", "t/x/0x80000000_0xffffffff"


def history(state: StrategyState) -> dict[str, float]:
    return state.get(ThresholdShedder.class_name, ThresholdShedderState).history


def test_worked_example_and_history_over_cycles() -> None:
    state = StrategyState()
    first = view([heavy("b1:8080", 80, {A: 30, B: 20, C: 10}), heavy("b2:8080", 20, {X: 5, Y: 5})])
    result = shed("ThresholdShedder", first, state)
    assert history(state) == {"b1:8080": 0.8, "b2:8080": 0.2}
    assert result.stats["avgUsage"] == 0.5
    # 0.8 >= 0.5 + 0.1: offload (0.8 - 0.5 - 0.1 + 0.05) of 60 MB/s = 15 MB/s -> the 30 MB/s bundle
    assert unloads(result) == [("b1:8080", A)]
    # next cycle b1 is at 40 %, b2 at 60 %: history still says b1 is hot (0.76 vs 0.24)
    second = view([heavy("b1:8080", 40, {A: 30, B: 20, C: 10}), heavy("b2:8080", 60, {X: 5, Y: 5})])
    result = shed("ThresholdShedder", second, state)
    assert history(state)["b1:8080"] == 0.8 * 0.9 + 0.1 * 0.4
    assert [b for b, _ in unloads(result)] == ["b1:8080"]


def test_below_minimum_throughput_is_skipped() -> None:
    v = view([heavy("b1:8080", 80, {A: 3, B: 2}), heavy("b2:8080", 20, {X: 1, Y: 1})])
    assert skip_reason(shed("ThresholdShedder", v)) == "BelowThreshold"


def test_zero_average_and_no_brokers() -> None:
    assert skip_reason(shed("ThresholdShedder", view([heavy("b1:8080", 0, {A: 1})]))) == "Balanced"
    assert skip_reason(shed("ThresholdShedder", view([]))) == "Balanced"


def test_usage_above_100_percent_ignores_the_broken_signal() -> None:
    # cpu 1000 % (a wrong limit) is ignored; bandwidth 0 -> usage 0 instead of 10.0
    state = StrategyState()
    shed("ThresholdShedder", view([heavy("b1:8080", 1000, {A: 1}), heavy("b2:8080", 50, {X: 1})]), state)
    assert history(state) == {"b1:8080": 0.0, "b2:8080": 0.5}


def test_lower_boundary_shedding() -> None:
    # 10 brokers at 80 %, one idle: avg 72.7 % + 10 > 80, nothing is shed (apache/pulsar#17456) ...
    brokers = [
        heavy(f"b{i}:8080", 80, {f"t/n{i}/0x00000000_0x80000000": 100, f"t/n{i}/0x80000000_0xffffffff": 100})
        for i in range(10)
    ]
    brokers.append(heavy("idle:8080", 0, {}))
    assert skip_reason(shed("ThresholdShedder", view(brokers))) == "Balanced"
    # ... unless lower-boundary shedding is on: the busiest broker sheds threshold * 0.5 of its traffic
    result = shed("ThresholdShedder", view(brokers, lowerBoundarySheddingEnabled=True))
    assert len(result.unloads) == 1 and result.unloads[0].reason.value == "Underloaded"


def test_lower_boundary_advances_history_twice_unless_the_option_says_once() -> None:
    brokers = [
        heavy("b1:8080", 80, {A: 100, B: 100}),
        heavy("b2:8080", 80, {X: 100, Y: 100}),
        heavy("idle:8080", 0, {}),
    ]
    for option, expected_calls in ((False, 2), (True, 1)):
        state = StrategyState()
        state.get(ThresholdShedder.class_name, ThresholdShedderState).history.update(
            {"b1:8080": 0.5, "b2:8080": 0.5, "idle:8080": 0.5}
        )
        shed(
            "ThresholdShedder",
            view(
                brokers, lowerBoundarySheddingEnabled=True, brokerlbThresholdShedderSingleHistoryUpdate=option
            ),
            state,
        )
        expected = 0.5
        for _ in range(expected_calls):
            expected = expected * 0.9 + 0.1 * 0.8
        assert history(state)["b1:8080"] == expected


def test_recently_unloaded_and_single_bundle() -> None:
    v = view([heavy("b1:8080", 90, {A: 40, B: 30}), heavy("b2:8080", 10, {X: 1, Y: 1})], recently={A: 1})
    assert unloads(shed("ThresholdShedder", v)) == [("b1:8080", B)]
    v = view([heavy("b1:8080", 90, {A: 40}), heavy("b2:8080", 10, {X: 1, Y: 1})])
    assert skip_reason(shed("ThresholdShedder", v)) == "SingleBundle"
