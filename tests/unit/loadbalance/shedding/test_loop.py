"""The leader's shedding loop: flags, one broker, grace period, policy checks, destinations."""

from __future__ import annotations

from dataclasses import replace

from brokerlb.loadbalance import NamespaceIsolationData, NamespacePolicy, StrategyState, new_rng
from brokerlb.loadbalance.decisions import Label, Reason, SheddingResult, UnloadDecision
from brokerlb.loadbalance.policies import AutoFailoverPolicy
from brokerlb.loadbalance.shedding.loop import prune_recently_unloaded, record_unloads, run_shedding_cycle
from tests.unit.loadbalance.shedding.helpers import NOW, heavy, view

A, B = "t/ns/0x00000000_0x80000000", "t/ns/0x80000000_0xffffffff"
C = "t/other/0x00000000_0xffffffff"


def cycle(v, strategy: str = "OverloadShedder") -> SheddingResult:
    return run_shedding_cycle(v, StrategyState(), new_rng(), strategy=strategy)


def hot_cluster(**conf):
    return view([heavy("b1:8080", 95, {A: 60, B: 30}), heavy("b2:8080", 10, {C: 1})], **conf)


def test_disabled_and_single_broker() -> None:
    (d,) = cycle(hot_cluster(loadBalancerSheddingEnabled=False)).decisions
    assert (d.label, d.reason, d.detail) == (Label.SKIP, Reason.DISABLED, "loadBalancerSheddingEnabled=false")
    (d,) = cycle(hot_cluster(loadBalancerEnabled=False)).decisions
    assert d.reason is Reason.DISABLED and "loadBalancerEnabled" in d.detail
    (d,) = cycle(view([heavy("b1:8080", 95, {A: 60, B: 30})])).decisions
    assert d.reason is Reason.SINGLE_BROKER


def test_unload_gets_a_destination_from_the_placement_pipeline() -> None:
    result = cycle(hot_cluster())
    (unload,) = result.unloads
    assert (unload.broker, unload.bundle, unload.destination) == ("b1:8080", A, "b2:8080")


def test_grace_period_prunes_old_entries_before_the_strategy_runs() -> None:
    grace_ms = 30 * 60_000
    fresh = cycle(
        view(
            [heavy("b1:8080", 95, {A: 60, B: 30}), heavy("b2:8080", 10, {C: 1})],
            recently={A: NOW - grace_ms + 1},
        )
    )
    assert [u.bundle for u in fresh.unloads] == [B]
    expired = cycle(
        view(
            [heavy("b1:8080", 95, {A: 60, B: 30}), heavy("b2:8080", 10, {C: 1})],
            recently={A: NOW - grace_ms - 1},
        )
    )
    assert [u.bundle for u in expired.unloads] == [A]
    assert prune_recently_unloaded({"x": 5, "y": 10}, 10) == {"y": 10}


def test_isolation_policy_that_pins_the_namespace_keeps_the_bundle() -> None:
    pinned = NamespaceIsolationData(("t/ns",), ("b1:8080",), (), AutoFailoverPolicy(min_limit=1))
    v = replace(hot_cluster(), isolation_policies={"pin": pinned})
    decisions = [d for d in cycle(v).decisions if d.bundle == A]
    assert [(d.label, d.reason) for d in decisions] == [(Label.SKIP, Reason.ISOLATION_POLICY)]


def test_anti_affinity_skip() -> None:
    # one namespace of the group on each broker: moving one cannot improve the spread
    v = view([heavy("b1:8080", 95, {A: 60, B: 30}), heavy("b2:8080", 10, {C: 1})])
    v = replace(v, namespace_policies={"t/ns": NamespacePolicy("g"), "t/other": NamespacePolicy("g")})
    decisions = [d for d in cycle(v).decisions if d.bundle == A]
    assert [(d.label, d.reason) for d in decisions] == [(Label.SKIP, Reason.ANTI_AFFINITY)]


def test_destination_equal_to_the_owner_is_skipped() -> None:
    # apache/pulsar#21722: b2 already serves more bundles of t/ns than b1, so "distribute bundles
    # evenly" leaves only b1 as a candidate and the bundle would land back where it was
    # (ThresholdShedder: b1 is above the average but not overloaded, so no overload re-check)
    others = {f"t/ns/0x{i:x}0000000_0x{i:x}8000000": 1 for i in range(1, 4)}
    v = view([heavy("b1:8080", 60, {A: 60, B: 30}), heavy("b2:8080", 10, others)])
    (decision,) = [d for d in cycle(v, "ThresholdShedder").decisions if d.bundle == A]
    assert (decision.label, decision.reason) == (Label.SKIP, Reason.NO_DESTINATION)
    assert "current owner b1:8080" in decision.detail
    # with even distribution switched off the bundle goes to the idle broker
    v = view(
        [heavy("b1:8080", 60, {A: 60, B: 30}), heavy("b2:8080", 10, others)],
        loadBalancerDistributeBundlesEvenlyEnabled=False,
    )
    assert [(u.bundle, u.destination) for u in cycle(v, "ThresholdShedder").unloads] == [(A, "b2:8080")]


def test_extensible_strategy_decisions_pass_through() -> None:
    v = hot_cluster()
    result = run_shedding_cycle(v, StrategyState(), new_rng(), strategy="TransferShedder")
    assert [d.reason for d in result.decisions] == [Reason.NO_BROKERS]  # no extensible load data here


def test_record_unloads() -> None:
    result = SheddingResult.of(
        [
            UnloadDecision("b1", "x/y/0x0_0x1", "b2", reason=Reason.OVERLOADED),
            UnloadDecision.skip(Reason.BALANCED),
        ],
        {"cooledDownBrokers": ["b3"]},
    )
    bundles: dict[str, int] = {}
    brokers = {"b3": 1}
    assert record_unloads(result, 42, bundles, brokers) == 1
    assert bundles == {"x/y/0x0_0x1": 42} and brokers == {"b1": 42}


def test_destinations_of_one_cycle_see_each_other() -> None:
    # Two bundles leave b1 in one cycle. Without preallocation both would go to b2 (lowest
    # long-term rate); Pulsar preallocates each destination, so the second goes to b3.
    hot = {f"t/ns/0x{i:x}0000000_0x{i + 1:x}0000000": 5 for i in range(10)}
    v = view(
        [
            heavy("b1:8080", 99, hot),
            heavy("b2:8080", 10, {"t/a/0x00000000_0xffffffff": 1}),
            heavy("b3:8080", 10, {"t/b/0x00000000_0xffffffff": 2}),
        ],
        loadBalancerDistributeBundlesEvenlyEnabled=False,
    )
    result = cycle(v)
    assert len(result.unloads) == 2
    assert sorted(u.destination for u in result.unloads) == ["b2:8080", "b3:8080"]


class _RingChanger:
    """A plugin shedder that decides one unload, one split and one merge."""

    class_name = "test.RingChanger"

    def find_bundles_for_unloading(self, view, state, rng):
        from brokerlb.loadbalance.decisions import MergeDecision, SplitDecision

        return SheddingResult.of(
            [UnloadDecision("b1:8080", A, None, reason=Reason.OVERLOADED)],
            {"planned": 3},
            splits=[SplitDecision(B, (0xC0000000,), Label.SUCCESS, Reason.OVER_TARGET)],
            merges=[MergeDecision(("t/m/0x00000000_0x80000000", "t/m/0x80000000_0xffffffff"))],
        )


def test_split_and_merge_decisions_pass_through_the_loop() -> None:
    from brokerlb.loadbalance.registry import StrategyKind, StrategySpec, register, unregister

    register(StrategySpec(StrategyKind.SHEDDING, _RingChanger.class_name, __name__, "_RingChanger", None))
    try:
        result = cycle(hot_cluster(), _RingChanger.class_name)
    finally:
        unregister(StrategyKind.SHEDDING, _RingChanger.class_name)
    (unload,) = result.unloads
    assert unload.destination == "b2:8080"  # the loop still chose the destination
    assert [s.bundle for s in result.splits] == [B] and len(result.merges) == 1
    assert result.stats == {"planned": 3}


def test_a_cycle_leaves_no_cyclic_garbage() -> None:
    """The view a cycle works on and the placement context derived from it refer to each other;
    the loop drops the pair when it is done, so reference counting frees them (a broker that
    freezes its state after each refresh would otherwise freeze this garbage)."""
    import gc

    for strategy in ("OverloadShedder", "TransferShedder"):
        v = view(
            [heavy("b1:8080", 95, {A: 60, B: 30}), heavy("b2:8080", 10, {C: 1})],
            recently={A: NOW - 365 * 86_400_000},  # pruned: the loop works on a view of its own
        )
        gc.collect()
        gc.disable()
        try:
            gc.set_debug(gc.DEBUG_SAVEALL)
            result = cycle(v, strategy)
            del v
            gc.collect()
            garbage = [type(o).__name__ for o in gc.garbage]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
        assert result.decisions
        assert "ClusterView" not in garbage and "PlacementContext" not in garbage, (strategy, garbage[:20])
