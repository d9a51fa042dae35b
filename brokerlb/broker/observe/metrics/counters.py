"""Load-balancing, assignment and lookup counters, fed by what the broker decides and answers.

* :class:`LoadBalancingCounters` counts the leader's records (:class:`~brokerlb.broker.leader.leader_feed.
  ObservedCycle`) as Pulsar's extensible load manager counts its decisions (``UnloadCounter``,
  ``SplitCounter``), whichever strategy runs: every decision of a shedding cycle adds one to
  ``unload_broker_breakdown{result=label, reason}``; a cycle's carried-out moves add to
  ``unload_bundle`` (one per bundle) and ``unload_broker`` (one per source broker); each split
  decision adds to ``bundles_split_breakdown`` (``Success`` and its reason when carried out, else
  ``Failure``/``Unknown``) and a carried-out split to ``bundles_split``. brokerlb's own reasons
  (``SingleBroker``, ``BelowThreshold``, ...) are counted under their names beside Pulsar's.
  ``moves{kind, cause}`` counts carried-out moves by kind (transfer, unload, split) and cause (the
  decision's reason). Operators' unloads, transfers and splits through the REST API
  (:meth:`LoadBalancingCounters.admin_action`, on the broker that carries them out) count as
  Pulsar's extensible manager counts them: ``Success``/``Admin`` in the breakdown, one more
  unloaded or split bundle, and a move of cause ``Admin``. ``cycles{kind}`` counts the leader's
  steps (``shedding``, ``split``), those that decided nothing too: whether the leader is checking.
* :class:`AssignmentMetrics` -- ``assign_broker_breakdown{result}`` (Success / Empty when no
  broker fits / Failure) and the latency of each placement (Pulsar's
  ``pulsar_broker_load_manager_bundle_assigment`` summary, milliseconds).
* :class:`LookupMetrics` -- Pulsar's ``pulsar_broker_lookup`` summary (milliseconds) and the
  ``_answers`` / ``_redirects`` / ``_failures`` counters.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from brokerlb.broker.leader.leader_feed import ObservedCycle
from brokerlb.broker.observe.metrics.quantiles import QuantileWindow
from brokerlb.errors import NoBrokerAvailableError
from brokerlb.loadbalance.decisions import SplitDecision, UnloadDecision

__all__ = [
    "LoadBalancingCounters",
    "AssignmentMetrics",
    "LookupMetrics",
    "UNLOAD_BREAKDOWN",
    "SPLIT_BREAKDOWN",
]

T = TypeVar("T")

#: Pulsar's ``UnloadCounter`` label x reason combinations (exported from 0).
UNLOAD_BREAKDOWN: dict[str, tuple[str, ...]] = {
    "Success": ("Overloaded", "Underloaded", "Admin"),
    "Skip": (
        "Balanced",
        "NoBundles",
        "CoolDown",
        "OutDatedData",
        "NoLoadData",
        "NoBrokers",
        "Unknown",
        "HitCount",
    ),
    "Failure": ("Unknown",),
}
#: Pulsar's ``SplitCounter`` combinations.
SPLIT_BREAKDOWN: dict[str, tuple[str, ...]] = {
    "Success": ("Topics", "Sessions", "MsgRate", "Bandwidth", "Admin"),
    "Skip": ("Balanced",),
    "Failure": ("Unknown",),
}
#: Pulsar's ``AssignCounter`` results.
ASSIGN_RESULTS = ("Success", "Empty", "Skip", "Failure")


def _zeros(table: dict[str, tuple[str, ...]]) -> collections.Counter[tuple[str, str]]:
    counter: collections.Counter[tuple[str, str]] = collections.Counter()
    for label, reasons in table.items():
        for reason in reasons:
            counter[(label, reason)] += 0
    return counter


class LoadBalancingCounters:
    """Counters of the leader's decisions (module docstring)."""

    def __init__(self) -> None:
        self.unload_broker = 0
        self.unload_bundle = 0
        self.bundles_split = 0
        self.unload_breakdown = _zeros(UNLOAD_BREAKDOWN)
        self.split_breakdown = _zeros(SPLIT_BREAKDOWN)
        self.moves: collections.Counter[tuple[str, str]] = collections.Counter()
        #: the leader's steps run here, by kind (exported from 0)
        self.cycles: collections.Counter[str] = collections.Counter({"shedding": 0, "split": 0})
        #: ``(avg, std)`` of the brokers' load the last shedding cycle saw (fractions, as Pulsar's)
        self.load_avg_std: tuple[float, float] | None = None

    def admin_action(self, kind: str) -> None:
        """An operator's ``unload``, ``transfer`` or ``split`` was carried out here (reason ``Admin``)."""
        if kind == "split":
            self.split_breakdown[("Success", "Admin")] += 1
            self.bundles_split += 1
        else:
            self.unload_breakdown[("Success", "Admin")] += 1
            self.unload_bundle += 1
        self.moves[(kind, "Admin")] += 1

    def record(self, cycle: ObservedCycle, loads: Callable[[], tuple[float, float]] | None = None) -> None:
        self.cycles[cycle.kind] += 1
        if cycle.kind == "shedding":
            self._shedding(cycle, loads)
        elif cycle.kind == "split":
            self._splits(cycle)

    def _shedding(self, cycle: ObservedCycle, loads: Callable[[], tuple[float, float]] | None) -> None:
        for d in cycle.decisions:
            if isinstance(d, UnloadDecision):
                self.unload_breakdown[(str(d.label), str(d.reason))] += 1
        done = [m for m, ok in zip(cycle.moves, cycle.moves_done, strict=True) if ok]
        self.unload_bundle += len(done)
        self.unload_broker += len({m.source for m in done})
        for m in done:
            self.moves[("transfer" if m.transfer else "unload", m.reason or "Unknown")] += 1
        avg, std = cycle.stats.get("loadAvg"), cycle.stats.get("loadStd")
        if isinstance(avg, int | float) and isinstance(std, int | float):
            self.load_avg_std = (float(avg), float(std))
        elif loads is not None:
            self.load_avg_std = loads()
        self._splits(cycle)

    def _splits(self, cycle: ObservedCycle) -> None:
        for split, ok in zip(cycle.splits, cycle.splits_done, strict=True):
            if ok:
                self.split_breakdown[(str(split.label), str(split.reason))] += 1
                self.bundles_split += 1
                self.moves[("split", str(split.reason))] += 1
            else:
                self.split_breakdown[("Failure", "Unknown")] += 1
        for decision in cycle.decisions:  # decided, not carried out as a split (skips and failures)
            if isinstance(decision, SplitDecision) and not decision.is_split:
                self.split_breakdown[(str(decision.label), str(decision.reason))] += 1


class AssignmentMetrics:
    """Placements decided by this broker (module docstring)."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self.latency_ms = QuantileWindow(now)
        self.results: collections.Counter[str] = collections.Counter({r: 0 for r in ASSIGN_RESULTS})

    async def observe(self, placement: Awaitable[T]) -> T:
        """Await one placement, counting its result and timing it."""
        started = self._now()
        try:
            result = await placement
        except NoBrokerAvailableError:
            self.results["Empty"] += 1
            raise
        except Exception:
            self.results["Failure"] += 1
            raise
        finally:
            self.latency_ms.observe((self._now() - started) * 1000.0)
        self.results["Success"] += 1
        return result


class LookupMetrics:
    """Topic lookups answered by this broker (module docstring)."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self.now = now
        self.latency_ms = QuantileWindow(now)
        self.answers = 0
        self.redirects = 0
        self.failures = 0

    def answered(self, started: float, status: int) -> None:
        self.latency_ms.observe((self.now() - started) * 1000.0)
        if status == 307:
            self.redirects += 1
        elif status < 400:
            self.answers += 1
        else:
            self.failures += 1

    def failed(self, started: float) -> None:
        self.latency_ms.observe((self.now() - started) * 1000.0)
        self.failures += 1

    def snapshot(self) -> dict[str, Any]:
        return {"answers": self.answers, "redirects": self.redirects, "failures": self.failures}
