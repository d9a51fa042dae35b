"""``LeastLongTermMessageRate``: place a bundle on the broker with the least long-term message rate.

Goal: even out message rates, counting bundles already assigned but not reported yet, and
never pick an overloaded broker while another one is fine. Pulsar's default placement
strategy for the modular load manager
(``org.apache.pulsar.broker.loadbalance.impl.LeastLongTermMessageRate``).

Config keys read: ``loadBalancerBrokerOverloadedThresholdPercentage`` and the five
``loadBalancer*ResourceWeight`` keys.

Score of a broker:

* ``+inf`` when its weighted max resource usage
  (``max(cpu%·w, memory%·w, directMemory%·w, bwIn%·w, bwOut%·w) / 100``) exceeds the
  overload threshold (85 % by default);
* else its long-term message rate (``timeAverageData.longTermMsgRateIn + Out``) plus the
  long-term rate of every bundle preallocated to it.

The lowest score wins; ties (including "every broker overloaded") are broken uniformly at
random with the injected ``rng``, over the tied brokers in candidate order. No candidates:
``None``. Stateless.

Worked example (Pulsar's ``ModularLoadManagerStrategyTest.testLeastLongTermMessageRate``):
long-term rates 100, 200, 300 pick broker 1; raising broker 1 to 400 picks broker 2;
broker 2 at 90 % CPU (above 85 %) then picks broker 3.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from brokerlb.loadbalance.state import StrategyState
from brokerlb.model import BrokerData, ResourceWeights

if TYPE_CHECKING:
    from brokerlb.loadbalance.placement.context import PlacementContext
    from brokerlb.loadbalance.view import ClusterView

__all__ = [
    "NAME",
    "LeastLongTermMessageRate",
    "long_term_message_rate_score",
    "select_min_score",
    "select_least_long_term_message_rate",
]

#: Pulsar's class name.
NAME = "org.apache.pulsar.broker.loadbalance.impl.LeastLongTermMessageRate"


def long_term_message_rate_score(
    broker: BrokerData, overload_threshold: float, weights: ResourceWeights
) -> float:
    """The broker's score (module docstring); ``overload_threshold`` is a fraction (0.85)."""
    usage = broker.local_data.max_resource_usage_with_weight(
        weights.cpu, weights.memory, weights.direct_memory, weights.bandwidth_in, weights.bandwidth_out
    )
    if usage > overload_threshold:
        return math.inf
    preallocated = sum(
        data.long_term_data.msg_rate_in + data.long_term_data.msg_rate_out
        for data in broker.preallocated_bundle_data.values()
    )
    average = broker.time_average_data
    return preallocated + average.long_term_msg_rate_in + average.long_term_msg_rate_out


def select_min_score(
    candidates: Sequence[str], scores: Mapping[str, float], rng: random.Random
) -> str | None:
    """The candidate with the lowest score (absent = ``+inf``); ties at random; all ``+inf``:
    any candidate at random."""
    get = scores.get
    inf = math.inf
    best: list[str] = []
    min_score = inf
    for broker in candidates:
        score = get(broker, inf)
        if score < min_score:
            best = [broker]
            min_score = score
        elif score == min_score and score != inf:
            best.append(broker)
    if not best:
        best = list(candidates)
    if not best:
        return None
    return best[rng.randrange(len(best))]


def select_least_long_term_message_rate(
    candidates: Sequence[str],
    brokers: Mapping[str, BrokerData],
    *,
    overload_threshold: float,
    weights: ResourceWeights,
    rng: random.Random,
) -> str | None:
    """``selectBroker`` over ``candidates`` with the data in ``brokers``.

    A candidate without :class:`BrokerData` scores ``+inf`` (Pulsar would fail on it).
    """

    scores = {
        b: long_term_message_rate_score(brokers[b], overload_threshold, weights)
        for b in candidates
        if b in brokers
    }
    return select_min_score(candidates, scores, rng)


class LeastLongTermMessageRate:
    """The registered placement strategy (stateless)."""

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
        """As :meth:`select_broker`, counting the context's preallocations."""
        return select_min_score(candidates, context.scores, rng)
