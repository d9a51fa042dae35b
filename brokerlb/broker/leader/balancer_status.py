"""The balancer's status (``GET /admin/v2/brokers/balancer``, a brokerlb extension): is it doing anything?

Answered by the leader (other brokers redirect to it), from its leader records
(:class:`~brokerlb.broker.leader.leader_feed.LeaderFeed`), the ownership table, the brokers' reports and
the grace periods its leader holds bundles for:

===============  ==============================================================================
state            when (first that holds)
===============  ==============================================================================
``off``          ``loadBalancerEnabled=false``, or ``loadBalancerSheddingEnabled=false`` (placement
                 and splits still run; nothing is moved to rebalance)
``stalled``      no leader is elected; or the leader has not finished a shedding cycle for more than
                 twice ``loadBalancerSheddingIntervalMinutes`` (plus a minute) since it leads; or the
                 last shedding cycle failed (a ``Failure`` decision, or a move that was not carried
                 out) -- the reason names it
``in_progress``  bundles are being moved now (their ownership records in flight while their
                 owner unloads them), or the last cycle moved bundles
``waiting``      the busiest broker is above the strategy's band and the last cycle moved nothing:
                 its bundles are held by a grace period (recently moved, an operator's action;
                 ``graceUntil`` says until when: ``waiting (grace until 2026-11-27T22:40:00Z)``),
                 or the reason says what else keeps them (no destination ...)
``ready``        the balancer runs, nothing is in flight and no broker is above the band; the
                 reason is what the last cycle concluded (e.g. ``Balanced``)
===============  ==============================================================================

The band is the strategy's own, from its last cycle's numbers: brokerlb's balancer its target band
(``targetLower``/``targetUpper``; a broker holding a bundle too hot to move usefully is judged by its
own higher target, ``raisedTargetUpper``); ThresholdShedder the average usage +-
``loadBalancerBrokerThresholdShedderPercentage``; OverloadShedder up to
``loadBalancerBrokerOverloadedThresholdPercentage``; TransferShedder the average +-
``loadBalancerBrokerLoadTargetStd``. Other strategies have none (no ``waiting`` state).

Besides the state: the leader, the last shedding cycle (time, decisions by label and reason, moves),
the moves in flight, the band, the operators' actions the balancer holds back for
(``operatorActions``: bundle -> kind, time, source, destination, ``untilMs``; brokerlb's balancer
only) and the balance score (:mod:`brokerlb.loadbalance.balance_score`).
Times are epoch milliseconds (``...Ms``) and ISO-8601 UTC (``lastCycleAt``, ``graceUntil``).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from brokerlb.broker.leader.leader_feed import LeaderFeed, ObservedCycle
from brokerlb.broker.ownership.ownership_channel import OwnershipChannel
from brokerlb.config import ServiceConfig
from brokerlb.loadbalance.balance_score import BalanceScore
from brokerlb.loadbalance.decisions import Label, UnloadDecision

__all__ = ["BalancerStatus", "OFF", "READY", "IN_PROGRESS", "WAITING", "STALLED", "band_of", "iso"]

OFF, READY, IN_PROGRESS, WAITING, STALLED = "off", "ready", "in_progress", "waiting", "stalled"

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
        owners: OwnershipChannel,
        cluster_loads: Callable[[], dict[str, float]],
        now_ms: Callable[[], int],
        grace_ends: Callable[[str], Iterable[int]] = lambda broker: (),
    ) -> None:
        #: ``grace_ends(broker)``: when the grace periods holding that broker's bundles end (ms)
        self.grace_ends = grace_ends
        self.conf = conf
        self.feed = feed
        self.leader_id = leader_id
        self.leading_since_ms = leading_since_ms
        self.owners = owners
        self.cluster_loads = cluster_loads
        self.now_ms = now_ms

    def in_flight(self) -> list[str]:
        """Bundles with a move in flight now (their records Assigning, Releasing or Splitting)."""
        return sorted(self.owners.moving())

    def status(self) -> dict[str, Any]:
        last = self.feed.last("shedding")
        in_flight = self.in_flight()
        loads = self.cluster_loads()
        band = band_of(last.stats, self.conf) if last is not None else None
        state, reason, grace_until = self._state(last, in_flight, loads, band)
        score = BalanceScore.of(loads)
        return {
            "state": state,
            "reason": reason,
            "leader": self.leader_id(),
            "strategy": self.conf.loadBalancerLoadSheddingStrategy,
            "sheddingIntervalSeconds": self.conf.duration_seconds("loadBalancerSheddingIntervalMinutes"),
            "lastCycleAtMs": last.at_ms if last is not None else None,
            "lastCycleAt": iso(last.at_ms) if last is not None else None,
            "lastCycle": summarize(last) if last is not None else None,
            "graceUntilMs": grace_until,
            "graceUntil": iso(grace_until) if grace_until is not None else None,
            "band": {"lower": round(band[0] * 100, 2), "upper": round(band[1] * 100, 2)} if band else None,
            "movesInFlight": len(in_flight),
            "bundlesInFlight": in_flight,
            "operatorActions": dict(last.stats.get("operatorActions", {})) if last is not None else {},
            **score.to_json(),
        }

    def _state(
        self,
        last: ObservedCycle | None,
        in_flight: list[str],
        loads: dict[str, float],
        band: tuple[float, float] | None,
    ) -> tuple[str, str, int | None]:
        conf = self.conf
        if not conf.loadBalancerEnabled:
            return OFF, "loadBalancerEnabled=false", None
        if not conf.loadBalancerSheddingEnabled:
            return (
                OFF,
                "loadBalancerSheddingEnabled=false: bundles are placed and split, never moved to rebalance",
                None,
            )
        if self.leader_id() is None:
            return STALLED, "no leader broker is elected", None
        interval_ms = int(conf.duration_seconds("loadBalancerSheddingIntervalMinutes") * 1000)
        now = self.now_ms()
        since = self.leading_since_ms()
        reference = last.at_ms if last is not None else since
        if reference is not None and now - reference > 2 * interval_ms + STALL_GRACE_MS:
            what = "finished a shedding cycle" if last is not None else "run a shedding cycle since it leads"
            return (
                STALLED,
                f"the leader has not {what} for {(now - reference) / 1000:.0f} s (interval {interval_ms / 1000:.0f} s)",
                None,
            )
        if in_flight:
            return IN_PROGRESS, f"{len(in_flight)} bundle(s) being moved: {', '.join(in_flight[:3])}", None
        if last is None:
            return READY, "waiting for the first shedding cycle", None
        failed = _failure(last)
        if failed:
            return STALLED, failed, None
        if any(last.moves_done):
            return IN_PROGRESS, f"the last cycle moved {sum(last.moves_done)} bundle(s)", None
        if band is not None and loads:
            busiest = max(sorted(loads), key=lambda b: loads[b])
            # a broker holding a bundle too hot to move usefully has its own, higher target
            raised = last.stats.get("raisedTargetUpper")
            own = raised.get(busiest) if isinstance(raised, Mapping) else None
            upper = max(band[1], float(own) if isinstance(own, int | float) else 0.0) * 100
            if loads[busiest] > upper:
                above = f"{busiest} at {loads[busiest]:.1f} % is above the band's {upper:.1f} %"
                ends = [end for end in self.grace_ends(busiest) if end > now]
                if ends:
                    until = min(ends)
                    return (
                        WAITING,
                        f"grace until {iso(until)}: {above}; its bundles were moved or acted on "
                        f"within loadBalancerSheddingGracePeriodMinutes",
                        until,
                    )
                return WAITING, f"{above}; {_conclusion(last)}", None
        return READY, _conclusion(last), None


def iso(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC, to the second: ``2026-11-27T22:40:00Z``."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def band_of(stats: Mapping[str, Any], conf: ServiceConfig) -> tuple[float, float] | None:
    """The strategy's band ``(lower, upper)`` in fractions, from its last cycle's numbers (module
    docstring); ``None`` when the strategy has none."""

    def number(key: str) -> float | None:
        value = stats.get(key)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    upper, lower = number("targetUpper"), number("targetLower")
    if upper is not None and lower is not None:  # brokerlb's balancer
        return lower, upper
    avg, threshold = number("avgUsage"), number("threshold")
    if avg is not None and threshold is not None:  # ThresholdShedder
        return max(0.0, avg - threshold), avg + threshold
    overload = number("overloadThreshold")
    if overload is not None:  # OverloadShedder
        return 0.0, overload
    load_avg, std = number("loadAvg"), number("loadStd")
    if (
        load_avg is not None
        and std is not None
        and "TransferShedder" in conf.loadBalancerLoadSheddingStrategy
    ):
        target = conf.loadBalancerBrokerLoadTargetStd
        return max(0.0, load_avg - target), load_avg + target
    return None


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
