"""brokerlb's balancer through the leader's shedding loop: worked examples and each rule."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from brokerlb.loadbalance import NamespaceIsolationData, NamespacePolicy, StrategyState, new_rng
from brokerlb.loadbalance.balancer.memory import MEMORY_KEY, BalancerMemory
from brokerlb.loadbalance.decisions import Label, Reason
from brokerlb.loadbalance.placement.pipeline import select_broker_for_assignment
from brokerlb.loadbalance.policies import AutoFailoverPolicy
from brokerlb.loadbalance.registry import BROKERLB_BALANCER, StrategyKind, resolve
from tests.unit.loadbalance.balancer.helpers import NOW, cluster, cycle, moves, node, watched

A1, A2 = "t/a/0x00000000_0x40000000", "t/a/0x40000000_0x80000000"
B1, C1 = "t/b/0x00000000_0x40000000", "t/c/0x00000000_0xffffffff"
D1, D2 = "t/d/0x00000000_0x80000000", "t/d/0x80000000_0xffffffff"
E1, E2 = "t/e/0x00000000_0x80000000", "t/e/0x80000000_0xffffffff"


def three_brokers(**conf):
    """The module docstring's example: 80 / 60 / 40 % cpu; b1 holds bundles of 10, 8, 5 and 57 points
    (target tolerance 0.03, as in the example)."""
    conf.setdefault("brokerlbBalancerTargetTolerance", 0.03)
    return cluster(
        [
            node("b1:8080", {A1: 10, A2: 8, B1: 5, C1: 57}),
            node("b2:8080", {D1: 30, D2: 30}),
            node("b3:8080", {E1: 20, E2: 20}),
        ],
        **conf,
    )


def test_registered_as_brokerlb_for_shedding_and_placement() -> None:
    assert resolve(StrategyKind.SHEDDING, "brokerlb").class_name == BROKERLB_BALANCER
    assert resolve(StrategyKind.PLACEMENT, "brokerlb").class_name == BROKERLB_BALANCER
    assert not resolve(StrategyKind.SHEDDING, "brokerlb").extensible


def test_worked_example_two_transfers_reach_the_band() -> None:
    result = cycle(three_brokers())
    assert moves(result) == [("b1:8080", A1, "b3:8080"), ("b1:8080", A2, "b3:8080")]
    assert {d.reason for d in result.unloads} == {Reason.OVERLOADED}
    first = result.unloads[0].detail
    assert "b1:8080 load 0.800 -> 0.700 (target <= 0.618)" in first
    assert "b3:8080 0.400 -> 0.500 (band [0.540, 0.618])" in first
    assert "objective gain 0.2000" in first and "budget used 1/100 moves" in first
    stats = result.stats
    assert stats["balancedLoad"] == pytest.approx(0.6)
    assert (stats["busiestBefore"], stats["busiestAfter"]) == (pytest.approx(0.8), pytest.approx(0.62))
    assert (stats["objectiveBefore"], stats["objectiveAfter"]) == (pytest.approx(0.322), pytest.approx(0.002))
    assert stats["moves"] == 2 and stats["movedMbytes"] == pytest.approx(18.0)


def test_a_balanced_cluster_says_so() -> None:
    result = cycle(cluster([node("b1:8080", {A1: 30, A2: 31}), node("b2:8080", {D1: 30, D2: 30})]))
    (skip,) = result.decisions
    assert (skip.label, skip.reason) == (Label.SKIP, Reason.BALANCED)
    assert "every broker inside the band" in skip.detail and "busiest 0.610" in skip.detail


def test_pending_moves_count_until_the_reports_show_them() -> None:
    state = StrategyState()
    view = three_brokers()
    first = cycle(view, state)
    assert len(first.unloads) == 2
    # the same (stale) reports one cycle later: the moves are still pending, nothing more to do
    again = cycle(replace(view, now_ms=NOW + 60_000), state)
    assert again.unloads == [] and again.stats["pendingMoves"] == 2
    assert again.stats["busiestBefore"] == pytest.approx(0.62)
    # the reports show the moves: nothing pending any more
    moved = cluster(
        [
            node("b1:8080", {B1: 5, C1: 57}),
            node("b2:8080", {D1: 30, D2: 30}),
            node("b3:8080", {E1: 20, E2: 20, A1: 10, A2: 8}),
        ],
        now=NOW + 120_000,
    )
    settled = cycle(moved, state)
    assert settled.unloads == [] and settled.stats["pendingMoves"] == 0


def test_a_moved_bundle_counts_on_its_destination_until_its_traffic_shows_there() -> None:
    # the destination lists the moved bundles at once, with no rate yet (their topics just opened
    # there): the moved load still counts on it, and nothing else is moved onto it meanwhile
    state = StrategyState()
    first = cycle(three_brokers(), state)
    assert moves(first) == [("b1:8080", A1, "b3:8080"), ("b1:8080", A2, "b3:8080")]
    unmeasured = cluster(
        [
            node("b1:8080", {B1: 5, C1: 57}),
            node("b2:8080", {D1: 30, D2: 30}),
            node("b3:8080", {E1: 20, E2: 20, A1: 0, A2: 0}),
        ],
        now=NOW + 5_000,
        recently={A1: NOW, A2: NOW},
        brokerlbBalancerTargetTolerance=0.03,
    )
    again = cycle(unmeasured, state)
    assert again.unloads == [] and again.stats["pendingMoves"] == 2
    assert again.stats["busiestBefore"] == pytest.approx(0.62)
    measured = cluster(
        [
            node("b1:8080", {B1: 5, C1: 57}),
            node("b2:8080", {D1: 30, D2: 30}),
            node("b3:8080", {E1: 20, E2: 20, A1: 10, A2: 8}),
        ],
        now=NOW + 10_000,
        recently={A1: NOW, A2: NOW},
        brokerlbBalancerTargetTolerance=0.03,
    )
    settled = cycle(measured, state)
    assert settled.unloads == [] and settled.stats["pendingMoves"] == 0


def test_a_move_the_leader_did_not_carry_out_is_forgotten() -> None:
    # the leader records every move it carried out (recentlyUnloadedBundles); one it did not --
    # its source no longer owned the bundle, the owner refused -- is not pending the next cycle
    state = StrategyState()
    view = three_brokers()
    first = cycle(view, state, carried_out=False)
    assert len(first.unloads) == 2
    memory = state.get(MEMORY_KEY, BalancerMemory)
    assert set(memory.pending) == {A1, A2} and memory.bindings
    again = cycle(replace(view, now_ms=NOW + 60_000), state, carried_out=False)
    assert moves(again) == moves(first)  # planned again: nothing moved
    assert again.stats["busiestBefore"] == pytest.approx(0.8)


def test_never_moves_a_bundle_twice_within_the_grace_period_nor_back_where_it_was() -> None:
    state = StrategyState()
    memory = state.get(MEMORY_KEY, BalancerMemory)
    memory.last_moved[A1] = NOW - 60_000  # moved a minute ago
    memory.left[A2] = {"b3:8080": NOW - 40 * 60_000}  # came from b3 40 minutes ago
    result = cycle(three_brokers(), state)
    assert A1 not in [d.bundle for d in result.unloads]
    assert all(d.destination != "b3:8080" for d in result.unloads if d.bundle == A2)
    recently = cycle(three_brokers(recently=None), StrategyState())
    assert len(recently.unloads) == 2
    grace = cycle(
        cluster(
            [
                node("b1:8080", {A1: 10, A2: 8, B1: 5, C1: 57}),
                node("b2:8080", {D1: 30, D2: 30}),
                node("b3:8080", {E1: 20, E2: 20}),
            ],
            recently={A1: NOW - 60_000, A2: NOW - 60_000},
        )
    )
    assert {d.bundle for d in grace.unloads} & {A1, A2} == set()


def test_isolation_policy_that_pins_a_namespace_keeps_its_bundles() -> None:
    pinned = NamespaceIsolationData(("t/a",), ("b1",), (), AutoFailoverPolicy(min_limit=1))
    view = replace(three_brokers(), isolation_policies={"pin": pinned})
    result = cycle(view)
    assert {d.bundle for d in result.unloads} & {A1, A2} == set()
    assert result.unloads  # other bundles still move


def test_anti_affinity_group_spread_is_respected() -> None:
    # t/a and t/e are one group: t/a's bundles may not go to b3, which holds t/e
    view = replace(
        three_brokers(),
        namespace_policies={"t/a": NamespacePolicy("g"), "t/e": NamespacePolicy("g")},
    )
    result = cycle(view)
    assert all(not (d.bundle in (A1, A2) and d.destination == "b3:8080") for d in result.unloads)


def test_budgets_are_never_exceeded() -> None:
    one = cycle(three_brokers(brokerlbBalancerMaxMovesPerCycle=1))
    assert len(one.unloads) == 1 and one.stats["budget"]["moves"] == 1
    per_broker = cycle(three_brokers(brokerlbBalancerMaxMovesPerBrokerPerCycle=1))
    assert len(per_broker.unloads) == 1
    small = cycle(three_brokers(brokerlbBalancerMaxMovedMbytesPerBrokerPerCycle=9))
    assert all(d.bundle not in (A1,) for d in small.unloads)  # 10 MB/s does not fit 9
    assert sum(8 if d.bundle == A2 else 5 for d in small.unloads) <= 9


def test_hysteresis_no_move_below_the_minimum_improvement() -> None:
    result = cycle(three_brokers(brokerlbBalancerMinImprovement=0.5))
    assert result.unloads == []
    (skip,) = result.decisions
    assert skip.reason is Reason.BELOW_THRESHOLD and "minimum improvement" in skip.detail


def test_a_new_broker_is_filled() -> None:
    busy = {f"t/n{i}/0x00000000_0xffffffff": 8.0 for i in range(9)}
    view = cluster(
        [
            node("b1:8080", dict(list(busy.items())[:5])),
            node("b2:8080", dict(list(busy.items())[5:])),
            node("b3:8080", {}),
        ]
    )
    result = cycle(view)
    assert {d.destination for d in result.unloads} == {"b3:8080"}
    assert result.stats["busiestAfter"] < result.stats["busiestBefore"]
    assert any(d.reason is Reason.UNDERLOADED for d in result.unloads) or len(result.unloads) >= 2


def test_heterogeneous_brokers_balance_relative_to_capacity() -> None:
    # a 4-core and a 1-core broker, each at 50 points: 12.5 % and 50 %
    big = {f"t/h/0x{i:x}0000000_0x{i + 1:x}0000000": 5.0 for i in range(10)}
    small = {f"t/s/0x{i:x}0000000_0x{i + 1:x}0000000": 5.0 for i in range(10)}
    view = cluster([node("big:8080", big, cores=4), node("small:8080", small, cores=1)])
    result = cycle(view)
    assert {(d.broker, d.destination) for d in result.unloads} == {("small:8080", "big:8080")}
    assert result.stats["balancedLoad"] == pytest.approx(0.2)


def test_a_bundle_too_hot_for_any_broker_is_split_not_moved() -> None:
    hot = "t/hot/0x00000000_0x80000000"
    view = cluster(
        [node("b1:8080", {hot: 70, A1: 10}), node("b2:8080", {D1: 10, D2: 10})],
    )
    result = cycle(view)
    (split,) = result.splits
    assert split.bundle == hot and split.reason is Reason.OVER_TARGET
    assert split.boundaries == (0x40000000,)  # range_equally_divide
    assert hot not in [d.bundle for d in result.unloads]
    single = cluster([node("b1:8080", {hot: 70, A1: 10}, topics=1), node("b2:8080", {D1: 10, D2: 10})])
    (skipped,) = cycle(single).split_decisions
    assert (skipped.label, skipped.reason) == (Label.SKIP, Reason.SINGLE_TOPIC)


def test_cold_neighbours_merge_when_the_namespace_has_more_bundles_than_it_needs() -> None:
    cold = {f"t/cold/0x{i:x}0000000_0x{i + 1:x}0000000": 0.01 for i in range(8)}
    cold["t/cold/0x80000000_0xffffffff"] = 0.01
    view = cluster([node("b1:8080", {**cold, A1: 30}), node("b2:8080", {D1: 30})])
    fresh = cycle(view)  # a new leader merges nothing until it has watched the ring for the cool-down
    assert fresh.merges == [] and fresh.unloads == []
    result = cycle(view, watched())
    assert result.unloads == []
    merges = result.merges
    assert len(merges) == 2 and merges[0].bundles == (
        "t/cold/0x00000000_0x10000000",
        "t/cold/0x10000000_0x20000000",
    )
    assert merges[0].reason is Reason.COLD_BUNDLES and merges[0].merged == "t/cold/0x00000000_0x20000000"
    off = cycle(
        replace(view, config=view.config.with_overrides({"brokerlbBalancerMergeColdBundles": False})),
        watched(),
    )
    assert off.merges == []


def test_placement_takes_the_least_loaded_candidate_and_keeps_bindings() -> None:
    view = replace(
        three_brokers(),
        config=three_brokers().config.with_overrides({"loadBalancerLoadPlacementStrategy": "brokerlb"}),
    )
    state = StrategyState()
    decision = select_broker_for_assignment(view, "t/new/0x00000000_0xffffffff", state, new_rng())
    assert decision.broker == "b3:8080"
    state.get(MEMORY_KEY, BalancerMemory).bindings["t/new/0x00000000_0xffffffff"] = "b2:8080"
    bound = select_broker_for_assignment(view, "t/new/0x00000000_0xffffffff", state, new_rng())
    assert bound.broker == "b2:8080"
    # a split child goes where its parent's load is (b1 reports the parent t/c)
    child = select_broker_for_assignment(view, "t/c/0x00000000_0x80000000", StrategyState(), new_rng())
    assert child.broker == "b1:8080"


def test_same_seed_same_plan() -> None:
    a = cycle(three_brokers(), StrategyState(), seed=3)
    b = cycle(three_brokers(), StrategyState(), seed=3)
    assert a.to_json() == b.to_json()


def test_no_merge_the_balancer_would_split_again_for_load() -> None:
    # small brokers (10 points each): two adjacent cold bundles of 2 points (20 % each, fill 0.02
    # of the split thresholds) would merge by fill, but the merged 40 % is above half the load the
    # balancer splits at (the target 0.42): merged, it would be split again -- the live flap
    # split -> merge -> split of bench_balancer_live
    from brokerlb.loadbalance.balancer.model import ClusterModel
    from brokerlb.loadbalance.balancer.ring_changes import plan_merges

    cold = [f"t/cold/0x{i:x}0000000_0x{i + 1:x}0000000" for i in range(8)] + ["t/cold/0x80000000_0xffffffff"]
    view = cluster(
        [
            node("b1:8080", {cold[0]: 2, cold[1]: 2}, cores=0.1),
            node("b2:8080", {cold[2]: 0.75, cold[4]: 0.75, cold[6]: 0.75, cold[8]: 0.75, D1: 1}, cores=0.1),
            node("b3:8080", {cold[3]: 1, cold[5]: 1, cold[7]: 1, D2: 1}, cores=0.1),
        ]
    )
    result = cycle(view, watched())
    assert result.unloads == [] and result.merges == [] and result.splits == []
    model = ClusterModel.build(view, BalancerMemory())
    movable = np.ones(len(model.bundles), dtype=bool)
    by_fill = plan_merges(view, model, movable, limit=2, conf=view.config)
    assert [m.bundles for m in by_fill] == [(cold[0], cold[1])]  # the fill alone allows it
    by_load = plan_merges(
        view, model, movable, limit=2, conf=view.config, loads=model.lightest_contributions(), max_load=0.5
    )
    assert [m.bundles for m in by_load] == [(cold[0], cold[1])] and "merged load 0.4000 <= 0.5000" in by_load[
        0
    ].detail
    assert (
        plan_merges(
            view,
            model,
            movable,
            limit=2,
            conf=view.config,
            loads=model.lightest_contributions(),
            max_load=0.3,
        )
        == []
    )
