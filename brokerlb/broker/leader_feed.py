"""The one adapter between the leader and what watches it (metrics, the balancer's status, the dashboard).

Watchers see one record per leader step, :class:`ObservedCycle`, shaped like the leader's
per-cycle record: ``kind`` (``shedding`` / ``split``), ``at_ms``, ``leader``, every ``decision``
of the step (skips and failures with their reasons), the ``moves`` carried out or tried (bundle,
source, destination, transfer, reason) with ``moves_done``, the ``splits`` with ``splits_done``,
and the strategy's ``stats``.

Today's leader (:class:`~brokerlb.broker.leader.LeaderTasks`) announces :class:`LeaderEvent` s:
``unload`` and ``failed`` (an unload or split that did not happen) as they happen, ``split`` per
split, and ``shed-cycle`` once a shedding cycle is done -- its decisions are then in
``last_shedding``. :class:`LeaderFeed` folds them into records: the unloads seen since the last
``shed-cycle`` are that cycle's moves; each split (or failed split) is a ``split`` record of one
decision. The split checks that decide nothing are not announced by this leader, so they are not
seen (a split breakdown's ``Skip``/``Balanced`` stays at 0 until the leader hands over whole
records). A leader that announces whole per-cycle records (objects with ``decisions``, ``moves``,
``moves_done``, ``splits``, ``splits_done``, ``stats``) has them passed on unchanged. Everything
the watchers read comes through here.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from brokerlb.loadbalance.decisions import Label, Reason, SplitDecision, UnloadDecision

__all__ = ["LeaderFeed", "ObservedCycle", "ObservedMove"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ObservedMove:
    """An unload the leader carried out or tried (a transfer when it names a destination)."""

    bundle: str
    source: str | None
    destination: str | None
    transfer: bool
    reason: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ObservedCycle:
    """One leader step as watchers see it (module docstring)."""

    kind: str
    at_ms: int
    leader: str
    decisions: tuple[UnloadDecision | SplitDecision, ...] = ()
    moves: tuple[ObservedMove, ...] = ()
    moves_done: tuple[bool, ...] = ()
    splits: tuple[SplitDecision, ...] = ()
    splits_done: tuple[bool, ...] = ()
    stats: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "atMs": self.at_ms,
            "leader": self.leader,
            "decisions": [
                {"kind": "unload" if isinstance(d, UnloadDecision) else "split", **d.to_json()}
                for d in self.decisions
            ],
            "moves": [
                {
                    "bundle": m.bundle,
                    "source": m.source,
                    "destination": m.destination,
                    "transfer": m.transfer,
                    "reason": m.reason,
                    "detail": m.detail,
                    "executed": done,
                }
                for m, done in zip(self.moves, self.moves_done, strict=True)
            ],
            "splits": [
                {**d.to_json(), "executed": done}
                for d, done in zip(self.splits, self.splits_done, strict=True)
            ],
            "stats": _json_scalars(self.stats),
        }


Listener = Callable[[ObservedCycle], None]


class LeaderFeed:
    """Folds the leader's announcements into :class:`ObservedCycle` records (module docstring)."""

    def __init__(self, leader_tasks: Any, broker_id: str, *, keep: int = 50) -> None:
        self.broker_id = broker_id
        self._leader_tasks = leader_tasks
        self.recent: collections.deque[ObservedCycle] = collections.deque(maxlen=keep)
        self._listeners: list[Listener] = []
        self._moves: list[tuple[ObservedMove, bool]] = []
        add = getattr(leader_tasks, "add_listener", None)
        if add is not None:  # a custom leader (tests) may announce nothing
            add(self._on_event)

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def last(self, kind: str) -> ObservedCycle | None:
        return next((c for c in reversed(self.recent) if c.kind == kind), None)

    # ------------------------------------------------------------------ today's leader events
    def _on_event(self, event: Any) -> None:
        if hasattr(event, "moves_done") and hasattr(event, "decisions"):
            self._publish(event)  # a leader that hands over whole per-cycle records: taken as they are
            return
        kind = getattr(event, "kind", "")
        if kind == "unload":
            self._moves.append((_move(event), True))
        elif kind == "failed" and event.reason == "unload":
            self._moves.append((_move(event, reason=""), False))
        elif kind == "split":
            self._publish(self._split_cycle(event, done=True))
        elif kind == "failed" and event.reason == "split":
            self._publish(self._split_cycle(event, done=False))
        elif kind == "shed-cycle":
            self._publish(self._shedding_cycle(event))

    def _shedding_cycle(self, event: Any) -> ObservedCycle:
        result = getattr(self._leader_tasks, "last_shedding", None)
        decisions: Sequence[UnloadDecision] = tuple(getattr(result, "decisions", ()))
        moves, self._moves = self._moves, []
        reasons = {(d.bundle, d.broker): str(d.reason) for d in decisions if d.is_unload}
        moves = [(m if m.reason else _with_reason(m, reasons), ok) for m, ok in moves]
        return ObservedCycle(
            "shedding",
            event.at_ms,
            self.broker_id,
            tuple(decisions),
            tuple(m for m, _ in moves),
            tuple(ok for _, ok in moves),
            stats=dict(getattr(result, "stats", {}) or {}),
        )

    def _split_cycle(self, event: Any, *, done: bool) -> ObservedCycle:
        reason = _reason(event.reason if done else "Unknown")
        decision = SplitDecision(event.bundle or "", (), Label.SUCCESS, reason, event.detail)
        return ObservedCycle(
            "split", event.at_ms, self.broker_id, (decision,), splits=(decision,), splits_done=(done,)
        )

    def _publish(self, record: ObservedCycle) -> None:
        self.recent.append(record)
        for listener in list(self._listeners):
            try:
                listener(record)
            except Exception:
                logger.exception("Leader feed listener failed")


def _move(event: Any, reason: str | None = None) -> ObservedMove:
    return ObservedMove(
        event.bundle or "",
        event.source,
        event.destination,
        event.destination is not None,
        event.reason if reason is None else reason,
        event.detail,
    )


def _with_reason(move: ObservedMove, reasons: dict[tuple[str | None, str | None], str]) -> ObservedMove:
    reason = reasons.get((move.bundle, move.source), "Unknown")
    return ObservedMove(move.bundle, move.source, move.destination, move.transfer, reason, move.detail)


def _reason(text: str) -> Reason:
    try:
        return Reason(text)
    except ValueError:
        return Reason.UNKNOWN


def _json_scalars(stats: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in stats.items() if isinstance(v, str | int | float | bool) or v is None}
