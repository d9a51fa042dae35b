"""``LeastResourceUsageWithWeight`` of the extensible load manager (PIP-192 default placement).

Goal: as the modular strategy -- pick among brokers clearly below the average load -- but the
smoothing is done by each broker when it reports (``BrokerLoadData.weightedMaxEMA``), so the
strategy keeps no state. Pulsar class
``org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight``
(only this full name selects it; the short name means the modular one).

Config keys read: ``loadBalancerAverageResourceUsageDifferenceThresholdPercentage`` (10) and
``loadBalancerBrokerOverloadedThresholdPercentage`` (only for the "overloaded" note).

Selection: candidates without broker load data are skipped when averaging; ``avg`` is the
mean ``weightedMaxEMA`` of the others; the best brokers are those with
``weightedMaxEMA + diff <= avg``; none (or no load data at all): every candidate, brokers
without load data included. One is picked uniformly at random with the injected ``rng``.

Worked example (Pulsar's ``extensions.strategy.LeastResourceUsageWithWeightTest.testNoLoadDataBrokers``,
diff = 0.05): brokers 1 (50 %), 2 (100 %) and 5 (no load data): avg = 0.75, only broker 1 has
``0.5 + 0.05 <= 0.75`` -- it is chosen. With broker 1 at 100 % nobody qualifies and any of
1, 2, 5 may be chosen.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from brokerlb.loadbalance.state import StrategyState
from brokerlb.model import BrokerLoadData

if TYPE_CHECKING:
    from brokerlb.loadbalance.view import ClusterView

__all__ = [
    "NAME",
    "ExtensibleLeastResourceUsageWithWeight",
    "select_extensible_least_resource_usage_with_weight",
]

#: Pulsar's class name.
NAME = "org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight"


def select_extensible_least_resource_usage_with_weight(
    candidates: Sequence[str],
    broker_load_data: Mapping[str, BrokerLoadData],
    *,
    diff_threshold: float,
    rng: random.Random,
) -> str | None:
    """``select``: ``diff_threshold`` is a fraction (0.10). No candidates: ``None``."""
    if not candidates:
        return None
    loads = {b: broker_load_data[b].weighted_max_ema for b in candidates if b in broker_load_data}
    best: list[str] = []
    if loads:
        average = sum(loads.values()) / len(loads)
        best = [b for b in candidates if b in loads and loads[b] + diff_threshold <= average]
    if not best:
        best = list(candidates)
    return best[rng.randrange(len(best))]


class ExtensibleLeastResourceUsageWithWeight:
    """The registered placement strategy (stateless: the EMA is in each broker's load data)."""

    class_name: ClassVar[str] = NAME

    def select_broker(
        self,
        view: ClusterView,
        candidates: Sequence[str],
        bundle: str,
        state: StrategyState,
        rng: random.Random,
    ) -> str | None:
        return select_extensible_least_resource_usage_with_weight(
            candidates,
            view.broker_load_data,
            diff_threshold=view.config.loadBalancerAverageResourceUsageDifferenceThresholdPercentage / 100.0,
            rng=rng,
        )


#: The registry loads classes by Pulsar's simple class name.
LeastResourceUsageWithWeight = ExtensibleLeastResourceUsageWithWeight
