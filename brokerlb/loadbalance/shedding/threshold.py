"""``ThresholdShedder``: unload from brokers whose usage is above the cluster average by a threshold.

Goal: every broker's (smoothed) usage within ``threshold`` of the average. Pulsar's default
shedding strategy since 2.10.

Config keys: ``loadBalancerBrokerThresholdShedderPercentage`` (10),
``loadBalancerHistoryResourcePercentage`` (0.9), ``loadBalancerBundleUnloadMinThroughputThreshold``
(10 MB), the five ``loadBalancer*ResourceWeight`` keys, ``lowerBoundarySheddingEnabled`` (false),
``atLeastOneBundleSelected`` (true); brokerlb option ``brokerlbThresholdShedderSingleHistoryUpdate``.

Memory between cycles (:class:`ThresholdShedderState`): each broker's usage history.

Rule (Pulsar's ``ThresholdShedder``):

1. for every broker, ``usage = getMaxResourceUsageWithWeight(cpu, memory, directMemory, bwIn,
   bwOut weights)``; above 1.0 (a misconfigured limit) it is recomputed ignoring terms above
   100%; ``history = usage`` the first time, else ``history * h + (1 - h) * usage``;
2. ``avg`` = mean history over the brokers; ``avg == 0`` -> nothing;
3. a broker with ``history >= avg + threshold`` sheds
   ``(msgThroughputIn + msgThroughputOut) * (history - avg - threshold + 0.05)`` -- unless that
   is below the minimum throughput -- choosing bundles like OverloadShedder (largest short-term
   throughput first, at least one, brokers with fewer than two bundles are left alone);
4. **lower-boundary shedding** (only when nothing was selected and the option is on): the
   average is recomputed (which advances every history once more, as in Pulsar), the busiest
   broker above ``avg - threshold`` with more than one bundle sheds
   ``throughput * threshold * 0.5`` -- if some broker is below ``avg - threshold`` and that
   amount reaches the minimum throughput.

Worked example: two brokers at cpu 80% and 20%, first cycle: histories 0.8 and 0.2, avg 0.5;
0.8 >= 0.5 + 0.1, so b1 sheds ``(0.8 - 0.5 - 0.1 + 0.05) = 25%`` of its throughput (if at least
10 MB/s). Next cycle with b1 at 40% and b2 at 60%: histories 0.76 and 0.24 -- b1 still sheds,
the "history makes it over-unload" effect users report (PIP-364).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, ClassVar

from brokerlb.loadbalance.decisions import Reason, SheddingResult, UnloadDecision
from brokerlb.loadbalance.registry import IMPL
from brokerlb.loadbalance.shedding.common import (
    MB,
    SkippedBrokers,
    finish,
    select_by_short_term_throughput,
    select_largest_first,
)
from brokerlb.loadbalance.state import StrategyState
from brokerlb.loadbalance.view import ClusterView
from brokerlb.model import LocalBrokerData

__all__ = ["ThresholdShedder", "ThresholdShedderState"]

ADDITIONAL_THRESHOLD_PERCENT_MARGIN = 0.05
LOWER_BOUNDARY_THRESHOLD_MARGIN = 0.5


@dataclass(slots=True)
class ThresholdShedderState:
    """ThresholdShedder's memory: broker -> smoothed usage (Pulsar's ``brokerAvgResourceUsage``)."""

    history: dict[str, float] = field(default_factory=dict)
    #: broker -> (the report, the weights, its weighted usage): a report handed to the leader is
    #: never changed in place (:func:`~brokerlb.loadbalance.refresh.refresh`), so an unchanged
    #: report's usage is not computed again (most reports are unchanged from one cycle to the next)
    usage: dict[str, tuple[LocalBrokerData, tuple[float, ...], float]] = field(
        default_factory=dict, repr=False, compare=False
    )


class ThresholdShedder:
    """Pulsar's ``org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder`` (module docstring)."""

    class_name: ClassVar[str] = f"{IMPL}.ThresholdShedder"

    def find_bundles_for_unloading(
        self, view: ClusterView, state: StrategyState, rng: random.Random
    ) -> SheddingResult:
        conf = view.config
        memory = state.get(self.class_name, ThresholdShedderState)
        threshold = conf.loadBalancerBrokerThresholdShedderPercentage / 100.0
        min_throughput = conf.loadBalancerBundleUnloadMinThroughputThreshold * MB
        avg = _average_usage(view, memory)
        stats: dict[str, Any] = {"avgUsage": avg, "threshold": threshold}
        skipped = SkippedBrokers()
        decisions: list[UnloadDecision] = []
        if avg == 0:
            stats["usageHistory"] = _rounded(memory.history, view)
            return finish(decisions, skipped, stats, balanced_detail="average max resource usage is 0")
        for broker in view.modular_broker_order:
            usage = memory.history.get(broker, 0.0)
            if usage < avg + threshold:
                continue
            local = view.brokers[broker].local_data
            share = usage - avg - threshold + ADDITIONAL_THRESHOLD_PERCENT_MARGIN
            minimum = local.total_msg_throughput() * share
            if minimum < min_throughput:
                skipped.add(
                    broker,
                    Reason.BELOW_THRESHOLD,
                    f"would shed {minimum / MB:.2f} MB/s < minimum {min_throughput / MB:.2f} MB/s",
                )
                continue
            selection = select_by_short_term_throughput(
                view, broker, minimum, at_least_one=conf.atLeastOneBundleSelected
            )
            if selection.skip is not None:
                skipped.add(broker, *selection.skip)
                continue
            detail = (
                f"usage {usage:.3f} >= avg {avg:.3f} + threshold {threshold:.3f}: offload at least "
                f"{minimum / MB:.2f} MB/s"
            )
            decisions.extend(
                UnloadDecision(broker, b, None, reason=Reason.OVERLOADED, detail=detail)
                for b in selection.bundles
            )
        if not decisions and conf.lowerBoundarySheddingEnabled:
            decisions.extend(self._lower_boundary(view, memory, threshold, min_throughput, skipped, stats))
        stats["usageHistory"] = _rounded(memory.history, view)
        return finish(
            decisions,
            skipped,
            stats,
            balanced_detail=f"no broker at or above avg {avg:.3f} + threshold {threshold:.3f}",
        )

    def _lower_boundary(
        self,
        view: ClusterView,
        memory: ThresholdShedderState,
        threshold: float,
        min_throughput: float,
        skipped: SkippedBrokers,
        stats: dict[str, Any],
    ) -> list[UnloadDecision]:
        conf = view.config
        avg = (
            _mean_history(view, memory)
            if conf.brokerlbThresholdShedderSingleHistoryUpdate
            else _average_usage(view, memory)
        )
        stats["lowerBoundaryAvgUsage"] = avg
        lower_bound = avg - threshold
        max_usage, max_broker, any_below = lower_bound, None, False
        for broker in view.modular_broker_order:
            usage = memory.history.get(broker, 0.0)
            if usage > max_usage and len(view.bundles_owned_by(broker)) > 1:
                max_usage, max_broker = usage, broker
            if usage < lower_bound:
                any_below = True
        if max_broker is None or not any_below:
            return []
        local = view.brokers[max_broker].local_data
        minimum = local.total_msg_throughput() * threshold * LOWER_BOUNDARY_THRESHOLD_MARGIN
        if min_throughput > minimum:
            skipped.add(
                max_broker,
                Reason.BELOW_THRESHOLD,
                f"lower-boundary shedding would move {minimum / MB:.2f} MB/s "
                f"< minimum {min_throughput / MB:.2f} MB/s",
            )
            return []
        selection = select_largest_first(
            view,
            max_broker,
            view.bundles_owned_by(max_broker),
            minimum,
            at_least_one=conf.atLeastOneBundleSelected,
        )
        if selection.skip is not None:
            skipped.add(max_broker, *selection.skip)
            return []
        detail = (
            f"lower-boundary shedding: busiest broker (usage {max_usage:.3f}) while some broker is "
            f"below avg {avg:.3f} - threshold {threshold:.3f}; offload {minimum / MB:.2f} MB/s"
        )
        return [
            UnloadDecision(max_broker, b, None, reason=Reason.UNDERLOADED, detail=detail)
            for b in selection.bundles
        ]


def _usage(local: LocalBrokerData, weights: tuple[float, float, float, float, float]) -> float:
    usage = local.max_resource_usage_with_weight(*weights)
    if usage > 1.0:  # a misconfigured limit: ignore the signals above 100 %
        usage = local.max_resource_usage_with_weight_within_limit(*weights)
    return usage


def _average_usage(view: ClusterView, memory: ThresholdShedderState) -> float:
    """Advance every broker's history with its current usage and return the mean history."""
    conf = view.config
    h = conf.loadBalancerHistoryResourcePercentage
    weights = (
        conf.loadBalancerCPUResourceWeight,
        conf.loadBalancerMemoryResourceWeight,
        conf.loadBalancerDirectMemoryResourceWeight,
        conf.loadBalancerBandwidthInResourceWeight,
        conf.loadBalancerBandwidthOutResourceWeight,
    )
    known, memory.usage = memory.usage, {}
    total = 0.0
    for broker in view.modular_broker_order:
        local = view.brokers[broker].local_data
        last = known.get(broker)
        if last is not None and last[0] is local and last[1] == weights:
            usage = last[2]
        else:
            usage = _usage(local, weights)
        memory.usage[broker] = (local, weights, usage)
        previous = memory.history.get(broker)
        current = usage if previous is None else previous * h + (1 - h) * usage
        memory.history[broker] = current
        total += current
    return total / len(view.brokers) if view.brokers else 0.0


def _mean_history(view: ClusterView, memory: ThresholdShedderState) -> float:
    if not view.brokers:
        return 0.0
    return sum(memory.history.get(b, 0.0) for b in view.brokers) / len(view.brokers)


def _rounded(history: dict[str, float], view: ClusterView) -> dict[str, float]:
    return {b: round(history[b], 6) for b in sorted(view.brokers) if b in history}
