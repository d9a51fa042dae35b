"""``brokerlb plan optimize``: the balancer's planner offline, over a snapshot, as an admin plan.

The same model, targets, filters, hysteresis and ring changes as the live strategy
(:mod:`~brokerlb.loadbalance.balancer.strategy`), planned in one pass without a per-cycle budget (``max_moves`` caps the
plan; default: no cap): what the leader would converge to, for the least moved throughput. ``target`` sets the busiest
broker's target relative to the balanced load (``1.05``: at most 5 % above it; default
``1 + brokerlbBalancerTargetTolerance``).

The result is a :class:`~brokerlb.plan.Plan` that ``brokerlb plan apply`` executes: splits of
bundles too hot for any broker, unloads with their ``destinationBroker`` (transfers), merges of
cold neighbours. **Concurrency caps**: the moves are ordered in waves; a wave holds at most
``brokerlbBalancerMaxMovesPerCycle`` moves, ``brokerlbBalancerMaxMovesPerBrokerPerCycle`` per broker
and the per-cycle MB/s budgets, so applying the plan wave after wave never has more moves in
flight on a broker than one leader cycle would. Each operation's ``reason`` names its wave.

``exact=True`` solves the same problem with the MIP oracle (:mod:`.oracle`, small snapshots
only): the busiest broker as low as any assignment allows (not below the target), then the least
moved throughput for it; budgets do not bound it.

Worked example: the snapshot of three brokers at 80 / 60 / 40 % of the balancer's docstring gives a
plan of two unloads, ``t/a/0x00000000_0x40000000`` and ``t/a/0x40000000_0x80000000`` to ``b3``,
wave 1, busiest 0.80 -> 0.62.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brokerlb.errors import InvalidInputError
from brokerlb.loadbalance.balancer.memory import BalancerMemory
from brokerlb.loadbalance.balancer.plan import MB, Budget, plan_moves
from brokerlb.loadbalance.balancer.strategy import Cycle, Prepared
from brokerlb.loadbalance.decisions import MergeDecision, SplitDecision
from brokerlb.loadbalance.registry import unloads_split_children
from brokerlb.loadbalance.view import ClusterView

__all__ = ["OptimizedMove", "Optimization", "optimize", "to_plan"]


@dataclass(frozen=True, slots=True)
class OptimizedMove:
    bundle: str
    source: str
    destination: str
    throughput: float
    wave: int
    detail: str


@dataclass(slots=True)
class Optimization:
    """What ``optimize`` found: moves in waves, ring changes, and the numbers."""

    moves: list[OptimizedMove] = field(default_factory=list)
    splits: list[SplitDecision] = field(default_factory=list)
    merges: list[MergeDecision] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


def optimize(
    view: ClusterView, *, target: float | None = None, max_moves: int | None = None, exact: bool = False
) -> Optimization:
    """Plan the moves that bring the snapshot's cluster to its target (module docstring)."""
    conf = view.config
    if target is not None:
        if not 1.0 <= target <= 2.0:
            raise InvalidInputError(f"--target {target}: expected a ratio to the balanced load in [1, 2]")
        view = view.with_overrides({"brokerlbBalancerTargetTolerance": target - 1.0})
    if max_moves is not None and max_moves < 0:
        raise InvalidInputError(f"--max-moves {max_moves}: expected 0 or more")
    allowance = 10**9 if max_moves is None else max_moves
    cycle = Cycle(view, BalancerMemory(), offline=True)
    prepared = cycle.prepare()
    out = Optimization()
    if prepared is None:
        out.stats = {"brokers": len(view.brokers), "reason": "fewer than two brokers report"}
        return out
    out.splits = [s for s in prepared.splits if s.is_split]
    if exact:
        chosen, summary = _exact(prepared)
    else:
        chosen, summary = _greedy(prepared, allowance, conf.brokerlbBalancerMinImprovement)
    model = prepared.model
    waves = _waves(chosen, Budget.from_config(view.config))
    for (k, src, dst, detail), wave in zip(chosen, waves, strict=True):
        out.moves.append(
            OptimizedMove(
                model.bundles[k],
                model.brokers[src],
                model.brokers[dst],
                float(model.throughput[k]),
                wave,
                detail,
            )
        )
    if not out.moves and view.config.brokerlbBalancerMergeColdBundles:
        from brokerlb.loadbalance.balancer.ring_changes import MERGE_LOAD_FRACTION, plan_merges

        out.merges = plan_merges(
            view,
            model,
            prepared.movable,
            limit=view.config.brokerlbBalancerMaxMergesPerCycle,
            conf=view.config,
            loads=model.lightest_contributions(),
            max_load=MERGE_LOAD_FRACTION * prepared.split_load,
        )
    out.stats = {
        "brokers": len(model.brokers),
        "bundles": len(model.bundles),
        "balancedLoad": round(prepared.targets.balanced, 6),
        "targetUpper": round(float(prepared.targets.upper.min()), 6),
        "exact": exact,
        "moves": len(out.moves),
        "waves": max(waves, default=0),
        "movedMbytes": round(sum(m.throughput for m in out.moves) / MB, 3),
        **summary,
    }
    return out


def _greedy(
    prepared: Prepared, allowance: int, min_improvement: float
) -> tuple[list[tuple[int, int, int, str]], dict[str, Any]]:
    model, movable, targets, destinations = prepared[:4]
    plan = plan_moves(
        model,
        targets,
        movable=movable,
        destinations=destinations,
        budget=Budget(moves=max(allowance, 0) or 0, moves_per_broker=10**9),
        min_gain=min_improvement * targets.balanced,
        on_move=destinations.moved,
    )
    chosen = [
        (
            m.bundle,
            m.source,
            m.destination,
            f"{model.brokers[m.source]} {m.source_before:.3f} -> {m.source_after:.3f}, "
            f"{model.brokers[m.destination]} {m.destination_before:.3f} -> {m.destination_after:.3f}; "
            f"objective gain {m.gain:.4f}",
        )
        for m in plan.moves
    ]
    return chosen, {
        "busiestBefore": round(plan.busiest_before, 6),
        "busiestAfter": round(plan.busiest_after, 6),
        "objectiveBefore": round(plan.objective_before, 6),
        "objectiveAfter": round(plan.objective_after, 6),
        "unresolved": {model.brokers[b]: why for b, why in sorted(plan.unresolved.items())},
    }


def _exact(prepared: Prepared) -> tuple[list[tuple[int, int, int, str]], dict[str, Any]]:
    from brokerlb.loadbalance.balancer.oracle import min_max_load, min_moved_throughput

    model, movable, targets, destinations = prepared[:4]
    before = model.loads()
    lowest = min_max_load(model, movable, destinations)
    goal = np.maximum(targets.upper, lowest + 1e-9)
    result = min_moved_throughput(model, movable, destinations, goal)
    if not result.feasible:  # pragma: no cover - the lowest reachable max is always feasible
        raise InvalidInputError("the exact oracle found no assignment for the target")
    chosen = [
        (k, int(model.owner[k]), b, f"exact: least moved throughput for every broker <= {float(goal[b]):.3f}")
        for k, b in sorted(result.moves.items())
    ]
    return chosen, {
        "busiestBefore": round(float(before.max()), 6),
        "busiestAfter": round(result.busiest, 6),
        "lowestReachable": round(lowest, 6),
    }


def _waves(chosen: list[tuple[int, int, int, str]], budget: Budget) -> list[int]:
    """Wave of each move (1, 2, ...): per wave at most the per-cycle move and MB/s budgets,
    in total and per broker."""
    waves: list[int] = []
    counts: list[dict[int, int]] = []
    totals: list[int] = []
    for _, src, dst, _ in chosen:
        w = 0
        while True:
            if w == len(counts):
                counts.append({})
                totals.append(0)
            per = counts[w]
            if (
                totals[w] < budget.moves
                and per.get(src, 0) < budget.moves_per_broker
                and per.get(dst, 0) < budget.moves_per_broker
            ):
                break
            w += 1
        counts[w][src] = counts[w].get(src, 0) + 1
        counts[w][dst] = counts[w].get(dst, 0) + 1
        totals[w] += 1
        waves.append(w + 1)
    return waves


def to_plan(optimization: Optimization, view: ClusterView, *, created_at: int | None = None) -> Any:
    """The :class:`~brokerlb.plan.Plan` ``brokerlb plan apply`` executes: splits, then the
    unloads wave by wave, then merges."""
    from brokerlb.loadbalance.split.thresholds import range_bounds
    from brokerlb.plan.format import MergeOp, Plan, SplitOp, UnloadOp
    from brokerlb.ring import format_range

    operations: list[Any] = []
    skipped: list[str] = []

    def split_name(bundle: str) -> tuple[str, str] | None:
        bounds = range_bounds(bundle)
        if bounds is None:
            skipped.append(bundle)
            return None
        return bundle.rpartition("/")[0], format_range(*bounds)

    for split in optimization.splits:
        named = split_name(split.bundle)
        if named is not None:
            operations.append(
                SplitOp(
                    named[0],
                    named[1],
                    split.boundaries,
                    unloads_split_children(view.config),
                    f"{split.reason}: {split.detail}",
                )
            )
    for move in sorted(optimization.moves, key=lambda m: m.wave):
        named = split_name(move.bundle)
        if named is not None:
            operations.append(
                UnloadOp(named[0], named[1], move.destination, f"wave {move.wave}: {move.detail}")
            )
    for merge in optimization.merges:
        names = [split_name(b) for b in merge.bundles]
        if all(n is not None for n in names):
            operations.append(
                MergeOp(
                    merge.namespace,
                    tuple(n[1] for n in names if n is not None),
                    f"{merge.reason}: {merge.detail}",
                )
            )
    source = {"job": "optimize", "strategy": "brokerlb", **optimization.stats}
    if skipped:
        source["skippedOpaqueBundles"] = sorted(set(skipped))
    return Plan(tuple(operations), created_at if created_at is not None else view.now_ms, source, ())
