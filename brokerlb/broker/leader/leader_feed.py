"""The one adapter between the leader and what watches it (metrics, the balancer's status, the dashboard).

Watchers see the leader's own record of each step, :class:`~brokerlb.loadbalance.cycle.CycleRecord`
(``ObservedCycle`` here): ``kind`` (``shedding`` / ``split``), ``at_ms``, ``leader``, every
``decision`` of the step (skips and failures with their reasons), the ``moves`` (bundle, source,
destination, transfer, reason, detail) with ``moves_done``, the ``splits`` with ``splits_done``,
the ``merges`` with ``merges_done``, and the strategy's ``stats``. :class:`LeaderFeed` keeps the
last few and hands each to its listeners as the leader publishes it.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable
from typing import Any

from brokerlb.loadbalance.cycle import CycleRecord

__all__ = ["LeaderFeed", "ObservedCycle"]

logger = logging.getLogger(__name__)

#: what watchers see of one leader step
ObservedCycle = CycleRecord

Listener = Callable[[ObservedCycle], None]


class LeaderFeed:
    """The leader's recent records, and listeners for new ones (module docstring)."""

    def __init__(self, leader_tasks: Any, broker_id: str, *, keep: int = 200) -> None:
        self.broker_id = broker_id
        self.recent: collections.deque[ObservedCycle] = collections.deque(maxlen=keep)
        self._listeners: list[Listener] = []
        add = getattr(leader_tasks, "add_listener", None)
        if add is not None:  # a custom leader (tests) may publish nothing
            add(self._publish)

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def last(self, kind: str) -> ObservedCycle | None:
        return next((c for c in reversed(self.recent) if c.kind == kind), None)

    def _publish(self, record: ObservedCycle) -> None:
        self.recent.append(record)
        for listener in list(self._listeners):
            try:
                listener(record)
            except Exception:
                logger.exception("Leader feed listener failed")
