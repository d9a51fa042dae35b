"""The simulator's timeline: things due at a given millisecond, run in time order.

Ties run in the order they were scheduled (a sequence number breaks them), so the
simulation is deterministic.

>>> tl = Timeline()
>>> tl.schedule(2000, "lookup", 7); tl.schedule(1000, "release_done", 3); tl.schedule(1000, "lookup", 4)
>>> [(t, kind, payload) for t, kind, payload in tl.pop_due(1500)]
[(1000, 'release_done', 3), (1000, 'lookup', 4)]
>>> len(tl), tl.next_time()
(1, 2000)
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any

__all__ = ["Timeline"]


class Timeline:
    """A priority queue of ``(time_ms, kind, payload)``."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, str, Any]] = []
        self._seq = 0

    def schedule(self, time_ms: float, kind: str, payload: Any = None) -> None:
        heapq.heappush(self._heap, (int(round(time_ms)), self._seq, kind, payload))
        self._seq += 1

    def next_time(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def pop_due(self, until_ms: float) -> Iterator[tuple[int, str, Any]]:
        """Yield everything due at or before ``until_ms``, including what is scheduled while iterating."""
        while self._heap and self._heap[0][0] <= until_ms:
            time_ms, _, kind, payload = heapq.heappop(self._heap)
            yield time_ms, kind, payload

    def __len__(self) -> int:
        return len(self._heap)
