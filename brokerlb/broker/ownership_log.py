"""Every bundle's ownership changes as a broker watches them: the cluster's recent moves, and each bundle's story.

:class:`OwnershipLog` listens to the ownership cache (every broker mirrors every ownership node) and
keeps what happened, in order: a bundle ``assigned`` to a broker, ``unloading`` (its owner marked it
disabled), ``released``, ``moved`` (released by one broker and taken by another within
:data:`MOVE_WINDOW_MS`), ``lost`` is not distinguishable from ``released`` here (the node vanishes
either way). Who asked for a move is found afterwards (:meth:`OwnershipLog.entries`): a move the
leader carried out has the reason of its decision (``Overloaded``, ...); a release of a bundle the
leader split is ``split``; anything else -- an operator's unload, a broker stopping -- is ``Admin``
(Pulsar's name for an unload it did not decide itself).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from brokerlb.coordination import OwnerInfo, OwnershipCache

__all__ = ["OwnershipLog", "OwnershipChange", "MOVE_WINDOW_MS"]

#: A release followed by an acquisition by another broker within this window is one move.
MOVE_WINDOW_MS = 10_000


@dataclass(frozen=True, slots=True)
class OwnershipChange:
    at_ms: int
    bundle: str
    kind: str  # assigned | unloading | released | moved
    broker: str | None = None
    previous: str | None = None
    cause: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"atMs": self.at_ms, "bundle": self.bundle, "kind": self.kind}
        for key, value in (("broker", self.broker), ("previous", self.previous), ("cause", self.cause)):
            if value:
                out[key] = value
        return out


#: ``(bundle, source broker) -> reason`` of the moves the leader carried out, and the bundles it split.
LeaderMoves = Callable[[], tuple[dict[tuple[str, str | None], str], set[str]]]


class OwnershipLog:
    """Recent ownership changes of every bundle (module docstring)."""

    def __init__(self, owners: OwnershipCache, now_ms: Callable[[], int], *, keep: int = 2000) -> None:
        self.now_ms = now_ms
        self._log: collections.deque[OwnershipChange] = collections.deque(maxlen=keep)
        self._state: dict[str, tuple[str | None, bool]] = {
            b: (info.broker_id, info.disabled) for b, info in owners.owners().items()
        }
        self._released: dict[str, tuple[str | None, int]] = {}
        self._remove = owners.add_listener(self._on_change)

    def close(self) -> None:
        self._remove()

    def _on_change(self, bundle: str, info: OwnerInfo | None) -> None:
        now = self.now_ms()
        before = self._state.get(bundle)
        if info is None:
            self._state.pop(bundle, None)
            if before is not None:
                self._released[bundle] = (before[0], now)
                self._log.append(OwnershipChange(now, bundle, "released", before[0]))
            return
        broker, disabled = info.broker_id, info.disabled
        self._state[bundle] = (broker, disabled)
        if before is None:
            released = self._released.pop(bundle, None)
            if released is not None and released[0] != broker and now - released[1] <= MOVE_WINDOW_MS:
                self._log.append(OwnershipChange(now, bundle, "moved", broker, released[0]))
            else:
                self._log.append(OwnershipChange(now, bundle, "assigned", broker))
        elif disabled and not before[1]:
            self._log.append(OwnershipChange(now, bundle, "unloading", broker))

    def entries(
        self, leader_moves: LeaderMoves | None = None, bundle: str | None = None
    ) -> list[OwnershipChange]:
        """Changes in order (of one bundle, if given), moves and releases with their cause."""
        reasons, split = leader_moves() if leader_moves is not None else ({}, set())
        out = []
        for change in self._log:
            if bundle is not None and change.bundle != bundle:
                continue
            out.append(_with_cause(change, reasons, split))
        return out

    def recent_moves(
        self, leader_moves: LeaderMoves | None = None, limit: int = 100
    ) -> list[OwnershipChange]:
        """Moves, and releases no other broker followed up (yet) -- a release that became a move shows once."""
        entries = [c for c in self.entries(leader_moves) if c.kind in ("moved", "released")]
        followed: set[tuple[str, str | None]] = set()
        out: list[OwnershipChange] = []
        for change in reversed(entries):
            if change.kind == "moved":
                followed.add((change.bundle, change.previous))
            elif (change.bundle, change.broker) in followed:
                followed.discard((change.bundle, change.broker))
                continue
            out.append(change)
        return out[::-1][-limit:]


def _with_cause(
    change: OwnershipChange, reasons: dict[tuple[str, str | None], str], split: set[str]
) -> OwnershipChange:
    if change.kind not in ("moved", "released", "unloading"):
        return change
    source = change.previous if change.kind == "moved" else change.broker
    reason = reasons.get((change.bundle, source))
    if reason is None and change.bundle in split:
        reason = "split"
    return replace(change, cause=reason or "Admin")


def leader_moves_of(cycles: Iterable[Any]) -> tuple[dict[tuple[str, str | None], str], set[str]]:
    """The moves and splits the leader carried out, from its records."""
    reasons: dict[tuple[str, str | None], str] = {}
    split: set[str] = set()
    for cycle in cycles:
        for move, done in zip(cycle.moves, cycle.moves_done, strict=True):
            if done:
                reasons[(move.bundle, move.source)] = move.reason or "Unknown"
        for decision, done in zip(cycle.splits, cycle.splits_done, strict=True):
            if done:
                split.add(decision.bundle)
    return reasons, split
