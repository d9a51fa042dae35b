"""``TransferShedder`` (extensible load manager, PIP-192): bring the spread of broker load under a target.

Goals (Pulsar's list): keep the standard deviation of broker load (``weightedMaxEMA``) below
``loadBalancerBrokerLoadTargetStd``; move load from the most to the least loaded brokers,
with a destination (transfer) when ``loadBalancerTransferEnabled``; avoid repeated unloads
(hit count, cool-down after an unload, recently unloaded bundles); give load to brokers with
no traffic (new brokers); ignore outdated load data; respect isolation and anti-affinity
policies; limit brokers shed per cycle.

Config keys: ``loadBalancerBrokerLoadTargetStd`` (0.25),
``loadBalancerSheddingConditionHitCountThreshold`` (3), ``loadBalancerTransferEnabled`` (true),
``loadBalancerMaxNumberOfBrokerSheddingPerCycle`` (3), ``loadBalanceSheddingDelayInSeconds``
(180), ``loadBalancerBrokerLoadDataTTLInSeconds`` (1800),
``loadBalancerBrokerOverloadedThresholdPercentage`` (85),
``loadBalancerSheddingBundlesWithPoliciesEnabled`` (false), ``loadBalancerDebugModeEnabled``;
brokerlb options ``brokerlbTransferShedderCountSwapGain``, ``brokerlbTransferShedderCheckSwapCandidates``.

Memory between cycles (:class:`TransferShedderState`): the consecutive hit count.

Inputs: ``brokerLoadData`` (load = ``weightedMaxEMA``), ``topBundlesLoadData`` (walked in the
order reported), ``recentlyUnloadedBrokers`` / ``recentlyUnloadedBundles``, ``ownership``.

Rule (Pulsar's ``TransferShedder``, current version):

1. **stats**: brokers are sorted by load (all of ``brokerLoadData``). For the average and
   std only fresh data counts: data older than the TTL is ignored (``OutDatedData``); a broker
   unloaded recently whose data was updated less than the delay after that unload stops the
   cycle (``CoolDown``), otherwise its unload time is forgotten (``stats["cooledDownBrokers"]``);
   no fresh broker -> ``NoBrokers`` (or ``OutDatedData``); an available broker without load
   data -> ``NoLoadData``. ``avg = sum / n``, ``std = sqrt(sqSum / n - avg²)``.
2. **hit count**: +1 when ``std > target``, or the least loaded broker is under-loaded
   (``load < avg * m`` or ``msgThroughputEMA < that of the most loaded * m``,
   ``m = min(0.5, max(0, target / 2))``), or the most loaded is over-loaded (``load >
   overloaded threshold`` and ``load > avg + target``); otherwise reset to 0. Nothing happens
   until it exceeds the threshold (``HitCount``).
3. **loop**, at most ``maxNumberOfBrokerSheddingPerCycle`` brokers, while the next most loaded
   broker is above the current least loaded: reason ``Overloaded`` (std above target), else
   ``Underloaded`` (least loaded is under-loaded), else ``Overloaded`` (most loaded is
   over-loaded), else stop. ``offload = (max - min) / 2``; throughput to move =
   ``maxThroughput * offload / max``. The max broker's top bundles are walked: skip bundles it
   does not own, recently unloaded ones, ones that cannot move (policies, filters, no other
   broker / destination filtered out) and ones without traffic; never the last listed bundle;
   once the next bundle would overshoot, try to **swap** in bundles of the min broker (accepted
   while both new throughputs stay below the max broker's, succeeding when the min broker ends
   no higher than the max broker and the max broker below 75 % of its throughput); no swap ->
   stop with this broker. Each selected bundle: transfer to the min broker (or plain unload).
   Then the stats are updated as if the load moved, and the next least loaded broker is used.
4. No decision -> ``Skip`` with ``NoLoadData`` / ``NoBundles`` / ``HitCount``; a decision resets
   the hit count.

Faithful quirks (each with a documented option): Pulsar counts the swapped-back traffic ("gain")
only when ``loadBalancerDebugModeEnabled`` is on (``brokerlbTransferShedderCountSwapGain=true``
always counts it); Pulsar swaps min-broker bundles without checking their owner or whether they
were just unloaded (``brokerlbTransferShedderCheckSwapCandidates=true`` checks both).

Worked example (Pulsar's TransferShedderTest set-up): five brokers at cpu 2, 4, 6, 80, 90 % ->
avg 0.364, std 0.398 > 0.25. After three more hits the loop pairs broker5 (0.90) with broker1
(0.02): ``offload = 0.44`` -> about 49 % of broker5's throughput; its two top bundles (2 and 7
MB/s, 9 MB/s in all) allow moving the 2 MB/s one, transferred to broker1. broker4 is paired with
broker2 the same way.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, ClassVar

from brokerlb.loadbalance.decisions import Reason, SheddingResult, UnloadDecision
from brokerlb.loadbalance.registry import EXTENSIONS
from brokerlb.loadbalance.state import StrategyState
from brokerlb.loadbalance.view import ClusterView
from brokerlb.model import BrokerLoadData

__all__ = ["TransferShedder", "TransferShedderState", "LoadStats"]

_SWAP_TARGET = 0.75


@dataclass(slots=True)
class TransferShedderState:
    """TransferShedder's memory: how many cycles in a row the shedding condition held."""

    unload_condition_hit_count: int = 0


@dataclass(slots=True)
class LoadStats:
    """Pulsar's ``TransferShedder.LoadStats``: sums over fresh load data, brokers sorted by load."""

    sorted_brokers: list[str] = field(default_factory=list)
    total: int = 0
    sq_sum: float = 0.0
    avg: float = 0.0
    std: float = 0.0
    max_index: int = 0
    min_index: int = 0
    shed_this_cycle: int = 0
    max_per_cycle: int = 0

    def set(self, total_sum: float, sq_sum: float, total: int) -> None:
        self.sq_sum, self.total = sq_sum, total
        self.avg = total_sum / total if total else 0.0
        self.std = math.sqrt(max(0.0, sq_sum / total - self.avg * self.avg)) if total else 0.0

    def offload(self, max_load: float, min_load: float, amount: float) -> None:
        """Update the spread as if ``amount`` of load moved from the max to the min broker."""
        self.sq_sum -= max_load * max_load + min_load * min_load
        after_max = max(0.0, max_load - amount)
        after_min = min_load + amount
        self.sq_sum += after_max * after_max + after_min * after_min
        self.std = math.sqrt(abs(self.sq_sum / self.total - self.avg * self.avg))
        self.shed_this_cycle += 1
        self.min_index += 1

    def has_transferable_brokers(self) -> bool:
        return self.shed_this_cycle < self.max_per_cycle and self.min_index < self.max_index

    def peek_min(self) -> str:
        return self.sorted_brokers[self.min_index]

    def peek_max(self) -> str:
        return self.sorted_brokers[self.max_index]

    def poll_max(self) -> str:
        broker = self.sorted_brokers[self.max_index]
        self.max_index -= 1
        return broker


class TransferShedder:
    """Pulsar's ``org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder``."""

    class_name: ClassVar[str] = f"{EXTENSIONS}.scheduler.TransferShedder"

    def find_bundles_for_unloading(
        self, view: ClusterView, state: StrategyState, rng: random.Random
    ) -> SheddingResult:
        conf = view.config
        memory = state.get(self.class_name, TransferShedderState)
        loads = view.broker_load_data
        stats = LoadStats(
            sorted_brokers=sorted(view.broker_load_order, key=lambda b: loads[b].weighted_max_ema),
            max_per_cycle=conf.loadBalancerMaxNumberOfBrokerSheddingPerCycle,
        )
        stats.max_index = len(stats.sorted_brokers) - 1
        cooled: list[str] = []
        skip = _update_stats(view, stats, cooled)
        out: dict[str, Any] = {"cooledDownBrokers": cooled}
        if skip is not None:
            return SheddingResult.of([UnloadDecision.skip(skip[0], skip[1])], out)
        out.update({"loadAvg": stats.avg, "loadStd": stats.std})
        target = conf.loadBalancerBrokerLoadTargetStd
        if (
            stats.std > target
            or _underloaded(view, stats.peek_min(), stats)
            or _overloaded(view, stats.peek_max(), stats.avg)
        ):
            memory.unload_condition_hit_count += 1
        else:
            memory.unload_condition_hit_count = 0
        out["hitCount"] = memory.unload_condition_hit_count
        threshold = conf.loadBalancerSheddingConditionHitCountThreshold
        if memory.unload_condition_hit_count <= threshold:
            return SheddingResult.of(
                [
                    UnloadDecision.skip(
                        Reason.HIT_COUNT,
                        f"shedding condition hit count {memory.unload_condition_hit_count} "
                        f"<= threshold {threshold} (std {stats.std:.4f}, target {target})",
                    )
                ],
                out,
            )
        cycle = _Cycle(view, stats)
        decisions = cycle.run()
        out["loadStdAfter"] = stats.std
        if cycle.skipped:
            out["skippedBrokers"] = cycle.skipped
        if not decisions:
            reason = (
                Reason.NO_LOAD_DATA
                if cycle.empty_load_data
                else Reason.NO_BUNDLES
                if cycle.few_bundles
                else Reason.HIT_COUNT
            )
            detail = "; ".join(f"{b}: {d}" for b, d in cycle.skipped.items()) or (
                f"the cluster load meets the target (std {stats.std:.4f} <= {target})"
            )
            return SheddingResult.of([UnloadDecision.skip(reason, detail)], out)
        memory.unload_condition_hit_count = 0
        return SheddingResult.of(decisions, out)


def _update_stats(view: ClusterView, stats: LoadStats, cooled: list[str]) -> tuple[Reason, str] | None:
    """Pulsar's ``LoadStats.update``; returns a skip reason or ``None``."""
    conf = view.config
    ttl_ms = conf.loadBalancerBrokerLoadDataTTLInSeconds * 1000
    delay_ms = conf.loadBalanceSheddingDelayInSeconds * 1000
    reason: tuple[Reason, str] | None = None
    missing = set(view.available_brokers)
    total_sum = sq_sum = 0.0
    total = 0
    for broker in view.broker_load_order:
        data = view.broker_load_data[broker]
        missing.discard(broker)
        if view.now_ms - data.updated_at > ttl_ms:
            reason = (
                Reason.OUTDATED_DATA,
                f"{broker}'s load data (updatedAt {data.updated_at}) is older "
                f"than {conf.loadBalancerBrokerLoadDataTTLInSeconds} s",
            )
            continue
        unloaded_at = view.recently_unloaded_brokers.get(broker)
        if unloaded_at is not None:
            if data.updated_at - unloaded_at < delay_ms:
                stats.set(0.0, 0.0, 0)
                return (
                    Reason.COOL_DOWN,
                    f"{broker}'s load data is only {data.updated_at - unloaded_at} ms "
                    f"newer than its last unload (< {conf.loadBalanceSheddingDelayInSeconds} s)",
                )
            cooled.append(broker)
        load = data.weighted_max_ema
        total_sum += load
        sq_sum += load * load
        total += 1
    if total == 0:
        stats.set(0.0, 0.0, 0)
        return reason or (Reason.NO_BROKERS, "no broker load data")
    if missing:
        stats.set(0.0, 0.0, 0)
        return (Reason.NO_LOAD_DATA, f"missing load data from brokers {sorted(missing)}")
    stats.set(total_sum, sq_sum, total)
    return None


def _underloaded(view: ClusterView, broker: str, stats: LoadStats) -> bool:
    data = view.broker_load_data.get(broker)
    if data is None:
        return False
    multiplier = min(0.5, max(0.0, view.config.loadBalancerBrokerLoadTargetStd / 2.0))
    if data.weighted_max_ema < stats.avg * multiplier:
        return True
    top = view.broker_load_data.get(stats.peek_max())
    return top is not None and data.msg_throughput_ema < top.msg_throughput_ema * multiplier


def _overloaded(view: ClusterView, broker: str, avg: float) -> bool:
    data = view.broker_load_data.get(broker)
    if data is None:
        return False
    conf = view.config
    load = data.weighted_max_ema
    return (
        load > conf.loadBalancerBrokerOverloadedThresholdPercentage / 100.0
        and load > avg + conf.loadBalancerBrokerLoadTargetStd
    )


def _filtered_candidates(view: ClusterView, bundle: str) -> list[str]:
    """The extensible broker-filter pipeline for ``bundle`` (placement's ``extensible_filter_pipeline``)."""
    from brokerlb.loadbalance.placement.context import context_for
    from brokerlb.loadbalance.placement.extensible_pipeline import extensible_filter_pipeline

    return extensible_filter_pipeline(context_for(view), bundle)[0]


def _divide(a: float, b: float) -> float:
    """Java double division (x/0 is ±inf, 0/0 NaN)."""
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _throughput(data: BrokerLoadData) -> float:
    return data.msg_throughput_in + data.msg_throughput_out


class _Cycle:
    """One pass of the unload loop (step 3 of the module docstring)."""

    def __init__(self, view: ClusterView, stats: LoadStats) -> None:
        self.view, self.stats = view, stats
        conf = view.config
        self.transfer = conf.loadBalancerTransferEnabled
        self.count_gain = conf.loadBalancerDebugModeEnabled or conf.brokerlbTransferShedderCountSwapGain
        self.decisions: list[UnloadDecision] = []
        self.skipped: dict[str, str] = {}
        self.empty_load_data = 0
        self.few_bundles = 0
        self._candidates: dict[str, frozenset[str]] = {}

    def run(self) -> list[UnloadDecision]:
        view, stats = self.view, self.stats
        target = view.config.loadBalancerBrokerLoadTargetStd
        while stats.has_transferable_brokers():
            if stats.std > target:
                reason = Reason.OVERLOADED
            elif _underloaded(view, stats.peek_min(), stats):
                reason = Reason.UNDERLOADED
            elif _overloaded(view, stats.peek_max(), stats.avg):
                reason = Reason.OVERLOADED
            else:
                break
            self._shed(stats.poll_max(), stats.peek_min(), reason)
        return self.decisions

    def _shed(self, max_broker: str, min_broker: str, reason: Reason) -> None:
        view = self.view
        max_data, min_data = view.broker_load_data[max_broker], view.broker_load_data[min_broker]
        max_load, min_load = max_data.weighted_max_ema, min_data.weighted_max_ema
        offload = (max_load - min_load) / 2
        max_tput, min_tput = _throughput(max_data), _throughput(min_data)
        offload_tput = _divide(max_tput * offload, max_load)
        top = view.top_bundles.get(max_broker)
        entries = top.top_bundles_load_data if top is not None else []
        if not entries:
            self.empty_load_data += 1
            self.skipped[max_broker] = "NoLoadData: its top-bundles load data is empty"
            return
        if len(entries) == 1:
            self.few_bundles += 1
            self.skipped[max_broker] = f"NoBundles: sole bundle {entries[0].bundle_name} is overloading it"
            return
        min_top = view.top_bundles.get(min_broker)
        min_iter = iter(min_top.top_bundles_load_data) if min_top is not None else None
        marked = gained = 0.0
        remaining = len(entries)
        detail = (
            f"load {max_load:.3f} vs {min_load:.3f} on {min_broker} (avg {self.stats.avg:.3f}, "
            f"std {self.stats.std:.3f}): offload {offload:.3f} = {offload_tput / 1024:.1f} KB/s"
        )
        for entry in entries:
            bundle = entry.bundle_name
            if (
                not view.is_owner(max_broker, bundle)
                or bundle in view.recently_unloaded_bundles
                or not self._transferable(bundle, max_broker, min_broker)
            ):
                continue
            if remaining <= 1:
                break
            tput = entry.stats.msg_throughput_in + entry.stats.msg_throughput_out
            if tput == 0:
                continue
            swaps: list[UnloadDecision] = []
            if marked - gained + tput > offload_tput:
                swapped, swaps, swap_tput = self._try_swap(
                    min_iter, max_broker, min_broker, max_tput, min_tput, marked, gained, tput, reason, detail
                )
                if not swapped:
                    break
                if self.transfer and self.count_gain:
                    gained += swap_tput
            if self.transfer:
                self.decisions.extend(swaps)
            destination = min_broker if self.transfer else None
            self.decisions.append(
                UnloadDecision(max_broker, bundle, destination, reason=reason, detail=detail)
            )
            marked += tput
            remaining -= 1
        if marked > 0:
            self.stats.offload(max_load, min_load, _divide((marked - gained) * max_load, max_tput))
        else:
            self.few_bundles += 1
            self.skipped[max_broker] = (
                "NoBundles: no bundle in its top-bundles load data can be unloaded "
                "(split bundles or report more of them)"
            )

    def _try_swap(
        self,
        min_iter: Any,
        max_broker: str,
        min_broker: str,
        max_tput: float,
        min_tput: float,
        marked: float,
        gained: float,
        tput: float,
        reason: Reason,
        detail: str,
    ) -> tuple[bool, list[UnloadDecision], float]:
        if not self.transfer or min_iter is None:
            return False, [], 0.0
        max_new = max_tput - marked + gained - tput
        min_new = min_tput + marked - gained + tput
        swaps: list[UnloadDecision] = []
        swap_tput = 0.0
        check = self.view.config.brokerlbTransferShedderCheckSwapCandidates
        for entry in min_iter:  # shared iterator: each min-broker bundle is considered once per broker
            if check and (
                not self.view.is_owner(min_broker, entry.bundle_name)
                or entry.bundle_name in self.view.recently_unloaded_bundles
            ):
                continue
            if not self._transferable(entry.bundle_name, min_broker, max_broker):
                continue
            other = entry.stats.msg_throughput_in + entry.stats.msg_throughput_out
            if other == 0:
                continue
            if max_new + other < max_tput and min_new - other < max_tput:
                swaps.append(
                    UnloadDecision(
                        min_broker,
                        entry.bundle_name,
                        max_broker,
                        reason=reason,
                        detail=f"swap for {max_broker}: {detail}",
                    )
                )
                max_new, min_new = max_new + other, min_new - other
                swap_tput += other
                if min_new <= max_new and max_new < max_tput * _SWAP_TARGET:
                    return True, swaps, swap_tput
        return False, [], 0.0

    def _transferable(self, bundle: str, source: str, destination: str) -> bool:
        """Pulsar's ``isTransferable``: policies allow it and the filters leave a broker to go to."""
        view = self.view
        namespace = view.namespace_of(bundle)
        if (
            view.isolation_policy_for(namespace) is not None or view.anti_affinity_group(namespace)
        ) and not view.config.loadBalancerSheddingBundlesWithPoliciesEnabled:
            return False
        candidates = self._candidates.get(bundle)
        if candidates is None:
            candidates = self._candidates[bundle] = frozenset(_filtered_candidates(view, bundle))
        if destination not in candidates:
            return False
        others = candidates - {source}
        if not self.transfer:
            return bool(others)
        return destination in others
