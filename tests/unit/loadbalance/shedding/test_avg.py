"""AvgShedder: pairs, hit counts, binding shed bundles to their destination."""

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance import ClusterView, StrategyState, new_rng
from brokerlb.loadbalance.registry import StrategyKind, create
from brokerlb.loadbalance.shedding.avg import AvgShedder, AvgShedderState
from brokerlb.testing import broker, bundle_data, load_data
from tests.unit.loadbalance.shedding.helpers import NOW, shed, skip_reason

BUNDLES = [f"t/ns/0x{i:08x}_0x{i + 1:08x}" for i in range(11)]


def _view(cpus: dict[str, float], rates: dict[str, float], owner: str = "b1:8080", **conf) -> ClusterView:
    brokers = {
        b: broker(
            b, cpu=c, bundles=BUNDLES if b == owner else [], msg_rate_in=rates[b], msg_rate_out=rates[b]
        )
        for b, c in cpus.items()
    }
    histories = {b: bundle_data(msg_rate_in=450, msg_rate_out=450) for b in BUNDLES}
    conf.setdefault("maxUnloadPercentage", 0.5)
    return ClusterView(
        config=ServiceConfig(**conf),
        now_ms=NOW,
        load_data=load_data(brokers, histories, history_from_stats=False),
    )


def test_high_hits_then_shed_and_place_on_the_paired_broker() -> None:
    v = _view(
        {"b1:8080": 80, "b2:8080": 30, "b3:8080": 50}, {"b1:8080": 10000, "b2:8080": 1000, "b3:8080": 5000}
    )
    state = StrategyState()
    first = shed("AvgShedder", v, state)
    assert skip_reason(first) == "HitCount" and first.stats["pairs"] == [["b2:8080", "b1:8080"]]
    second = shed("AvgShedder", v, state)
    assert len(second.unloads) == 10 and {d.broker for d in second.unloads} == {"b1:8080"}
    placement = create(StrategyKind.PLACEMENT, "AvgShedder")
    for decision in second.unloads:
        assert placement.select_broker(v, v.available_brokers, decision.bundle, state, new_rng()) == "b2:8080"
    memory = state.get(AvgShedder.class_name, AvgShedderState)
    assert memory.high_hits == {} and memory.low_hits == {}


def test_small_gap_clears_counters_and_no_pair() -> None:
    v = _view({"b1:8080": 50, "b2:8080": 45}, {"b1:8080": 10000, "b2:8080": 1000})
    state = StrategyState()
    state.get(AvgShedder.class_name, AvgShedderState).low_hits.update({"b1:8080": 5, "b2:8080": 5})
    assert skip_reason(shed("AvgShedder", v, state)) == "Balanced"
    assert state.get(AvgShedder.class_name, AvgShedderState).low_hits == {}


def test_pair_acts_but_nothing_worth_moving() -> None:
    v = _view(
        {"b1:8080": 90, "b2:8080": 10},
        {"b1:8080": 600, "b2:8080": 500},
        loadBalancerAvgShedderHitCountHighThreshold=1,
    )
    assert skip_reason(shed("AvgShedder", v)) == "BelowThreshold"


def test_placement_of_an_unbound_bundle_is_seeded_and_remembered() -> None:
    v = _view({"b1:8080": 10, "b2:8080": 10, "b3:8080": 10}, {"b1:8080": 1, "b2:8080": 1, "b3:8080": 1})
    strategy = AvgShedder()
    picks = {
        strategy.select_broker(v, v.available_brokers, BUNDLES[0], StrategyState(), new_rng(7))
        for _ in range(5)
    }
    assert len(picks) == 1  # same seed, same broker
    state = StrategyState()
    first = strategy.select_broker(v, v.available_brokers, BUNDLES[0], state, new_rng(1))
    assert strategy.select_broker(v, v.available_brokers, BUNDLES[0], state, new_rng(2)) == first
    assert strategy.select_broker(v, [], BUNDLES[0], state, new_rng(2)) is None
    # the bound broker is gone: choose again among the candidates
    others = [b for b in v.available_brokers if b != first]
    assert strategy.select_broker(v, others, BUNDLES[0], state, new_rng(3)) in others


def test_scores_less_than_one_point_apart_keep_map_order() -> None:
    v = _view({"b1:8080": 50.4, "b2:8080": 50.0, "b3:8080": 49.7}, {"b1:8080": 1, "b2:8080": 1, "b3:8080": 1})
    result = shed("AvgShedder", v)
    # (int)(s1 - s2) == 0 for every pair: Java's stable sort keeps the HashMap order
    assert result.stats["sortedBrokers"] == list(v.modular_broker_order)
