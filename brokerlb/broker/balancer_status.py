"""The balancer's status (``GET /admin/v2/brokers/balancer``, a brokerlb extension): is it doing anything?

Answered by the leader (other brokers redirect to it), from its leader records
(:class:`~brokerlb.broker.leader_feed.LeaderFeed`), the ownership cache and the brokers' reports:

============  =================================================================================
state         when (first that holds)
============  =================================================================================
``off``       ``loadBalancerEnabled=false``, or ``loadBalancerSheddingEnabled=false`` (placement
              and splits still run; nothing is moved to rebalance)
``stalled``   no leader is elected; or the leader has not finished a shedding cycle for more than
              twice ``loadBalancerSheddingIntervalMinutes`` (plus a minute) since it leads; or the
              last shedding cycle failed (a ``Failure`` decision, or a move that was not carried
              out) -- the reason names it
``in_progress``  bundles are being moved now (ownership nodes marked ``disabled`` while their
              owner unloads them), or the last cycle decided moves
``ready``     the balancer runs and has nothing in flight; the reason is what the last cycle
              concluded (e.g. ``Balanced``)
============  =================================================================================

Besides the state: the leader, the last shedding cycle (time, decisions by label and reason, moves),
the moves in flight, and the balance score (:mod:`brokerlb.loadbalance.balance_score`).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

from brokerlb.broker.leader_feed import LeaderFeed, ObservedCycle
from brokerlb.config import ServiceConfig
from brokerlb.coordination import OwnershipCache
from brokerlb.loadbalance.balance_score import BalanceScore
from brokerlb.loadbalance.decisions import Label, UnloadDecision

__all__ = ["BalancerStatus", "OFF", "READY", "IN_PROGRESS", "STALLED"]

OFF, READY, IN_PROGRESS, STALLED = "off", "ready", "in_progress", "stalled"

#: Grace beyond twice the shedding interval before a missing cycle counts as stalled.
STALL_GRACE_MS = 60_000


class BalancerStatus:
    """Computes the status document (module docstring)."""

    def __init__(
        self,
        *,
        conf: ServiceConfig,
        feed: LeaderFeed,
        leader_id: Callable[[], str | None],
        leading_since_ms: Callable[[], int | None],
        owners: OwnershipCache,
        cluster_loads: Callable[[], dict[str, float]],
        now_ms: Callable[[], int],
    ) -> None:
        self.conf = conf
        self.feed = feed
        self.leader_id = leader_id
        self.leading_since_ms = leading_since_ms
        self.owners = owners
        self.cluster_loads = cluster_loads
        self.now_ms = now_ms

    def in_flight(self) -> list[str]:
        """Bundles whose owner is unloading them now."""
        return sorted(name for name, info in self.owners.owners().items() if info.data.disabled)

    def status(self) -> dict[str, Any]:
        last = self.feed.last("shedding")
        in_flight = self.in_flight()
        state, reason = self._state(last, in_flight)
        score = BalanceScore.of(self.cluster_loads())
        return {
            "state": state,
            "reason": reason,
            "leader": self.leader_id(),
            "strategy": self.conf.loadBalancerLoadSheddingStrategy,
            "sheddingIntervalSeconds": self.conf.duration_seconds("loadBalancerSheddingIntervalMinutes"),
            "lastCycleAtMs": last.at_ms if last is not None else None,
            "lastCycle": summarize(last) if last is not None else None,
            "movesInFlight": len(in_flight),
            "bundlesInFlight": in_flight,
            **score.to_json(),
        }

    def _state(self, last: ObservedCycle | None, in_flight: list[str]) -> tuple[str, str]:
        conf = self.conf
        if not conf.loadBalancerEnabled:
            return OFF, "loadBalancerEnabled=false"
        if not conf.loadBalancerSheddingEnabled:
            return (
                OFF,
                "loadBalancerSheddingEnabled=false: bundles are placed and split, never moved to rebalance",
            )
        if self.leader_id() is None:
            return STALLED, "no leader broker is elected"
        interval_ms = int(conf.duration_seconds("loadBalancerSheddingIntervalMinutes") * 1000)
        now = self.now_ms()
        since = self.leading_since_ms()
        reference = last.at_ms if last is not None else since
        if reference is not None and now - reference > 2 * interval_ms + STALL_GRACE_MS:
            what = "finished a shedding cycle" if last is not None else "run a shedding cycle since it leads"
            return (
                STALLED,
                f"the leader has not {what} for {(now - reference) / 1000:.0f} s (interval {interval_ms / 1000:.0f} s)",
            )
        if in_flight:
            return IN_PROGRESS, f"{len(in_flight)} bundle(s) being moved: {', '.join(in_flight[:3])}"
        if last is None:
            return READY, "waiting for the first shedding cycle"
        failed = _failure(last)
        if failed:
            return STALLED, failed
        if any(last.moves_done):
            return IN_PROGRESS, f"the last cycle moved {sum(last.moves_done)} bundle(s)"
        return READY, _conclusion(last)


def summarize(cycle: ObservedCycle) -> dict[str, Any]:
    """A cycle in short: decisions counted by ``label/reason``, and its moves."""
    counts = collections.Counter(f"{d.label}/{d.reason}" for d in cycle.decisions)
    return {
        "atMs": cycle.at_ms,
        "leader": cycle.leader,
        "decisions": dict(sorted(counts.items())),
        "moves": cycle.to_json()["moves"],
    }


def _failure(cycle: ObservedCycle) -> str:
    for move, done in zip(cycle.moves, cycle.moves_done, strict=True):
        if not done:
            return f"the move of {move.bundle} from {move.source} was not carried out ({move.detail or 'failed'})"
    for d in cycle.decisions:
        if isinstance(d, UnloadDecision) and d.label is Label.FAILURE:
            return f"{d.reason}: {d.detail}" if d.detail else str(d.reason)
    return ""


def _conclusion(cycle: ObservedCycle) -> str:
    skips = [d for d in cycle.decisions if isinstance(d, UnloadDecision) and d.label is Label.SKIP]
    if not skips:
        return "the last cycle decided nothing to move"
    d = skips[-1]
    return f"{d.reason}: {d.detail}" if d.detail else str(d.reason)
