"""Who owns every bundle, how ownership moves, and the trail it leaves.

The simulator's ownership table follows the life cycle of a bundle in Pulsar,
with Pulsar's state names (``ServiceUnitState``):

* ``Free`` -- nobody owns it; the next lookup places it (leader's placement);
* ``Owned`` -- a broker serves it (if that broker dies, the bundle stays ``Owned`` by the dead
  broker until its session expires, exactly as the ephemeral ownership node stays);
* ``Releasing`` -- being unloaded (topics closing) or transferred to a named destination;
* ``Deleted`` -- split into children.

Every change is appended to a transition log with a cause (``shed``, ``transfer``,
``split``, ``restart``, ``failure``, ``lookup``, ``initial``), so :meth:`OwnershipTable.story`
answers "what happened to this bundle" like the ownership state machine's ``story(bundle)``.

A bundle is **unavailable** (counted as "time without an owner") from the moment it
loses a serving owner -- unload started, owner crashed, or first lookup requested -- until
a live broker owns it again. A **move** is completed when a bundle that had an owner gets
one again: ``returned`` when the new owner is the broker it was shed from (Pulsar issue
#21722), ``flap`` when the previous balancer move of the bundle finished less than the
grace period earlier.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

__all__ = ["BundleState", "Transition", "Move", "OwnershipTable", "BALANCER_CAUSES"]


class BundleState(IntEnum):
    FREE = 0
    OWNED = 1
    RELEASING = 2
    DELETED = 3

    @property
    def label(self) -> str:
        return self.name.capitalize()


#: causes of moves made by the load balancer (as opposed to failures and restarts)
BALANCER_CAUSES = frozenset({"shed", "transfer", "split"})


@dataclass(frozen=True, slots=True)
class Transition:
    """One line of a bundle's story."""

    time_ms: int
    bundle: str
    old: str
    new: str
    broker: str | None
    cause: str
    detail: str = ""

    def to_json(self) -> dict[str, object]:
        return {"time": self.time_ms, "bundle": self.bundle, "from": self.old, "to": self.new,
                "broker": self.broker, "cause": self.cause, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class Move:
    """A completed ownership move."""

    time_ms: int
    bundle: str
    source: str
    destination: str
    cause: str
    throughput: float
    unowned_ms: int
    flap: bool
    returned: bool


class OwnershipTable:
    """Per-bundle ownership arrays (indexed by bundle id) plus the transition log.

    ``brokers`` are broker ids by index. Times are ms since the epoch.
    """

    def __init__(self, bundle_names: list[str], brokers: list[str], grace_ms: float) -> None:
        self.bundle_names = bundle_names  # shared with the topology: grows with splits
        self.brokers = brokers
        self.grace_ms = grace_ms
        n = len(bundle_names)
        self.state = np.zeros(n, dtype=np.int8)
        self.owner = np.full(n, -1, dtype=np.int32)
        self.unavailable_since = np.full(n, np.nan)
        self.lookup_pending = np.zeros(n, dtype=bool)
        self._released_from = np.full(n, -1, dtype=np.int32)
        self._release_cause: list[str] = [""] * n
        self._release_throughput = np.zeros(n)
        self._last_balancer_move = np.full(n, -np.inf)
        self.log: list[Transition] = []
        self.moves: list[Move] = []
        self.unowned_ms_total = 0.0
        self._cycle_start_ms = 0.0
        self._cycle_unowned_ms = 0.0

    # ------------------------------------------------------------------ size

    def grow(self, n: int) -> None:
        """Make room for bundle ids up to ``n`` (new bundles after a split start ``Free``)."""
        extra = n - len(self.state)
        if extra <= 0:
            return
        self.state = np.concatenate([self.state, np.zeros(extra, dtype=np.int8)])
        self.owner = np.concatenate([self.owner, np.full(extra, -1, dtype=np.int32)])
        self.unavailable_since = np.concatenate([self.unavailable_since, np.full(extra, np.nan)])
        self.lookup_pending = np.concatenate([self.lookup_pending, np.zeros(extra, dtype=bool)])
        self._released_from = np.concatenate([self._released_from, np.full(extra, -1, dtype=np.int32)])
        self._release_cause.extend([""] * extra)
        self._release_throughput = np.concatenate([self._release_throughput, np.zeros(extra)])
        self._last_balancer_move = np.concatenate([self._last_balancer_move, np.full(extra, -np.inf)])

    # ------------------------------------------------------------------ queries

    def owned_by(self, broker: int) -> np.ndarray:
        return np.flatnonzero((self.owner == broker) & (self.state == BundleState.OWNED))

    def served_mask(self, broker_up: np.ndarray) -> np.ndarray:
        """Bundles a live broker serves now."""
        owned = self.state == BundleState.OWNED
        up = np.zeros(len(self.owner), dtype=bool)
        up[owned] = broker_up[self.owner[owned]]
        return up

    def story(self, bundle: str) -> list[Transition]:
        """Every transition of ``bundle``, oldest first."""
        return [t for t in self.log if t.bundle == bundle]

    def ownership_map(self) -> dict[str, str]:
        """``bundle -> broker`` for every owned bundle (the extensible load manager's channel view)."""
        ids = np.flatnonzero(self.state == BundleState.OWNED)
        return {self.bundle_names[i]: self.brokers[self.owner[i]] for i in ids}

    # ------------------------------------------------------------------ cycle accounting

    def start_cycle(self, start_ms: float) -> None:
        self._cycle_start_ms = start_ms
        self._cycle_unowned_ms = 0.0

    def end_cycle(self, end_ms: float) -> float:
        """Bundle-milliseconds without an owner during the cycle that ends at ``end_ms``."""
        waiting = ~np.isnan(self.unavailable_since)
        if waiting.any():
            since = np.maximum(self.unavailable_since[waiting], self._cycle_start_ms)
            self._cycle_unowned_ms += float(np.maximum(end_ms - since, 0.0).sum())
        return self._cycle_unowned_ms

    def _became_available(self, b: int, now_ms: float) -> float:
        since = self.unavailable_since[b]
        if math.isnan(since):
            return 0.0
        self.unavailable_since[b] = np.nan
        self.unowned_ms_total += now_ms - since
        self._cycle_unowned_ms += max(0.0, now_ms - max(since, self._cycle_start_ms))
        return now_ms - since

    def _unavailable(self, b: int, now_ms: float) -> None:
        if math.isnan(self.unavailable_since[b]):
            self.unavailable_since[b] = now_ms

    # ------------------------------------------------------------------ transitions

    def _record(self, now_ms: float, b: int, new: BundleState, broker: int, cause: str, detail: str = "") -> None:
        old = BundleState(int(self.state[b]))
        self.log.append(Transition(int(now_ms), self.bundle_names[b], old.label, new.label,
                                   self.brokers[broker] if broker >= 0 else None, cause, detail))
        self.state[b] = new

    def request_lookup(self, b: int, now_ms: float) -> None:
        """Clients want a ``Free`` bundle: it waits for an owner from now on."""
        self.lookup_pending[b] = True
        self._unavailable(b, now_ms)

    def assign(self, b: int, broker: int, now_ms: float, cause: str = "lookup", detail: str = "") -> Move | None:
        """``broker`` now owns the bundle. Returns the completed :class:`Move`, if it was one."""
        self._record(now_ms, b, BundleState.OWNED, broker, cause, detail)
        self.owner[b] = broker
        self.lookup_pending[b] = False
        waited = self._became_available(b, now_ms)
        source = int(self._released_from[b])
        if source < 0:
            return None
        release_cause = self._release_cause[b]
        flap = release_cause in BALANCER_CAUSES and now_ms - self._last_balancer_move[b] < self.grace_ms
        if release_cause in BALANCER_CAUSES:
            self._last_balancer_move[b] = now_ms
        move = Move(int(now_ms), self.bundle_names[b], self.brokers[source], self.brokers[broker], release_cause,
                    float(self._release_throughput[b]), int(waited), bool(flap),
                    release_cause in ("shed", "transfer") and broker == source)
        self._released_from[b] = -1
        self.moves.append(move)
        return move

    def release(self, b: int, now_ms: float, cause: str, throughput: float, destination: int = -1,
                detail: str = "") -> None:
        """Start unloading (or transferring to ``destination``) an owned bundle."""
        source = int(self.owner[b])
        self._record(now_ms, b, BundleState.RELEASING, destination if destination >= 0 else source, cause, detail)
        self._released_from[b] = source
        self._release_cause[b] = cause
        self._release_throughput[b] = throughput
        self._unavailable(b, now_ms)

    def free(self, b: int, now_ms: float, cause: str, detail: str = "") -> None:
        """The bundle has no owner any more (unload done, or its dead owner's session expired)."""
        if self.state[b] == BundleState.OWNED and self._released_from[b] < 0:
            # lost without a release first (owner's session expired)
            self._released_from[b] = self.owner[b]
            self._release_cause[b] = cause
        self._record(now_ms, b, BundleState.FREE, -1, cause, detail)
        self.owner[b] = -1

    def owner_lost(self, bundles: Iterable[int], now_ms: float, throughput: np.ndarray) -> None:
        """The owner of ``bundles`` stopped serving (crash): they are unavailable from now on."""
        for b in bundles:
            self._unavailable(int(b), now_ms)
            self._release_throughput[b] = throughput[b]

    def delete(self, b: int, now_ms: float, detail: str = "") -> None:
        """The bundle was split away."""
        self._record(now_ms, b, BundleState.DELETED, int(self.owner[b]), "split", detail)
        self.owner[b] = -1
        self.lookup_pending[b] = False
        self._became_available(b, now_ms)
