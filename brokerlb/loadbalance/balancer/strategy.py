"""``brokerlb``: brokerlb's own shedding and placement strategy (one object, both roles).

Goal: every broker's load -- its dominant resource relative to its own capacity -- inside a
narrow band around the balanced load, reached with the least moved throughput, without
flapping: each cycle's moves are planned together (:mod:`~brokerlb.loadbalance.balancer.plan`),
each names its destination (a transfer), a bundle too hot for any broker is split, cold
neighbours are merged (:mod:`~brokerlb.loadbalance.balancer.ring_changes`), and placement puts new
bundles where they keep the band.

Config keys read: ``brokerlbBalancerTargetTolerance`` (0.05), ``brokerlbBalancerUnderloadTolerance``
(0.10), ``brokerlbBalancerMinImprovement`` (0.005), ``brokerlbBalancerMaxMovesPerCycle`` (100),
``brokerlbBalancerMaxMovesPerBrokerPerCycle`` (20), ``brokerlbBalancerMaxMovedMbytesPerCycle``
(2048), ``brokerlbBalancerMaxMovedMbytesPerBrokerPerCycle`` (512),
``brokerlbBalancerSwapBackBlockMinutes`` (120), ``brokerlbBalancerSplitHotBundles``,
``brokerlbBalancerMergeColdBundles``, ``brokerlbBalancerMergeMaxFill`` (0.1),
``brokerlbBalancerMaxMergesPerCycle`` (2); Pulsar's ``loadBalancerSheddingGracePeriodMinutes``,
``loadBalancerReportUpdateMaxIntervalMinutes``, the ``loadBalancer*ResourceWeight`` keys, the split
thresholds and ``defaultNamespaceBundleSplitAlgorithm``, ``loadBalancerAutoUnloadSplitBundlesEnabled``,
``defaultNumberOfNamespaceBundles``, and every key of the modular placement filters.

Rules:

* loads and demands: :mod:`~brokerlb.loadbalance.balancer.model` (reports, corrected by the
  moves they do not show yet);
* a bundle may move when it is not a system bundle, not moved (or first seen) within the grace
  period, not waiting for its last move to show, and Pulsar's unload checks allow it
  (``shouldNamespacePoliciesUnload``, ``shouldAntiAffinityNamespaceUnload``);
* its destinations are what Pulsar's modular pipeline allows (isolation policies, broker topic
  limit, anti-affinity with failure domains, load manager class, broker versions -- the
  pipeline's own functions, each planned move counted as a preallocation), except the even
  spread of bundle counts (``loadBalancerDistributeBundlesEvenlyEnabled``: a count rule that
  fights load balance, apache/pulsar#16059), minus the brokers it left within
  ``brokerlbBalancerSwapBackBlockMinutes``;
* placement (a new, split, merged or orphaned bundle), among the brokers the modular pipeline
  allows (again without its even spread of bundle counts): the bundle the balancer bound to a
  broker goes there; a split child or a merged bundle goes to the broker reporting the range it
  came from (its load is already there; planned transfers move load from there if needed);
  otherwise the candidate whose load after taking the bundle is lowest (its history's demand,
  placements of the same refresh counted), ties by the seeded random source.

Every move is an ``Unload`` with its destination, reason ``Overloaded`` (off an over-target
broker) or ``Underloaded`` (onto an under-target one) and the numbers: loads before and after,
the band, the objective gain, the budget used. A cycle that moves nothing says why (``Balanced``:
every broker inside the band; otherwise the reason of the broker furthest outside it).

Worked example (target tolerance 0.03): 3 one-core brokers at 80 %, 60 %, 40 % cpu, bundles of
10 / 8 / 5 / 57 points on the first: balanced load 0.60, band [0.54, 0.618]; two transfers to the third broker (0.80 -> 0.62,
0.40 -> 0.58), objective 0.322 -> 0.002, 2 moves of the budget's 100.
"""

from __future__ import annotations

import math
import random
import weakref
from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from brokerlb.loadbalance.balancer.memory import MEMORY_KEY, BalancerMemory, PendingMove
from brokerlb.loadbalance.balancer.model import ClusterModel
from brokerlb.loadbalance.balancer.plan import (
    MB,
    Budget,
    MovePlan,
    PlannedMove,
    Targets,
    compute_targets,
    plan_moves,
)
from brokerlb.loadbalance.balancer.ring_changes import (
    MERGE_LOAD_FRACTION,
    overlapping,
    plan_merges,
    split_decision,
)
from brokerlb.loadbalance.decisions import (
    Label,
    MergeDecision,
    Reason,
    SheddingResult,
    SplitDecision,
    UnloadDecision,
)
from brokerlb.loadbalance.operator_actions import OperatorActionKind
from brokerlb.loadbalance.placement.context import PlacementContext
from brokerlb.loadbalance.placement.modular_pipeline import modular_candidates
from brokerlb.loadbalance.placement.unload_checks import (
    should_anti_affinity_namespace_unload,
    should_namespace_policies_unload,
)
from brokerlb.loadbalance.registry import unloads_split_children
from brokerlb.loadbalance.split.thresholds import range_bounds
from brokerlb.loadbalance.state import StrategyState
from brokerlb.loadbalance.view import ClusterView

__all__ = ["Balancer", "CLASS_NAME", "Cycle", "Prepared", "Destinations"]

#: the registry's class name of the strategy (its short name is ``brokerlb``)
CLASS_NAME = MEMORY_KEY


class Balancer:
    """brokerlb's balancer (module docstring): a shedding and a placement strategy."""

    class_name: ClassVar[str] = CLASS_NAME

    # ------------------------------------------------------------------ shedding

    def find_bundles_for_unloading(
        self, view: ClusterView, state: StrategyState, rng: random.Random
    ) -> SheddingResult:
        memory = state.get(MEMORY_KEY, BalancerMemory)
        return Cycle(view, memory).run()

    # ------------------------------------------------------------------ placement

    def select_broker(
        self,
        view: ClusterView,
        candidates: Sequence[str],
        bundle: str,
        state: StrategyState,
        rng: random.Random,
    ) -> str | None:
        return self.select_in_context(PlacementContext(view), candidates, bundle, state, rng)

    def select_in_context(
        self,
        context: PlacementContext,
        candidates: Sequence[str],
        bundle: str,
        state: StrategyState,
        rng: random.Random,
    ) -> str | None:
        if not candidates:
            return None
        if context.config.loadBalancerDistributeBundlesEvenlyEnabled:
            # the pipeline's even spread of bundle counts is not a rule of this strategy: choose
            # among what every other filter allows (as the shedding destinations do)
            candidates = modular_candidates(context, bundle, even_spread=False).candidates or candidates
        memory = state.get(MEMORY_KEY, BalancerMemory)
        held = context.view.operator_actions.get(bundle)
        if held is not None and held.kind is OperatorActionKind.UNLOAD and len(candidates) > 1:
            # an operator unloaded it from that broker: not placed back there (the grace period)
            candidates = [c for c in candidates if c != held.source] or candidates
        bound = memory.bindings.get(bundle)
        if bound is not None and bound in candidates:
            del memory.bindings[bundle]
            _placements(context, memory).add(bound, bundle)
            return bound
        return _placements(context, memory).choose(candidates, bundle, rng)


# ---------------------------------------------------------------------- placement model


class _Placements:
    """Loads of one placement context's brokers, with the placements made in it added."""

    def __init__(self, context: PlacementContext, memory: BalancerMemory) -> None:
        self.context = context
        self.version = memory.version
        self.model = ClusterModel.build(context.view, memory)
        self.loads = self.model.loads()
        self.placed = np.zeros(len(self.model.brokers))
        self._ns_ids: dict[str, int] | None = None
        self._candidates: dict[tuple[str, ...], _Candidates] = {}
        for broker, data in context.view.brokers.items():  # preallocations not reported yet
            i = self.model.index[broker]
            for name, bundle_data in data.preallocated_bundle_data.items():
                if name not in self.model.bundle_index:
                    self._add(i, self.model.demand_of_data(bundle_data))

    def _add(self, i: int, demand: np.ndarray) -> None:
        model = self.model
        model.usage[i] += demand
        self.loads[i] = model.load_of(model.usage[i], model.limit[i], float(model.floor[i]))
        self.placed[i] += 1

    def add(self, broker: str, bundle: str) -> None:
        i = self.model.index.get(broker)
        if i is not None:
            self._add(i, self.model.demand_of_data(self.context.bundle_data(bundle)))

    def reported_overlap(self, bundle: str) -> int | None:
        """The reported bundle whose range overlaps ``bundle``'s the most (a split's parent, a
        merge's part), when ``bundle`` itself is reported by nobody."""
        model = self.model
        if bundle in model.bundle_index:
            return None
        bounds = range_bounds(bundle)
        if bounds is None:
            return None
        if self._ns_ids is None:
            self._ns_ids = {name: i for i, name in enumerate(model.namespaces)}
        ns = self._ns_ids.get(bundle.rpartition("/")[0], -1)
        if ns < 0 or not len(model.bundles):
            return None
        lower, upper = bounds
        lo, up = model.bounds[:, 0], model.bounds[:, 1]
        overlap = np.where(model.ns_id == ns, np.minimum(up, upper) - np.maximum(lo, lower), 0)
        best = int(np.argmax(overlap))
        return best if overlap[best] > 0 else None

    def choose(self, candidates: Sequence[str], bundle: str, rng: random.Random) -> str | None:
        model = self.model
        found = self.reported_overlap(bundle)
        if found is not None:
            parent = model.brokers[int(model.owner[found])]
            if parent in candidates:
                # a split child or a merged bundle stays where its load already is; the balancer
                # moves load from there with planned transfers if that broker is over target
                # (measured: placing split children by load instead moved more in the library)
                self.placed[model.index[parent]] += 1
                return parent
        known = self._known(candidates)
        if not known.names:
            return sorted(candidates)[rng.randrange(len(candidates))]
        demand = model.demand_of_data(self.context.bundle_data(bundle))
        pick = self._least_loaded_after(known, demand, rng)
        self._add(model.index[pick], demand)
        return pick

    def _known(self, candidates: Sequence[str]) -> _Candidates:
        """The candidates the model knows, sorted, with their rows (the same candidate list comes
        back for nearly every placement of a cycle: computed once per list)."""
        key = tuple(candidates)
        found = self._candidates.get(key)
        if found is None:
            model = self.model
            names = [b for b in sorted(candidates) if b in model.index]
            idx = np.asarray([model.index[b] for b in names], dtype=np.intp)
            limit = model.limit[idx]
            capacity = np.maximum(limit[:, 0], 1e-9)
            found = self._candidates[key] = _Candidates(names, idx, limit, limit > 0, capacity)
        return found

    def _least_loaded_after(self, known: _Candidates, demand: np.ndarray, rng: random.Random) -> str:
        """The candidate whose load after taking ``demand`` is lowest."""
        model = self.model
        idx = known.idx
        usage = model.usage[idx] + demand
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(known.positive, usage / known.limit, 0.0)
        after = np.maximum(model.floor[idx], (ratios * model.weights).max(axis=1))
        # equal loads (nothing known yet): fewest placements per unit of capacity first
        spread = (self.placed[idx] + 1) / known.capacity
        order = np.lexsort((spread, np.round(after, 9)))
        first = order[0]
        ties = order[((after == after[first]) & (spread == spread[first]))[order]]
        pick = int(ties[rng.randrange(len(ties))]) if len(ties) > 1 else int(first)
        return known.names[pick]


class _Candidates(NamedTuple):
    """A placement's candidate brokers that the model knows: names sorted, model rows, limits."""

    names: list[str]
    idx: np.ndarray
    limit: np.ndarray
    positive: np.ndarray
    capacity: np.ndarray


_PLACEMENTS: weakref.WeakKeyDictionary[PlacementContext, _Placements] = weakref.WeakKeyDictionary()


def _placements(context: PlacementContext, memory: BalancerMemory) -> _Placements:
    found = _PLACEMENTS.get(context)
    if found is None or found.version != memory.version:
        # built before the balancer's latest moves: those count on their destinations now
        found = _PLACEMENTS[context] = _Placements(context, memory)
    return found


# ---------------------------------------------------------------------- one shedding cycle


class Prepared(NamedTuple):
    """What a cycle plans on: the model, the movable bundles, the targets, the destination filter,
    the splits of bundles too hot to move, and whether the cluster is idle (its busiest broker
    below ``brokerlbBalancerIdleThresholdPercentage``)."""

    model: ClusterModel
    movable: np.ndarray
    targets: Targets
    destinations: Destinations
    splits: list[SplitDecision]
    idle: bool = False
    #: the load above which the balancer splits a bundle for load (above the target on every
    #: broker and at least the idle threshold): a merge stays at most half of it
    split_load: float = math.inf


class Cycle:
    """One shedding cycle of the balancer. ``offline``: planning over a snapshot (``plan
    optimize``), not a leader's cycle -- the idle threshold and the new leader's wait do not apply."""

    def __init__(self, view: ClusterView, memory: BalancerMemory, *, offline: bool = False) -> None:
        self.view = view
        self.memory = memory
        conf = view.config
        self.conf = conf
        self.offline = offline
        self.now = view.now_ms
        self.grace_ms = int(conf.duration_seconds("loadBalancerSheddingGracePeriodMinutes") * 1000)
        self.swap_ms = int(conf.duration_seconds("brokerlbBalancerSwapBackBlockMinutes") * 1000)
        self.report_ms = int(conf.duration_seconds("loadBalancerReportUpdateMaxIntervalMinutes") * 1000)
        self.no_merge_ms = int(conf.duration_seconds("brokerlbBalancerNoMergeAfterSplitMinutes") * 1000)
        self.no_split_ms = int(conf.duration_seconds("brokerlbBalancerNoSplitAfterMergeMinutes") * 1000)
        self.idle_threshold = conf.brokerlbBalancerIdleThresholdPercentage / 100.0
        #: how long a moved bundle the destination reports may still show less traffic than was
        #: moved (its topics' rates not measured there yet): the grace period and two stats intervals
        self.measure_ms = self.grace_ms + 2 * int(conf.duration_seconds("statsUpdateFrequencyInSecs") * 1000)
        if memory.started_ms is None and not offline:
            memory.started_ms = self.now
        #: bundle -> the operator's action the balancer holds back for (within the grace period)
        self.held = view.operator_actions
        #: whether the leader unloads a split's children (then they count as just moved)
        self.children_unloaded = unloads_split_children(conf)

    def prepare(self) -> Prepared | None:
        """Memory upkeep, the model, what may move, ring-change splits and the targets (``None``
        with fewer than two brokers)."""
        self._forget_settled_moves()
        model = ClusterModel.build(self.view, self.memory)
        self._notice_new_bundles(model)
        if len(model.brokers) < 2:
            return None
        idle = not self.offline and float(model.loads().max()) < self.idle_threshold
        movable = self._movable(model)
        contribution = _own_contribution(model)
        plain = compute_targets(model, np.zeros(len(model.brokers)), 0.0, 0.0)
        hot_limit = plain.balanced * (1 + self.conf.brokerlbBalancerTargetTolerance)
        splits, fixed = self._hot_bundles(model, movable, contribution, hot_limit, may_split=not idle)
        targets = compute_targets(
            model,
            fixed,
            self.conf.brokerlbBalancerTargetTolerance,
            self.conf.brokerlbBalancerUnderloadTolerance,
        )
        destinations = Destinations(self, model)
        split_load = max(hot_limit, 0.0 if self.offline else self.idle_threshold)
        return Prepared(model, movable, targets, destinations, splits, idle, split_load)

    def watching_since(self, cool_down_ms: int) -> bool:
        """Whether this leadership has watched the ring for ``cool_down_ms`` (it saw no ring
        change made before it led: until then it makes none that the cool-down guards)."""
        started = self.memory.started_ms
        return self.offline or started is None or self.now - started >= cool_down_ms

    def run(self) -> SheddingResult:
        view, memory = self.view, self.memory
        prepared = self.prepare()
        if prepared is None:
            return SheddingResult.of(
                [UnloadDecision.skip(Reason.SINGLE_BROKER, "fewer than two brokers report")],
                {"brokers": len(view.brokers)},
            )
        model, movable, targets, destinations, splits, idle, split_load = prepared
        stats: dict[str, Any] = {"brokers": len(model.brokers), "bundles": len(model.bundles)}
        holds = self._holds(model)
        if holds:
            stats["operatorActions"] = {
                bundle: {**action.to_json(), "untilMs": action.until_ms(self.grace_ms)}
                for bundle, action in sorted(self.held.items())
            }
        if idle:
            loads = model.loads()
            busiest = int(np.argmax(loads))
            stats.update(
                busiest=model.brokers[busiest],
                busiestLoad=round(float(loads[busiest]), 6),
                idleThreshold=self.idle_threshold,
            )
            return SheddingResult.of(
                [
                    *holds,
                    UnloadDecision.skip(
                        Reason.IDLE,
                        f"the busiest broker {model.brokers[busiest]} is at {float(loads[busiest]):.3f}, below "
                        f"the idle threshold {self.idle_threshold:.3f} (brokerlbBalancerIdleThresholdPercentage): "
                        "nothing is moved, split or merged",
                    ),
                ],
                stats,
            )
        budget = Budget.from_config(self.conf)
        plan = plan_moves(
            model,
            targets,
            movable=movable,
            destinations=destinations,
            budget=budget,
            min_gain=self.conf.brokerlbBalancerMinImprovement * targets.balanced,
            on_move=destinations.moved,
        )
        decisions = [self._unload(model, targets, plan, move, budget, i) for i, move in enumerate(plan.moves)]
        for move in plan.moves:
            self._remember(model, move)
        merges: list[MergeDecision] = []
        if (
            not plan.moves
            and self.conf.brokerlbBalancerMergeColdBundles
            and self.watching_since(self.no_merge_ms)
        ):
            merges = plan_merges(
                view,
                model,
                movable & ~self._recently_split(model),
                limit=min(self.conf.brokerlbBalancerMaxMergesPerCycle, budget.moves),
                conf=self.conf,
                loads=model.lightest_contributions(),
                max_load=MERGE_LOAD_FRACTION * split_load,
            )
            for merge in merges:
                self._remember_merge(model, merge)
        for split in splits:
            if split.is_split:
                memory.split_at[split.bundle] = self.now
                memory.split_ranges[split.bundle] = self.now
        stats.update(self._stats(model, targets, plan, budget))
        if not decisions:
            decisions.append(self._nothing_to_do(model, targets, plan))
        return SheddingResult.of([*holds, *decisions], stats, splits=splits, merges=merges)

    # -------------------------------------------------------------- memory

    def _forget_settled_moves(self) -> None:
        view, memory = self.view, self.memory
        unloaded = view.recently_unloaded_bundles
        for bundle, move in list(memory.pending.items()):
            if self.now - move.at_ms < self.grace_ms and unloaded.get(bundle, -1) < move.at_ms:
                # not carried out (the leader records every move it carried out): the bundle did
                # not move, so nothing about it is pending, bound or blocked
                memory.forget_move(move)
                continue
            at_destination = bundle in view.reported_bundles(move.destination)
            at_source = bundle in view.reported_bundles(move.source)
            source = view.brokers.get(move.source)
            stale_source = (
                source is not None and at_source and source.local_data.last_update > move.at_ms + 60_000
            )
            measured = at_destination and (
                self.now - move.at_ms > self.measure_ms or _shows_traffic(view, move)
            )
            if (
                (at_destination and not at_source and measured)
                or move.destination not in view.brokers
                or self.now - move.at_ms > 2 * self.report_ms
                or (stale_source and not at_destination)
            ):
                del memory.pending[bundle]
        memory.forget_before(
            moved_cutoff_ms=self.now - self.grace_ms,
            left_cutoff_ms=self.now - self.swap_ms,
            split_cutoff_ms=self.now - self.no_merge_ms,
            merge_cutoff_ms=self.now - self.no_split_ms,
        )

    def _notice_new_bundles(self, model: ClusterModel) -> None:
        """Merged bundles and unloaded split children count as just moved, and every child as a
        ring change (module docstring of :mod:`.memory`): a new name inside a seen range is a
        split child, one covering more than a seen range a merged bundle."""
        memory = self.memory
        if memory.seen is not None and memory.seen_version == model.layout.version:
            return  # the same bundles as when last looked at
        memory.seen_version = model.layout.version
        current = set(model.bundles)
        if memory.seen is None:
            memory.seen = current
            return
        new = current - memory.seen
        if new:
            namespaces = {bundle.rpartition("/")[0] for bundle in new}
            seen_ranges: dict[str, list[tuple[int, int]]] = {}
            for bundle in memory.seen:
                namespace = bundle.rpartition("/")[0]
                if namespace not in namespaces:
                    continue
                bounds = range_bounds(bundle)
                if bounds is not None:
                    seen_ranges.setdefault(namespace, []).append(bounds)
            for bundle in new:
                bounds = range_bounds(bundle)
                if bounds is None:
                    continue
                lower, upper = bounds
                overlaps = [
                    (lo, up)
                    for lo, up in seen_ranges.get(bundle.rpartition("/")[0], ())
                    if lo < upper and lower < up
                ]
                if not overlaps:
                    continue
                if any(lo <= lower and upper <= up for lo, up in overlaps):
                    memory.split_ranges.setdefault(bundle, self.now)  # inside a seen range: split
                    if self.children_unloaded:
                        memory.last_moved.setdefault(bundle, self.now)
                else:
                    memory.merged_ranges.setdefault(bundle, self.now)  # covers seen ranges: merged
                    memory.last_moved.setdefault(bundle, self.now)
            memory.seen |= new

    def _remember(self, model: ClusterModel, move: PlannedMove) -> None:
        self.memory.record_move(
            PendingMove(
                bundle=model.bundles[move.bundle],
                source=model.brokers[move.source],
                destination=model.brokers[move.destination],
                at_ms=self.now,
                demand=move.demand,
                throughput=move.throughput,
                topics=int(model.topics[move.bundle]),
            )
        )

    def _remember_merge(self, model: ClusterModel, merge: MergeDecision) -> None:
        owner = model.brokers[int(model.owner[model.bundle_index[merge.bundles[0]]])]
        self.memory.bindings[merge.merged] = owner
        self.memory.version += 1
        self.memory.last_moved[merge.merged] = self.now
        self.memory.merged_ranges[merge.merged] = self.now
        for part in merge.bundles:
            self.memory.last_moved[part] = self.now

    # -------------------------------------------------------------- ring-change cool-downs

    def _recently_split(self, model: ClusterModel) -> np.ndarray:
        """(m,) bundles overlapping a range split within ``brokerlbBalancerNoMergeAfterSplitMinutes``
        (seen, decided here, or decided by the leader's split check) or by an operator within the
        grace period: not merged."""
        ranges = list(self.memory.split_ranges)
        ranges += [b for b, at in self.view.recent_splits.items() if self.now - at <= self.no_merge_ms]
        ranges += [b for b, a in self.held.items() if a.kind is OperatorActionKind.SPLIT]
        return overlapping(model, ranges) if ranges else np.zeros(len(model.bundles), dtype=bool)

    def _recently_merged(self, model: ClusterModel) -> np.ndarray:
        """(m,) bundles overlapping a range merged within ``brokerlbBalancerNoSplitAfterMergeMinutes``
        or by an operator within the grace period: not split for load."""
        ranges = list(self.memory.merged_ranges)
        ranges += [b for b, a in self.held.items() if a.kind is OperatorActionKind.MERGE]
        return overlapping(model, ranges) if ranges else np.zeros(len(model.bundles), dtype=bool)

    # -------------------------------------------------------------- operator actions

    def _holds(self, model: ClusterModel) -> list[UnloadDecision]:
        """One ``Skip``/``Admin`` decision per operator action the balancer holds back for."""
        out = []
        for bundle, action in sorted(self.held.items()):
            k = model.bundle_index.get(bundle)
            broker = (
                model.brokers[int(model.owner[k])] if k is not None else action.destination or action.source
            )
            until = action.until_ms(self.grace_ms)
            what = "not moved, split or merged"
            if action.kind is OperatorActionKind.SPLIT:
                what = "its range not merged back"
            elif action.kind is OperatorActionKind.UNLOAD and action.source:
                what = f"not moved or placed back on {action.source}"
            out.append(
                UnloadDecision.skip(
                    Reason.ADMIN,
                    f"{action.describe()} at {action.at_ms}: {what} until {until} "
                    f"(loadBalancerSheddingGracePeriodMinutes)",
                    broker=broker,
                    bundle=bundle,
                )
            )
        return out

    # -------------------------------------------------------------- what may move

    def _movable(self, model: ClusterModel) -> np.ndarray:
        view, memory = self.view, self.memory
        cutoff = self.now - self.grace_ms
        out = np.ones(len(model.bundles), dtype=bool)
        index = model.bundle_index
        blocked = [
            *memory.pending,
            *view.recently_unloaded_bundles,
            *(b for b, at in memory.last_moved.items() if at >= cutoff),
            *self.held,
            # split already (a stale report still lists it): its children move, not it
            *memory.split_at,
            *view.recent_splits,
        ]
        out[[index[b] for b in blocked if b in index]] = False
        system = np.asarray([view.is_system_namespace(ns) for ns in model.namespaces], dtype=bool)
        if system.any():
            out[system[model.ns_id]] = False
        return out

    def _hot_bundles(
        self,
        model: ClusterModel,
        movable: np.ndarray,
        contribution: np.ndarray,
        hot_limit: float,
        *,
        may_split: bool = True,
    ) -> tuple[list[SplitDecision], np.ndarray]:
        """Bundles above the target on every broker: split them (module docstring of
        :mod:`~brokerlb.loadbalance.balancer.ring_changes`) when they alone weigh at least the
        idle threshold, were not merged within the cool-down and no operator acted on them; their
        brokers' floor otherwise."""
        fixed = np.zeros(len(model.brokers))
        splits: list[SplitDecision] = []
        if not len(model.bundles):
            return splits, fixed
        lightest = model.lightest_contributions()
        hot = np.flatnonzero(lightest > hot_limit)
        may_split = may_split and self.conf.brokerlbBalancerSplitHotBundles
        merged = self._recently_merged(model) if may_split and len(hot) else None
        for k in map(int, hot):
            owner = int(model.owner[k])
            name = model.bundles[k]
            if (
                may_split
                and merged is not None
                and not merged[k]
                and float(lightest[k]) >= self.idle_threshold
                and name not in self.held
                and name not in self.memory.split_at
                and name not in self.memory.pending
            ):
                decision = split_decision(self.view, model, k, float(lightest[k]), hot_limit)
                splits.append(decision)
                if decision.is_split:
                    movable[k] = False
            # until the split shows in the reports, its load stays where it is
            fixed[owner] = max(fixed[owner], float(contribution[k]))
        return splits, fixed

    # -------------------------------------------------------------- decisions

    def _unload(
        self, model: ClusterModel, targets: Targets, plan: MovePlan, move: PlannedMove, budget: Budget, i: int
    ) -> UnloadDecision:
        used_bytes = sum(m.throughput for m in plan.moves[: i + 1])
        reason = Reason.OVERLOADED if move.kind == "over" else Reason.UNDERLOADED
        src, dst = model.brokers[move.source], model.brokers[move.destination]
        detail = (
            f"{src} load {move.source_before:.3f} -> {move.source_after:.3f} (target <= "
            f"{targets.upper[move.source]:.3f}); {dst} {move.destination_before:.3f} -> "
            f"{move.destination_after:.3f} (band [{targets.lower:.3f}, {targets.upper[move.destination]:.3f}]); "
            f"objective gain {move.gain:.4f}; {move.throughput / MB:.2f} MB/s; budget used {i + 1}/"
            f"{budget.moves} moves, {used_bytes / MB:.1f}"
            + (f"/{budget.mbytes:g}" if budget.mbytes > 0 else "")
            + " MB/s"
        )
        return UnloadDecision(src, model.bundles[move.bundle], dst, Label.SUCCESS, reason, detail)

    def _nothing_to_do(self, model: ClusterModel, targets: Targets, plan: MovePlan) -> UnloadDecision:
        if plan.budget_exhausted:
            return UnloadDecision.skip(Reason.BELOW_THRESHOLD, plan.budget_exhausted)
        if not plan.unresolved:
            loads = model.loads()
            return UnloadDecision.skip(
                Reason.BALANCED,
                f"every broker inside the band [{targets.lower:.3f}, {float(targets.upper.min()):.3f}] "
                f"around the balanced load {targets.balanced:.3f} (busiest {float(loads.max()):.3f})",
            )
        loads = model.loads()
        worst = max(plan.unresolved, key=lambda b: float(targets.violation(loads)[b]))
        why = "; ".join(
            f"{model.brokers[b]} ({loads[b]:.3f}): {w}" for b, w in sorted(plan.unresolved.items())
        )
        reason = Reason.NO_DESTINATION if "destination" in plan.unresolved[worst] else Reason.BELOW_THRESHOLD
        if "may move" in plan.unresolved[worst]:
            reason = Reason.RECENTLY_UNLOADED
        return UnloadDecision.skip(
            reason, f"outside the band [{targets.lower:.3f}, {float(targets.upper.min()):.3f}]: {why}"
        )

    def _stats(self, model: ClusterModel, targets: Targets, plan: MovePlan, budget: Budget) -> dict[str, Any]:
        return {
            "balancedLoad": round(targets.balanced, 6),
            "targetUpper": round(float(targets.upper.min()), 6) if len(targets.upper) else 0.0,
            "targetLower": round(targets.lower, 6),
            # brokers whose own upper target is higher (they hold a bundle too hot to move usefully)
            "raisedTargetUpper": {
                model.brokers[b]: round(float(targets.upper[b]), 6)
                for b in np.flatnonzero(targets.upper > targets.upper.min() + 1e-9)
            }
            if len(targets.upper)
            else {},
            "busiestBefore": round(plan.busiest_before, 6),
            "busiestAfter": round(plan.busiest_after, 6),
            "objectiveBefore": round(plan.objective_before, 6),
            "objectiveAfter": round(plan.objective_after, 6),
            "moves": len(plan.moves),
            "movedMbytes": round(plan.moved_bytes / MB, 3),
            "budget": {
                "moves": budget.moves,
                "movesPerBroker": budget.moves_per_broker,
                "mbytes": budget.mbytes,
                "mbytesPerBroker": budget.mbytes_per_broker,
            },
            "pendingMoves": len(self.memory.pending),
            "costPerTraffic": [float(c) for c in model.cost],
            "baseFraction": [float(b) for b in model.base],
            "unresolved": {model.brokers[b]: why for b, why in sorted(plan.unresolved.items())},
        }


class Destinations:
    """``destinations(k)`` for the planner: Pulsar's modular filters without the even spread of
    bundle counts, the unload checks, and the swap-back rule; cached per namespace."""

    def __init__(self, cycle: Cycle, model: ClusterModel) -> None:
        self.cycle = cycle
        self.model = model
        self._context: PlacementContext | None = None
        self._by_namespace: dict[str, np.ndarray] = {}
        self._unload_ok: dict[int, bool] = {}

    @property
    def context(self) -> PlacementContext:
        """The placement filters' indexes over the cycle's view, built when the planner first asks
        for a destination (a cycle with nothing to move never needs them)."""
        if self._context is None:
            self._context = PlacementContext(self.cycle.view)
        return self._context

    def __call__(self, k: int) -> np.ndarray:
        model, view = self.model, self.cycle.view
        bundle = model.bundles[k]
        owner = model.brokers[int(model.owner[k])]
        ok = self._unload_ok.get(k)
        if ok is None:
            ok = self._unload_ok[k] = should_namespace_policies_unload(
                view, bundle, owner
            ) and should_anti_affinity_namespace_unload(view, bundle, owner)
        if not ok:
            return np.zeros(len(model.brokers), dtype=bool)
        namespace = bundle.rpartition("/")[0]
        mask = self._by_namespace.get(namespace)
        if mask is None:
            mask = np.zeros(len(model.brokers), dtype=bool)
            index = model.index
            allowed = [
                index[b]
                for b in modular_candidates(self.context, bundle, even_spread=False).candidates
                if b in index
            ]
            mask[allowed] = True
            self._by_namespace[namespace] = mask
        mask = mask.copy()
        mask[int(model.owner[k])] = False
        for broker, at in self.cycle.memory.left.get(bundle, {}).items():
            i = model.index.get(broker)
            if i is not None and self.cycle.now - at < self.cycle.swap_ms:
                mask[i] = False
        return mask

    def moved(self, move: PlannedMove) -> None:
        """Count a planned move as a preallocation (topic limits, anti-affinity counts)."""
        model = self.model
        bundle = model.bundles[move.bundle]
        self.context.preallocate(bundle, model.brokers[move.destination])
        namespace = bundle.rpartition("/")[0]
        group = self.context.group_of(namespace)
        if group:  # the group's counts changed for every namespace of it
            for other in [ns for ns in self._by_namespace if self.context.group_of(ns) == group]:
                del self._by_namespace[other]
        else:  # its topics count on the destination now
            self._by_namespace.pop(namespace, None)


def _shows_traffic(view: ClusterView, move: PendingMove) -> bool:
    """Whether ``move``'s destination reports its bundle with at least half the moved throughput."""
    if move.throughput <= 0:
        return True
    data = view.brokers.get(move.destination)
    stats = data.local_data.last_stats.get(move.bundle) if data is not None else None
    if stats is None:
        return False
    return stats.msg_throughput_in + stats.msg_throughput_out >= 0.5 * move.throughput


def _own_contribution(model: ClusterModel) -> np.ndarray:
    """(m,) each bundle's load on its own broker."""
    if not len(model.bundles):
        return np.zeros(0)
    limit = model.limit[model.owner]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(limit > 0, model.demands() / limit, 0.0)
    return np.asarray((ratios * model.weights).max(axis=1))
