"""``AvgShedder``: pair the busiest with the idlest brokers, confirm with hit counts, move half the gap.

Goal: even load without the ping-pong of history-smoothed strategies (PIP-364). It is both a
shedding and a placement strategy: a bundle it unloads is bound to the under-loaded broker of
its pair, and placement sends it there, so placement cannot undo the shed. Configure it as
``loadBalancerLoadSheddingStrategy`` **and** ``loadBalancerLoadPlacementStrategy``; both roles
share one state entry.

Config keys: ``loadBalancerAvgShedderLowThreshold`` (15), ``loadBalancerAvgShedderHighThreshold``
(40), ``loadBalancerAvgShedderHitCountLowThreshold`` (8),
``loadBalancerAvgShedderHitCountHighThreshold`` (2), ``maxUnloadPercentage`` (0.2; 0.5
recommended), ``minUnloadMessage`` (1000), ``minUnloadMessageThroughput`` (1 MiB/s), the
cpu / direct-memory / bandwidth weights.

Memory between cycles (:class:`AvgShedderState`): high and low hit counters per broker, and
bundle -> broker bindings made by shedding (and by placement of unbound bundles).

Rule (Pulsar's ``AvgShedder``):

1. score = ``getMaxResourceUsageWithWeight(cpu, directMemory, bwIn, bwOut) * 100``; brokers
   sorted by score with Java's comparator ``(int)(s1 - s2)`` (scores less than 1 apart compare
   equal; the sort is stable over broker ids);
2. pair the i-th lowest with the i-th highest while ``i <= j``; for a pair with gap
   ``d = score(max) - score(min)``: ``d < low`` clears both brokers' counters (no pair);
   ``low <= d < high`` counts a low hit for both and clears their high hits; ``d >= high``
   counts a low and a high hit for both;
3. no pair at all -> every counter is cleared, nothing to do;
4. a pair acts when one of its brokers has ``high hits >= hitCountHigh`` or ``low hits >=
   hitCountLow``; its counters are then cleared and it moves ``(max - min) * maxUnloadPercentage``
   of message rate (if that exceeds ``minUnloadMessage``), else of throughput (if that exceeds
   ``minUnloadMessageThroughput``), else nothing;
5. the busy broker's bundles (not recently unloaded), largest short-term rate (or throughput)
   first: a bundle with ``0 < value <= remaining`` is selected and bound to the idle broker.

Placement (``selectBroker``): a bound bundle goes to its broker if that broker is a candidate;
otherwise a broker is drawn from the sorted candidates at ``abs(crc32(str(random int))) % n``
(random int from the seeded rng) and the bundle is bound to it.

Worked example (Pulsar's AvgShedderTest ``testHitHighThreshold``): cpu 80 %, 50 %, 30 %;
maxUnloadPercentage 0.5, high threshold 40, 2 hits. Pair (30 %, 80 %): gap 50 >= 40 -> a high hit
each; first cycle nothing (1 < 2), second cycle the pair acts: ``(20000 - 2000) * 0.5 = 9000``
msg/s move, i.e. ten bundles of 900 msg/s, all bound to the 30 % broker.
"""

from __future__ import annotations

import functools
import random
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from brokerlb.loadbalance.decisions import Reason, SheddingResult, UnloadDecision
from brokerlb.loadbalance.registry import IMPL
from brokerlb.loadbalance.shedding.common import MB, SkippedBrokers, finish, sort_largest_first
from brokerlb.loadbalance.state import StrategyState
from brokerlb.loadbalance.view import ClusterView

__all__ = ["AvgShedder", "AvgShedderState"]


@dataclass(slots=True)
class AvgShedderState:
    """AvgShedder's memory (shared by its shedding and placement roles)."""

    #: broker -> consecutive cycles its pair's gap was at least the high threshold
    high_hits: dict[str, int] = field(default_factory=dict)
    #: broker -> consecutive cycles its pair's gap was at least the low threshold
    low_hits: dict[str, int] = field(default_factory=dict)
    #: bundle -> broker it should be placed on (Pulsar keys this by the BundleData object)
    bundle_broker: dict[str, str] = field(default_factory=dict)


class AvgShedder:
    """Pulsar's ``org.apache.pulsar.broker.loadbalance.impl.AvgShedder`` (module docstring)."""

    class_name: ClassVar[str] = f"{IMPL}.AvgShedder"

    # ------------------------------------------------------------------ shedding

    def find_bundles_for_unloading(
        self, view: ClusterView, state: StrategyState, rng: random.Random
    ) -> SheddingResult:
        conf = view.config
        memory = state.get(self.class_name, AvgShedderState)
        scores = {broker: _score(view, broker) for broker in view.modular_broker_order}
        ordered = _java_sorted(list(scores), scores)
        pairs = _find_pairs(
            ordered,
            scores,
            memory,
            conf.loadBalancerAvgShedderLowThreshold,
            conf.loadBalancerAvgShedderHighThreshold,
        )
        stats: dict[str, Any] = {
            "scores": {b: round(s, 6) for b, s in scores.items()},
            "sortedBrokers": ordered,
            "pairs": [[low, high] for low, high in pairs],
        }
        skipped = SkippedBrokers()
        if not pairs:
            memory.high_hits.clear()
            memory.low_hits.clear()
            return finish(
                [], skipped, stats, balanced_detail="no broker pair differs by the low threshold or more"
            )
        decisions: list[UnloadDecision] = []
        for low, high in pairs:
            if not _hit(
                memory,
                conf.loadBalancerAvgShedderHitCountHighThreshold,
                conf.loadBalancerAvgShedderHitCountLowThreshold,
                low,
                high,
            ):
                skipped.add(
                    high,
                    Reason.HIT_COUNT,
                    f"pair with {low}: high hits {memory.high_hits.get(high, 0)}/"
                    f"{conf.loadBalancerAvgShedderHitCountHighThreshold}, low hits "
                    f"{memory.low_hits.get(high, 0)}/{conf.loadBalancerAvgShedderHitCountLowThreshold}"
                    " (not reached yet)",
                )
                continue
            for broker in (low, high):
                memory.high_hits.pop(broker, None)
                memory.low_hits.pop(broker, None)
            decisions.extend(self._select(view, memory, high, low, scores, skipped))
        stats["highHits"] = dict(sorted(memory.high_hits.items()))
        stats["lowHits"] = dict(sorted(memory.low_hits.items()))
        return finish(decisions, skipped, stats, balanced_detail="")

    def _select(
        self,
        view: ClusterView,
        memory: AvgShedderState,
        high: str,
        low: str,
        scores: dict[str, float],
        skipped: SkippedBrokers,
    ) -> list[UnloadDecision]:
        conf = view.config
        busy, idle = view.brokers[high].local_data, view.brokers[low].local_data
        msg_need = (busy.total_msg_rate() - idle.total_msg_rate()) * conf.maxUnloadPercentage
        tput_need = (busy.total_msg_throughput() - idle.total_msg_throughput()) * conf.maxUnloadPercentage
        if msg_need > conf.minUnloadMessage:
            by_rate, remaining = True, msg_need
        elif tput_need > conf.minUnloadMessageThroughput:
            by_rate, remaining = False, tput_need
        else:
            skipped.add(
                high,
                Reason.BELOW_THRESHOLD,
                f"pair with {low}: {msg_need:.1f} msg/s <= {conf.minUnloadMessage} and "
                f"{tput_need / MB:.2f} MB/s <= {conf.minUnloadMessageThroughput / MB:.2f} MB/s",
            )
            return []
        values: list[tuple[float, str]] = []
        for bundle in view.bundles_owned_by(high):
            data = view.shedding_bundle_data(bundle)
            if data is None or bundle in view.recently_unloaded_bundles:
                continue
            short = data.short_term_data
            values.append((short.total_msg_rate() if by_rate else short.total_msg_throughput(), bundle))
        sort_largest_first(view, values)
        what = "msg/s" if by_rate else "B/s"
        detail = (
            f"score {scores[high]:.1f} vs {scores[low]:.1f} on {low}: move {remaining:.1f} {what} to {low}"
        )
        decisions: list[UnloadDecision] = []
        for value, bundle in values:
            if 0 < value <= remaining:
                decisions.append(UnloadDecision(high, bundle, None, reason=Reason.OVERLOADED, detail=detail))
                memory.bundle_broker[bundle] = low
                remaining -= value
        if not decisions:
            skipped.add(
                high, Reason.NO_BUNDLES, f"pair with {low}: no bundle of 0 < {what} <= {remaining:.1f}"
            )
        return decisions

    # ------------------------------------------------------------------ placement

    def select_broker(
        self,
        view: ClusterView,
        candidates: Sequence[str],
        bundle: str,
        state: StrategyState,
        rng: random.Random,
    ) -> str | None:
        if not candidates:
            return None
        memory = state.get(self.class_name, AvgShedderState)
        bound = memory.bundle_broker.get(bundle)
        if bound is not None and bound in candidates:
            return bound
        brokers = sorted(candidates)
        token = str(rng.randint(-(2**31), 2**31 - 1))
        index = zlib.crc32(token.encode("utf-8")) % len(brokers)
        memory.bundle_broker[bundle] = brokers[index]
        return brokers[index]


def _score(view: ClusterView, broker: str) -> float:
    conf = view.config
    local = view.brokers[broker].local_data
    return (
        local.max_resource_usage_with_weight_no_memory(
            conf.loadBalancerCPUResourceWeight,
            conf.loadBalancerDirectMemoryResourceWeight,
            conf.loadBalancerBandwidthInResourceWeight,
            conf.loadBalancerBandwidthOutResourceWeight,
        )
        * 100
    )


def _java_sorted(brokers: list[str], scores: dict[str, float]) -> list[str]:
    """Sort with Pulsar's comparator ``(int)(s1 - s2)`` (a stable sort; < 1 apart compares equal)."""

    def compare(a: str, b: str) -> int:
        return int(scores[a] - scores[b])

    return sorted(brokers, key=functools.cmp_to_key(compare))


def _find_pairs(
    ordered: list[str], scores: dict[str, float], memory: AvgShedderState, low: float, high: float
) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    i, j = 0, len(ordered) - 1
    while i <= j:
        min_broker, max_broker = ordered[i], ordered[j]
        gap = scores[max_broker] - scores[min_broker]
        if gap < low:
            for broker in (min_broker, max_broker):
                memory.high_hits.pop(broker, None)
                memory.low_hits.pop(broker, None)
        else:
            pairs.append((min_broker, max_broker))
            for broker in (min_broker, max_broker):
                memory.low_hits[broker] = memory.low_hits.get(broker, 0) + 1
            if gap < high:
                for broker in (min_broker, max_broker):
                    memory.high_hits.pop(broker, None)
            else:
                for broker in (min_broker, max_broker):
                    memory.high_hits[broker] = memory.high_hits.get(broker, 0) + 1
        i += 1
        j -= 1
    return pairs


def _hit(memory: AvgShedderState, high_threshold: int, low_threshold: int, low: str, high: str) -> bool:
    return any(
        memory.high_hits.get(b, 0) >= high_threshold or memory.low_hits.get(b, 0) >= low_threshold
        for b in (low, high)
    )
