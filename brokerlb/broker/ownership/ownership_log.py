"""Every bundle's ownership changes as a broker watches them: the cluster's recent moves, and each bundle's story.

:class:`OwnershipLog` listens to the ownership channel (every broker sees every ownership record) and
keeps what happened, in order: a bundle ``assigned`` to a broker, ``unloading`` (Releasing: its
owner is giving it up), ``released``, ``moved`` (released by one broker and taken by another within
:data:`MOVE_WINDOW_MS`). Who asked for a move is found afterwards (:meth:`OwnershipLog.entries`), as
a ``category`` and a ``cause``:

* ``shedding`` -- a move the leader started (carried out, or started by a cycle a lost lease cut
  short): the reason of its decision (``Overloaded``, ``Underloaded``, ``OverTarget`` ...);
* ``split`` -- the release of a bundle the leader split, or of one of its children (unloaded after
  the split, ``loadBalancerAutoUnloadSplitBundlesEnabled``);
* ``merge`` -- the release of a part of a merge the leader started;
* ``failure`` -- a bundle that went without being released first while its owner was no longer
  registered (its session ended: a crash, a lost connection; the leader reassigned it);
* ``admin`` -- anything else: an operator's unload, transfer, split or merge, a broker stopping
  (cause ``Admin``, Pulsar's name for an unload it did not decide itself).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from brokerlb.broker.ownership.ownership_channel import BundleOwner, OwnershipChannel, bundle_owner
from brokerlb.loadbalance.decisions import MergeDecision, SplitDecision
from brokerlb.loadbalance.leader import Move
from brokerlb.ownership.record import OwnershipRecord

__all__ = ["OwnershipLog", "OwnershipChange", "LeaderActions", "MOVE_WINDOW_MS", "leader_moves_of"]

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
    #: shedding | split | merge | failure | admin (moves and releases)
    category: str = ""
    #: a release that was not ``unloading`` first (the owner's session ended)
    abrupt: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"atMs": self.at_ms, "bundle": self.bundle, "kind": self.kind}
        for key, value in (
            ("broker", self.broker),
            ("previous", self.previous),
            ("cause", self.cause),
            ("category", self.category),
        ):
            if value:
                out[key] = value
        return out


@dataclass(frozen=True, slots=True)
class LeaderActions:
    """What the leader started: moves by ``(bundle, source)`` with their reason, the bundles it
    split and the parts of the merges it started."""

    moves: dict[tuple[str, str | None], str] = field(default_factory=dict)
    split: frozenset[str] = frozenset()
    merged: frozenset[str] = frozenset()


#: the leader's actions, asked for when the log is read
LeaderMoves = Callable[[], LeaderActions]


class OwnershipLog:
    """Recent ownership changes of every bundle (module docstring)."""

    def __init__(
        self,
        channel: OwnershipChannel,
        now_ms: Callable[[], int],
        *,
        registered: Callable[[str], bool] = lambda broker: True,
        keep: int = 2000,
    ) -> None:
        self.now_ms = now_ms
        self._registered = registered
        self._log: collections.deque[OwnershipChange] = collections.deque(maxlen=keep)
        self._state: dict[str, tuple[str | None, bool]] = {
            b: (info.broker_id, info.disabled) for b, info in channel.owners().items()
        }
        #: bundle -> (broker, when, abrupt) of its last release
        self._released: dict[str, tuple[str | None, int, bool]] = {}
        self._remove = channel.add_record_listener(self._on_record)

    def close(self) -> None:
        self._remove()

    def _on_record(self, bundle: str, _before: OwnershipRecord | None, after: OwnershipRecord | None) -> None:
        info = bundle_owner(bundle, after)
        before = self._state.get(bundle)
        if info is None and before is None:
            return
        if info is not None and before == (info.broker_id, info.disabled):
            return
        self._on_change(bundle, info)

    def _on_change(self, bundle: str, info: BundleOwner | None) -> None:
        now = self.now_ms()
        before = self._state.get(bundle)
        if info is None:
            self._state.pop(bundle, None)
            if before is not None:
                # gone without being Releasing first, its owner no longer registered: the leader
                # reassigned it after the owner's session ended (a watch may also miss a short-lived
                # Releasing: the registration tells an operator's unload apart)
                abrupt = not before[1] and not (before[0] is not None and self._registered(before[0]))
                self._released[bundle] = (before[0], now, abrupt)
                self._log.append(OwnershipChange(now, bundle, "released", before[0], abrupt=abrupt))
            return
        broker, disabled = info.broker_id, info.disabled
        self._state[bundle] = (broker, disabled)
        if before is None:
            released = self._released.pop(bundle, None)
            if released is not None and released[0] != broker and now - released[1] <= MOVE_WINDOW_MS:
                self._log.append(
                    OwnershipChange(now, bundle, "moved", broker, released[0], abrupt=released[2])
                )
            else:
                self._log.append(OwnershipChange(now, bundle, "assigned", broker))
        elif disabled and not before[1]:
            self._log.append(OwnershipChange(now, bundle, "unloading", broker))

    def entries(
        self, leader_moves: LeaderMoves | None = None, bundle: str | None = None
    ) -> list[OwnershipChange]:
        """Changes in order (of one bundle, if given), moves and releases with their cause."""
        leader = leader_moves() if leader_moves is not None else LeaderActions()
        out = []
        for change in self._log:
            if bundle is not None and change.bundle != bundle:
                continue
            out.append(_with_cause(change, leader))
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


def _with_cause(change: OwnershipChange, leader: LeaderActions) -> OwnershipChange:
    if change.kind not in ("moved", "released", "unloading"):
        return change
    source = change.previous if change.kind == "moved" else change.broker
    reason = leader.moves.get((change.bundle, source))
    if reason is not None:
        return replace(change, cause=reason, category="shedding")
    if change.bundle in leader.split or _inside(change.bundle, leader.split):
        return replace(change, cause="split", category="split")
    if change.bundle in leader.merged:
        return replace(change, cause="merge", category="merge")
    if change.abrupt:
        return replace(change, cause="failure", category="failure")
    return replace(change, cause="Admin", category="admin")


def _range(bundle: str) -> tuple[str, int, int] | None:
    namespace, _, bounds = bundle.rpartition("/")
    lower, _, upper = bounds.partition("_")
    try:
        return namespace, int(lower, 16), int(upper, 16)
    except ValueError:
        return None


def _inside(bundle: str, parents: frozenset[str]) -> bool:
    """Whether ``bundle``'s range lies within one of ``parents`` (a child of a split)."""
    child = _range(bundle)
    if child is None or not parents:
        return False
    for parent in parents:
        outer = _range(parent)
        if outer is not None and outer[0] == child[0] and outer[1] <= child[1] and child[2] <= outer[2]:
            return True
    return False


def leader_moves_of(cycles: Iterable[Any], started: Iterable[Any] = ()) -> LeaderActions:
    """The moves, splits and merges the leader carried out (its records) or started (``started``:
    the executor's :class:`~brokerlb.loadbalance.leader.Move`, ``SplitDecision`` and
    ``MergeDecision`` objects, sent before a cycle's record exists)."""
    moves: dict[tuple[str, str | None], str] = {}
    split: set[str] = set()
    merged: set[str] = set()

    def add(action: Any) -> None:
        if isinstance(action, Move):
            moves[(action.bundle, action.source)] = action.reason or "Unknown"
        elif isinstance(action, SplitDecision):
            split.add(action.bundle)
        elif isinstance(action, MergeDecision):
            merged.update(action.bundles)

    for action in started:
        add(action)
    for cycle in cycles:
        for move, done in zip(cycle.moves, cycle.moves_done, strict=True):
            if done:
                add(move)
        for decision, done in zip(cycle.splits, cycle.splits_done, strict=True):
            if done:
                add(decision)
        for merge, done in zip(cycle.merges, cycle.merges_done, strict=True):
            if done:
                add(merge)
    return LeaderActions(moves, frozenset(split), frozenset(merged))
