"""Placement strategies on Pulsar's ModularLoadManagerStrategyTest and LeastResourceUsageWithWeightTest."""

import math
import random
import warnings

import pytest

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance.placement.strategies import (
    ResourceUsageHistory,
    RoundRobinState,
    select_extensible_least_resource_usage_with_weight,
    select_least_long_term_message_rate,
    select_least_resource_usage_with_weight,
    select_min_score,
    select_round_robin,
)
from brokerlb.loadbalance.placement.strategies.least_resource_usage_with_weight import (
    restarts_history,
    weighted_usage,
)
from brokerlb.loadbalance.placement.strategies.round_robin import JAVA_INT_MAX
from brokerlb.model import BrokerData, BrokerLoadData, LocalBrokerData, ResourceUsage, ResourceWeights
from brokerlb.testing import broker_load


def usage_broker(percent: float, *, bundles: bool = True) -> BrokerData:
    u = lambda: ResourceUsage(percent, 100)  # noqa: E731
    local = LocalBrokerData(
        cpu=u(),
        memory=u(),
        direct_memory=u(),
        bandwidth_in=u(),
        bandwidth_out=u(),
        msg_rate_in=100.0,
        msg_rate_out=100.0,
        bundles={"0x00000000_0xffffffff"} if bundles else set(),
    )
    return BrokerData(local)


def test_least_long_term_message_rate() -> None:
    brokers = {name: BrokerData(LocalBrokerData()) for name in ("1", "2", "3")}
    for name, rate in (("1", 100), ("2", 200), ("3", 300)):
        brokers[name].time_average_data.long_term_msg_rate_in = rate

    def pick() -> str | None:
        return select_least_long_term_message_rate(
            list(brokers), brokers, overload_threshold=0.85, weights=ResourceWeights(), rng=random.Random(0)
        )

    assert pick() == "1"
    brokers["1"].time_average_data.long_term_msg_rate_in = 400
    assert pick() == "2"
    brokers["2"].local_data.cpu = ResourceUsage(90, 100)
    assert pick() == "3"


def test_min_score_ties_and_all_overloaded_are_random_but_seeded() -> None:
    scores = {"a": 1.0, "b": 1.0, "c": 2.0}
    picks = {select_min_score(list(scores), scores, random.Random(seed)) for seed in range(20)}
    assert picks == {"a", "b"}
    inf = {"a": math.inf, "b": math.inf}
    assert {select_min_score(list(inf), inf, random.Random(seed)) for seed in range(20)} == {"a", "b"}
    assert {select_min_score(["a", "z"], {}, random.Random(seed)) for seed in range(20)} == {"a", "z"}
    assert select_min_score([], inf, random.Random(0)) is None
    assert select_min_score(["a", "b"], scores, random.Random(5)) == select_min_score(
        ["a", "b"], scores, random.Random(5)
    )


@pytest.fixture
def lruww_conf() -> ServiceConfig:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ServiceConfig(
            loadBalancerCPUResourceWeight=1.0,
            loadBalancerMemoryResourceWeight=0.1,
            loadBalancerDirectMemoryResourceWeight=0.1,
            loadBalancerHistoryResourcePercentage=0.5,
            loadBalancerAverageResourceUsageDifferenceThresholdPercentage=5,
        )


def test_least_resource_usage_with_weight(lruww_conf: ServiceConfig) -> None:
    """Pulsar's testLeastResourceUsageWithWeight, step by step, with its EMA memory."""
    weights = ResourceWeights.from_config(lruww_conf)
    data = {"1": usage_broker(10), "2": usage_broker(30), "3": usage_broker(60), "4": usage_broker(5)}
    history = ResourceUsageHistory()
    rng = random.Random(0)

    def pick(candidates: list[str]) -> str | None:
        return select_least_resource_usage_with_weight(
            candidates,
            history,
            samples={b: (weighted_usage(d, weights), restarts_history(d)) for b, d in data.items()},
            history_percentage=0.5,
            diff_threshold=0.05,
            rng=rng,
        )

    pick(["1", "2", "3", "4"])  # broker 4 gets an EMA
    candidates = ["1", "2", "3"]
    assert pick(candidates) == "1"
    for usages, expected in (
        ((20, 30, 50), "1"),
        ((30, 30, 40), "1"),
        ((30, 30, 40), "1"),
        ((35, 20, 45), "2"),
    ):
        data.update({b: usage_broker(u) for b, u in zip(candidates, usages, strict=True)})
        assert pick(candidates) == expected
    assert history.ema["1"] == pytest.approx(0.30625, abs=1e-6)
    assert history.ema["2"] == pytest.approx(0.25, abs=1e-6)
    # a restarted broker (no bundles) restarts its EMA at the current usage and becomes the best
    data.update({"1": usage_broker(35), "2": usage_broker(20), "3": usage_broker(0, bundles=False)})
    assert pick(candidates) == "3"
    assert history.ema["3"] == 0.0


def test_least_resource_usage_with_weight_uses_injected_history(lruww_conf: ServiceConfig) -> None:
    """Pulsar's testLeastResourceUsageWithWeightWithArithmeticException."""
    weights = ResourceWeights.from_config(lruww_conf)
    data = {"1": usage_broker(10), "2": usage_broker(30), "3": usage_broker(60), "4": usage_broker(5)}
    history = ResourceUsageHistory({"1": 0.1, "2": 0.3, "4": 0.05})
    broker = select_least_resource_usage_with_weight(
        ["1", "2", "3"],
        history,
        samples={b: (weighted_usage(d, weights), restarts_history(d)) for b, d in data.items()},
        history_percentage=0.5,
        diff_threshold=0.05,
        rng=random.Random(0),
    )
    assert broker == "1"
    history.forget_inactive(["1", "2", "3"])
    assert "4" not in history.ema
    assert ResourceUsageHistory.from_json(history.to_json()) == history


def test_extensible_least_resource_usage_with_weight() -> None:
    """Pulsar's extensions LeastResourceUsageWithWeightTest.testNoLoadDataBrokers / testSelect."""
    loads: dict[str, BrokerLoadData] = {"1": broker_load(cpu=50), "2": broker_load(cpu=100)}

    def pick(seed: int = 0) -> str | None:
        return select_extensible_least_resource_usage_with_weight(
            ["1", "2", "5"], loads, diff_threshold=0.05, rng=random.Random(seed)
        )

    assert pick() == "1"
    loads["1"] = broker_load(cpu=100)
    assert {pick(seed) for seed in range(30)} == {"1", "2", "5"}
    loads.clear()
    assert {pick(seed) for seed in range(30)} == {"1", "2", "5"}
    assert (
        select_extensible_least_resource_usage_with_weight(
            [], loads, diff_threshold=0.05, rng=random.Random(0)
        )
        is None
    )


def test_round_robin() -> None:
    """Pulsar's testRoundRobinBrokerSelector, including the cache and the counter wrap."""
    state = RoundRobinState()
    assert select_round_robin([], state) is None and state.count == 0
    brokers = ["1", "2", "3"]
    for i in range(10):
        assert select_round_robin(brokers, state) == str(i % 3 + 1)
    for i in range(10, 20):
        assert select_round_robin(["2", "3", "1"], state) == str(i % 3 + 1)  # same size: cached order
    assert [select_round_robin(["1", "2", "4"], state) for _ in range(6)] == ["4", "1", "2", "4", "1", "2"]
    assert [select_round_robin(["2", "4"], state) for _ in range(4)] == ["2", "4", "2", "4"]
    state.count = JAVA_INT_MAX
    assert select_round_robin(brokers, state) == str(JAVA_INT_MAX % 3 + 1)
    assert state.count == 0
    assert RoundRobinState.from_json(state.to_json()) == state


def test_least_resource_usage_with_weight_forgets_brokers_that_left() -> None:
    from brokerlb.loadbalance.placement.strategies import LeastResourceUsageWithWeight
    from brokerlb.loadbalance.state import StrategyState
    from brokerlb.loadbalance.view import ClusterView
    from brokerlb.testing import broker, load_data

    state = StrategyState()
    strategy = LeastResourceUsageWithWeight()
    three = ClusterView(
        load_data=load_data([broker("b1", cpu=10), broker("b2", cpu=20), broker("b3", cpu=30)])
    )
    strategy.select_broker(three, ["b1", "b2", "b3"], "t/n/0x00000000_0xffffffff", state, random.Random(0))
    history = state.find(strategy.class_name)
    assert set(history.ema) == {"b1", "b2", "b3"}
    two = ClusterView(load_data=load_data([broker("b1", cpu=10), broker("b2", cpu=20)]))
    strategy.select_broker(two, ["b1", "b2"], "t/n/0x00000000_0xffffffff", state, random.Random(0))
    assert set(history.ema) == {"b1", "b2"}
