"""The leader's shedding loop around a strategy (Pulsar's ``doLoadShedding`` / ``UnloadScheduler``).

One cycle, as the leader runs it every ``loadBalancerSheddingIntervalMinutes``:

1. nothing unless ``loadBalancerEnabled`` and ``loadBalancerSheddingEnabled`` (``Disabled``);
2. nothing with at most one available broker (``SingleBroker``: Pulsar logs "Only 1 broker
   available: no load shedding will be performed");
3. bundles unloaded more than ``loadBalancerSheddingGracePeriodMinutes`` ago are forgotten
   (``recentlyUnloadedBundles`` entries older than ``now - grace`` are pruned before the
   strategy runs; the others stay "recently unloaded" and strategies skip them);
4. the strategy runs;
5. modular strategies (``impl``), for each bundle they selected, in order:

   * skip unless ``shouldNamespacePoliciesUnload`` -- some broker other than the owner may
     own the bundle under its namespace isolation policy (``IsolationPolicy``);
   * skip unless ``shouldAntiAffinityNamespaceUnload`` (``AntiAffinity``);
   * choose the destination with the placement pipeline (Pulsar 3.x+); none -> ``Failure``
     ``NoDestination``; the owner itself -> ``Skip`` ``NoDestination``. A decision that already
     names its destination keeps it (a strategy that plans destinations itself, as brokerlb's
     balancer does, after the same filters); Pulsar's modular shedders name none;
   * otherwise ``Success``: unload to that destination.

   The extensible ``TransferShedder`` applies its own policy checks and destinations
   (Pulsar's ``UnloadScheduler`` publishes its decisions as they are).

The checks come from :mod:`brokerlb.loadbalance.placement.unload_checks`, the destination from
:func:`brokerlb.loadbalance.placement.pipeline.select_broker_for_assignment` with the configured
placement strategy (``loadBalancerLoadPlacementStrategy``; AvgShedder as placement strategy sends
a bundle to the broker it was paired with).

Split and merge decisions a strategy returns with its unloads (``SheddingResult.split_decisions``,
``merge_decisions``) pass through unchanged; the leader executes them like the split check's.

The loop itself changes nothing: recording unloads (``recentlyUnloadedBundles[bundle] = now``,
TransferShedder's ``recentlyUnloadedBrokers[broker] = now``) is the caller's job, with
:func:`record_unloads`.
"""

from __future__ import annotations

import random
from collections.abc import MutableMapping
from dataclasses import replace
from typing import Any

from brokerlb.loadbalance.decisions import Label, Reason, SheddingResult, UnloadDecision
from brokerlb.loadbalance.registry import StrategyKind, StrategySpec, default_strategy_name, resolve
from brokerlb.loadbalance.state import StrategyState
from brokerlb.loadbalance.view import ClusterView
from brokerlb.model import LoadData

__all__ = ["run_shedding_cycle", "prune_recently_unloaded", "record_unloads"]


def run_shedding_cycle(
    view: ClusterView,
    state: StrategyState,
    rng: random.Random,
    *,
    strategy: str | None = None,
) -> SheddingResult:
    """One shedding cycle (module docstring); ``strategy`` defaults to the configured one."""
    spec = resolve(
        StrategyKind.SHEDDING, strategy or default_strategy_name(StrategyKind.SHEDDING, view.config)
    )
    conf = view.config
    if not (conf.loadBalancerEnabled and conf.loadBalancerSheddingEnabled):
        flag = "loadBalancerEnabled" if not conf.loadBalancerEnabled else "loadBalancerSheddingEnabled"
        return SheddingResult.of([UnloadDecision.skip(Reason.DISABLED, f"{flag}=false")])
    brokers = view.available_brokers
    if len(brokers) <= 1:
        return SheddingResult.of(
            [
                UnloadDecision.skip(
                    Reason.SINGLE_BROKER,
                    f"only {len(brokers)} broker available: no load shedding will be performed",
                )
            ]
        )
    pruned_view = _with_pruned_recently_unloaded(view)
    try:
        result: SheddingResult = spec.create().find_bundles_for_unloading(pruned_view, state, rng)
        if spec.extensible:
            return result
        return _apply_modular_checks(pruned_view, state, rng, spec, result)
    finally:
        pruned_view.drop_derived()  # the view and its placement context: freed by reference counting


def _with_pruned_recently_unloaded(view: ClusterView) -> ClusterView:
    grace_ms = int(view.config.duration_seconds("loadBalancerSheddingGracePeriodMinutes") * 1000)
    kept = prune_recently_unloaded(view.recently_unloaded_bundles, view.now_ms - grace_ms)
    if len(kept) == len(view.recently_unloaded_bundles):
        return view
    load = view.load_data
    return replace(view, load_data=LoadData(load.broker_data, load.bundle_data, kept))


def prune_recently_unloaded(
    recently_unloaded: MutableMapping[str, int] | Any, cutoff_ms: int
) -> dict[str, int]:
    """Entries unloaded at or after ``cutoff_ms`` (Pulsar removes those ``< now - grace``)."""
    return {bundle: at for bundle, at in recently_unloaded.items() if at >= cutoff_ms}


def _apply_modular_checks(
    view: ClusterView, state: StrategyState, rng: random.Random, spec: StrategySpec, result: SheddingResult
) -> SheddingResult:
    from brokerlb.loadbalance.placement.context import PlacementContext
    from brokerlb.loadbalance.placement.pipeline import place_bundle
    from brokerlb.loadbalance.placement.unload_checks import (
        should_anti_affinity_namespace_unload,
        should_namespace_policies_unload,
    )

    decisions: list[UnloadDecision] = []
    # One placement context per cycle: each destination is preallocated in it (as Pulsar's
    # selectBroker does), so two unloads of one cycle see each other's load.
    context: PlacementContext | None = None
    for decision in result.decisions:
        if not decision.is_unload or decision.broker is None or decision.bundle is None:
            decisions.append(decision)
            continue
        broker, bundle = decision.broker, decision.bundle
        if not should_namespace_policies_unload(view, bundle, broker):
            decisions.append(
                _skip(
                    decision,
                    Reason.ISOLATION_POLICY,
                    "no other broker may own it under its namespace isolation policy",
                )
            )
            continue
        if not should_anti_affinity_namespace_unload(view, bundle, broker):
            decisions.append(
                _skip(
                    decision,
                    Reason.ANTI_AFFINITY,
                    "unloading would not improve its anti-affinity group's spread",
                )
            )
            continue
        if decision.destination is not None and decision.destination != broker:
            decisions.append(decision)
            continue
        if context is None:
            context = PlacementContext(view)
        placement = place_bundle(context, bundle, state, rng, preallocate=True)
        if placement.broker is None:
            decisions.append(
                replace(
                    decision,
                    label=Label.FAILURE,
                    reason=Reason.NO_DESTINATION,
                    detail=f"{decision.detail}; no broker available to take it "
                    f"({placement.reason}: {placement.detail})".lstrip("; "),
                )
            )
        elif placement.broker == broker:
            decisions.append(
                _skip(
                    decision, Reason.NO_DESTINATION, f"the destination chosen is the current owner {broker}"
                )
            )
        else:
            decisions.append(replace(decision, destination=placement.broker))
    return replace(result, decisions=tuple(decisions))


def _skip(decision: UnloadDecision, reason: Reason, why: str) -> UnloadDecision:
    detail = f"{decision.detail}; {why}" if decision.detail else why
    return replace(decision, label=Label.SKIP, reason=reason, detail=detail)


def record_unloads(
    result: SheddingResult,
    now_ms: int,
    recently_unloaded_bundles: MutableMapping[str, int],
    recently_unloaded_brokers: MutableMapping[str, int] | None = None,
) -> int:
    """Remember the cycle's unloads as the leader does after executing them; returns their number.

    ``recently_unloaded_bundles[bundle] = now`` for each unload; with
    ``recently_unloaded_brokers`` (extensible manager) also ``[source broker] = now``, after
    forgetting the brokers TransferShedder found cooled down (``stats["cooledDownBrokers"]``).
    """
    if recently_unloaded_brokers is not None:
        for broker in result.stats.get("cooledDownBrokers", ()):
            recently_unloaded_brokers.pop(broker, None)
    count = 0
    for decision in result.unloads:
        recently_unloaded_bundles[decision.bundle or ""] = now_ms
        if recently_unloaded_brokers is not None and decision.broker is not None:
            recently_unloaded_brokers[decision.broker] = now_ms
        count += 1
    return count
