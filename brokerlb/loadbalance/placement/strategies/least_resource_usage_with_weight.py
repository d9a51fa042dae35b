"""``LeastResourceUsageWithWeight`` (modular): place on a broker clearly below the average usage.

Goal: choose among brokers whose smoothed resource usage is at least a margin below the
candidates' average, so short load spikes do not decide placement (PIP-182).
Pulsar class ``org.apache.pulsar.broker.loadbalance.impl.LeastResourceUsageWithWeight``.

Config keys read: ``loadBalancerHistoryResourcePercentage`` (``h``, 0.9),
``loadBalancerAverageResourceUsageDifferenceThresholdPercentage`` (10), the weights
``loadBalancerCPUResourceWeight``, ``loadBalancerDirectMemoryResourceWeight``,
``loadBalancerBandwidthInResourceWeight``, ``loadBalancerBandwidthOutResourceWeight``
(the 4-weight usage: memory is not a signal), and
``loadBalancerBrokerOverloadedThresholdPercentage`` (only for the "overloaded" note).

State kept between calls (:class:`ResourceUsageHistory`): per broker an EMA of the weighted
usage, ``ema = ema·h + usage·(1-h)``, updated for **every candidate on every call**. A broker
that owns no bundle or reports no message rate restarts its EMA at the current usage (a
restarted broker must not look busy because of its history). Brokers no longer in the cluster
are forgotten (``onActiveBrokersChange``).

Selection: ``avg`` = mean EMA of the candidates; the best brokers are those with
``ema + diff <= avg`` (``diff`` = threshold / 100); none: every candidate. One of them is
picked uniformly at random with the injected ``rng``.

Worked example (``ModularLoadManagerStrategyTest.testLeastResourceUsageWithWeight``; h = 0.5,
diff = 0.05): usages 10 %, 30 %, 60 % give EMAs 0.1, 0.3, 0.6, avg 0.333; only broker 1 has
``0.1 + 0.05 <= 0.333``, so it is chosen. Further along that test a call with usages 35 %,
20 %, 45 % leaves the EMAs at 0.30625, 0.25, 0.44375 (avg 0.333) and broker 2 is chosen.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from brokerlb.loadbalance.state import StrategyState
from brokerlb.model import BrokerData, ResourceWeights

if TYPE_CHECKING:
    from brokerlb.loadbalance.placement.context import PlacementContext
    from brokerlb.loadbalance.view import ClusterView

__all__ = [
    "NAME",
    "LeastResourceUsageWithWeight",
    "ResourceUsageHistory",
    "weighted_usage",
    "restarts_history",
    "select_least_resource_usage_with_weight",
]

#: Pulsar's class name (the short name ``LeastResourceUsageWithWeight`` means this one).
NAME = "org.apache.pulsar.broker.loadbalance.impl.LeastResourceUsageWithWeight"

#: EMA assumed for a candidate that has none (``MAX_RESOURCE_USAGE``).
MAX_RESOURCE_USAGE = 1.0


def weighted_usage(broker: BrokerData, weights: ResourceWeights) -> float:
    """``max(cpu%·w, directMemory%·w, bwIn%·w, bwOut%·w) / 100`` of the broker's report."""
    return broker.local_data.max_resource_usage_with_weight_no_memory(
        weights.cpu, weights.direct_memory, weights.bandwidth_in, weights.bandwidth_out
    )


def restarts_history(broker: BrokerData) -> bool:
    """A broker with no bundles or no message rate starts its EMA afresh."""
    local = broker.local_data
    return not local.bundles or (local.msg_rate_in == 0 and local.msg_rate_out == 0)


@dataclass
class ResourceUsageHistory:
    """The strategy's memory: ``broker -> EMA of weighted usage`` (Pulsar's
    ``brokerAvgResourceUsageWithWeight``). JSON: ``{"brokerAvgResourceUsageWithWeight": {...}}``."""

    ema: dict[str, float] = field(default_factory=dict)

    def update(self, broker: str, usage: float, restart: bool, history_percentage: float) -> float:
        previous = None if restart else self.ema.get(broker)
        value = (
            usage if previous is None else previous * history_percentage + (1 - history_percentage) * usage
        )
        self.ema[broker] = value
        return value

    def forget_inactive(self, active_brokers: Iterable[str]) -> None:
        """Drop brokers that left the cluster (``onActiveBrokersChange``)."""
        active = set(active_brokers)
        for broker in [b for b in self.ema if b not in active]:
            del self.ema[broker]

    def to_json(self) -> dict[str, Any]:
        return {"brokerAvgResourceUsageWithWeight": dict(self.ema)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ResourceUsageHistory:
        values = data.get("brokerAvgResourceUsageWithWeight", {})
        return cls({str(k): float(v) for k, v in values.items()})


def select_least_resource_usage_with_weight(
    candidates: Sequence[str],
    history: ResourceUsageHistory,
    *,
    samples: Mapping[str, tuple[float, bool]],
    history_percentage: float,
    diff_threshold: float,
    rng: random.Random,
) -> str | None:
    """``selectBroker``: update every candidate's EMA, then pick among those ``diff`` below average.

    ``samples[broker]`` is ``(weighted usage, restarts_history)``; a broker missing from it has no
    load data (brokerlb skips its EMA update; Pulsar would fail on it). ``diff_threshold`` is a
    fraction (0.10).
    """
    if not candidates:
        return None
    ema = history.ema
    h = history_percentage
    total = 0.0
    for broker in candidates:
        sample = samples.get(broker)
        if sample is None:
            total += ema.get(broker, MAX_RESOURCE_USAGE)
            continue
        usage, restart = sample
        previous = None if restart else ema.get(broker)
        value = usage if previous is None else previous * h + (1 - h) * usage
        ema[broker] = value
        total += value
    average = total / len(candidates)
    best = [b for b in candidates if ema.get(b, MAX_RESOURCE_USAGE) + diff_threshold <= average]
    if not best:
        best = list(candidates)
    return best[rng.randrange(len(best))]


class LeastResourceUsageWithWeight:
    """The registered placement strategy; its EMA lives in ``state[NAME]`` (:class:`ResourceUsageHistory`)."""

    class_name: ClassVar[str] = NAME

    def select_broker(
        self,
        view: ClusterView,
        candidates: Sequence[str],
        bundle: str,
        state: StrategyState,
        rng: random.Random,
    ) -> str | None:
        from brokerlb.loadbalance.placement.context import context_for

        return self.select_in_context(context_for(view), candidates, bundle, state, rng)

    def select_in_context(
        self,
        context: PlacementContext,
        candidates: Sequence[str],
        bundle: str,
        state: StrategyState,
        rng: random.Random,
    ) -> str | None:
        conf = context.config
        history = state.get(NAME, ResourceUsageHistory)
        active = context.available_set
        if not history.ema.keys() <= active:
            history.forget_inactive(active)  # onActiveBrokersChange
        return select_least_resource_usage_with_weight(
            candidates,
            history,
            samples=context.usage_samples,
            history_percentage=conf.loadBalancerHistoryResourcePercentage,
            diff_threshold=conf.loadBalancerAverageResourceUsageDifferenceThresholdPercentage / 100.0,
            rng=rng,
        )
