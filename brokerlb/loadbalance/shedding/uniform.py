"""``UniformLoadShedder``: narrow the gap between the busiest and the idlest broker.

Goal: message rate and throughput spread evenly. Looks only at the two extremes each cycle.

Config keys: ``loadBalancerMsgRateDifferenceShedderThreshold`` (50 %),
``loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold`` (4), ``maxUnloadPercentage``
(0.2), ``minUnloadMessage`` (1000), ``minUnloadMessageThroughput`` (1 MiB/s),
``maxUnloadBundleNumPerShedding`` (-1 = no limit). Memory between cycles: none.

Rule (Pulsar's ``UniformLoadShedder``, current version):

1. per broker ``rate = msgRateIn + msgRateOut`` and ``tput = msgThroughputIn + msgThroughputOut``
   (its ``LocalBrokerData``); the broker with the highest rate and the one with the highest
   throughput (first strictly greater wins), likewise the lowest; a minimum within 1e-6 of 0
   counts as 1;
2. ``rateExceeded`` if ``(maxRate - minRate) * 100 / minRate > rate threshold``;
   ``tputExceeded`` if ``maxTput / minTput > multiplier threshold`` (a threshold of 0 disables);
3. by rate when it is exceeded (it wins), else by throughput: ``need = int((max - min) *
   maxUnloadPercentage)``; only if the busiest broker has more than one bundle and ``need`` reaches
   the minimum (``minUnloadMessage`` / ``minUnloadMessageThroughput``);
4. its bundles -- not recently unloaded and **with traffic** (short-term rate, or throughput,
   ``> 0``: a bundle without traffic never moves) -- largest first: each one whose value is
   ``<= need + 1000`` (Pulsar's margin, in both modes) is selected and ``need -= int(value)``
   (Java's ``MutableInt``: the value is truncated and the sum is a Java ``int``, so a ``need``
   saturated near 2**31 wraps when the margin is added and then nothing fits); stop adding at
   ``maxUnloadBundleNumPerShedding`` bundles.

Worked example (Pulsar's ``testFilterOutNonTrafficBundlesForUnloading``): brokers at 10 000 and
100 000 msg/s, ``maxUnloadPercentage`` 0.5, the busy broker's bundles at 60 000, 20 000, 20 000, 0
and 0 msg/s: ``(100000 - 10000) * 100 / 10000 = 900 % > 50 %``; ``need = int(90000 * 0.5) =
45000``; 60 000 > 46 000 is too big, 20 000 fits (need 25 000), 20 000 fits (need 5 000); the two
idle bundles are not candidates: two unloads.
"""

from __future__ import annotations

import math
import random
from typing import Any, ClassVar

from brokerlb.loadbalance.decisions import Reason, SheddingResult, UnloadDecision
from brokerlb.loadbalance.registry import IMPL
from brokerlb.loadbalance.shedding.common import SkippedBrokers, finish, sort_largest_first
from brokerlb.loadbalance.state import StrategyState
from brokerlb.loadbalance.view import ClusterView

__all__ = ["UniformLoadShedder", "MARGIN"]

_EPS = 1e-6
_JAVA_INT_MAX = 2**31 - 1
#: Pulsar's margin: a bundle up to this much above the remaining need still moves.
MARGIN = 1000


class UniformLoadShedder:
    """Pulsar's ``org.apache.pulsar.broker.loadbalance.impl.UniformLoadShedder`` (module docstring)."""

    class_name: ClassVar[str] = f"{IMPL}.UniformLoadShedder"

    def find_bundles_for_unloading(
        self, view: ClusterView, state: StrategyState, rng: random.Random
    ) -> SheddingResult:
        conf = view.config
        max_rate = max_tput = -1.0
        min_rate = min_tput = float(_JAVA_INT_MAX)
        rate_max_broker = tput_max_broker = None
        for broker in view.modular_broker_order:
            local = view.brokers[broker].local_data
            rate, tput = local.total_msg_rate(), local.total_msg_throughput()
            if rate > max_rate:
                rate_max_broker, max_rate = broker, rate
            if tput > max_tput:
                tput_max_broker, max_tput = broker, tput
            min_rate = min(min_rate, rate)
            min_tput = min(min_tput, tput)
        if abs(min_rate) <= _EPS:
            min_rate = 1.0
        if abs(min_tput) <= _EPS:
            min_tput = 1.0
        rate_diff_pct = (max_rate - min_rate) * 100 / min_rate
        tput_multiplier = max_tput / min_tput
        rate_threshold = conf.loadBalancerMsgRateDifferenceShedderThreshold
        tput_threshold = conf.loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold
        rate_exceeded = rate_threshold > 0 and rate_diff_pct > rate_threshold
        tput_exceeded = tput_threshold > 0 and tput_multiplier > tput_threshold
        stats: dict[str, Any] = {
            "msgRateDifferencePercentage": rate_diff_pct,
            "msgThroughputDifferenceRate": tput_multiplier,
            "maxMsgRate": max_rate,
            "minMsgRate": min_rate,
            "maxMsgThroughput": max_tput,
            "minMsgThroughput": min_tput,
        }
        skipped = SkippedBrokers()
        if not (rate_exceeded or tput_exceeded) or not view.brokers:
            return finish(
                [],
                skipped,
                stats,
                balanced_detail=(
                    f"rate difference {rate_diff_pct:.1f}% <= {rate_threshold}% and throughput multiplier "
                    f"{tput_multiplier:.2f} <= {tput_threshold}"
                ),
            )
        by_rate = rate_exceeded
        chosen = rate_max_broker if by_rate else tput_max_broker
        if chosen is None:  # pragma: no cover - every broker has a rate >= 0 > -1
            return finish([], skipped, stats, balanced_detail="no broker")
        broker = chosen
        need = (
            _java_int((max_rate - min_rate) * conf.maxUnloadPercentage)
            if by_rate
            else _java_int((max_tput - min_tput) * conf.maxUnloadPercentage)
        )
        minimum = conf.minUnloadMessage if by_rate else conf.minUnloadMessageThroughput
        stats.update(
            {
                "balanceBy": "msgRate" if by_rate else "msgThroughput",
                "overloadedBroker": broker,
                "required": need,
            }
        )
        owned = view.bundles_owned_by(broker)
        if len(owned) <= 1:
            skipped.add(
                broker,
                Reason.SINGLE_BUNDLE if owned else Reason.NO_BUNDLES,
                f"has {len(owned)} bundle(s); nothing can move",
            )
            return finish([], skipped, stats, balanced_detail="")
        if need < minimum:
            skipped.add(broker, Reason.BELOW_THRESHOLD, f"would move {need} < minimum {minimum}")
            return finish([], skipped, stats, balanced_detail="")
        decisions = self._select(view, broker, owned, need, by_rate)
        if not decisions:
            skipped.add(
                broker,
                Reason.NO_BUNDLES,
                f"no bundle with traffic is small enough to move (need {need} + margin {MARGIN})",
            )
        return finish(decisions, skipped, stats, balanced_detail="")

    @staticmethod
    def _select(
        view: ClusterView, broker: str, owned: frozenset[str], need: int, by_rate: bool
    ) -> list[UnloadDecision]:
        limit = view.config.maxUnloadBundleNumPerShedding
        recently_unloaded = view.recently_unloaded_bundles
        values: list[tuple[float, str]] = []
        for bundle in owned:
            data = view.shedding_bundle_data(bundle)
            if data is None or bundle in recently_unloaded:
                continue
            short = data.short_term_data
            value = short.total_msg_rate() if by_rate else short.total_msg_throughput()
            if value > 0:  # a bundle without traffic is never a candidate
                values.append((value, bundle))
        sort_largest_first(view, values)
        what = "msg/s" if by_rate else "B/s"
        decisions: list[UnloadDecision] = []
        for value, bundle in values:
            if limit != -1 and len(decisions) >= limit:
                break
            if value <= _java_int_add(need, MARGIN):
                detail = f"bundle {value:.1f} {what} <= remaining need {need} + margin {MARGIN} {what}"
                need = _java_int_add(need, _java_int(-value))  # MutableInt.add(-value)
                decisions.append(
                    UnloadDecision(broker, bundle, None, reason=Reason.OVERLOADED, detail=detail)
                )
        return decisions


def _java_int(value: float) -> int:
    """Java's ``(int) value``: truncation toward zero, saturating at the int range."""
    if math.isnan(value):
        return 0
    return max(-(2**31), min(_JAVA_INT_MAX, math.trunc(value)))


def _java_int_add(a: int, b: int) -> int:
    """Java's ``int`` addition: the sum wraps around at 32 bits."""
    return (a + b + 2**31) % 2**32 - 2**31
