"""A latency histogram with bounded memory and ~1 % relative error, mergeable across processes.

Values (seconds) land in logarithmic buckets: bucket ``i`` holds values in
``[base**i, base**(i+1))`` microseconds with ``base = 1.02``, so a percentile is off by at
most 2 % (the bucket's midpoint is reported: ~1 %). Counts per bucket travel as JSON
(:meth:`LatencyHistogram.to_json` / :meth:`from_json`), so a benchmark can merge the
histograms of load generators running in other processes. The exact minimum, maximum
and mean are kept as well.

>>> h = LatencyHistogram()
>>> for ms in range(1, 101):
...     h.record(ms / 1000)
>>> p50, p99 = h.percentile(50) * 1000, h.percentile(99) * 1000
>>> abs(p50 - 50) < 1, abs(p99 - 99) < 2, h.count, h.percentile(100)
(True, True, 100, 0.1)
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["LatencyHistogram"]

_BASE = 1.02
_LOG_BASE = math.log(_BASE)


class LatencyHistogram:
    def __init__(self) -> None:
        self.buckets: dict[int, int] = {}
        self.count = 0
        self.total = 0.0
        self.min = math.inf
        self.max = 0.0

    def record(self, seconds: float) -> None:
        micros = max(seconds * 1e6, 1.0)
        index = int(math.log(micros) / _LOG_BASE)
        self.buckets[index] = self.buckets.get(index, 0) + 1
        self.count += 1
        self.total += seconds
        if seconds < self.min:
            self.min = seconds
        if seconds > self.max:
            self.max = seconds

    def merge(self, other: LatencyHistogram) -> None:
        for index, n in other.buckets.items():
            self.buckets[index] = self.buckets.get(index, 0) + n
        self.count += other.count
        self.total += other.total
        self.min = min(self.min, other.min)
        self.max = max(self.max, other.max)

    def percentile(self, p: float) -> float:
        """The ``p``-th percentile in seconds (0 when empty); 100 gives the exact maximum."""
        if not self.count:
            return 0.0
        if p >= 100:
            return self.max
        rank = max(1, math.ceil(self.count * p / 100))
        seen = 0
        for index in sorted(self.buckets):
            seen += self.buckets[index]
            if seen >= rank:
                mid = _BASE ** (index + 0.5) / 1e6
                return min(max(mid, self.min), self.max)
        return self.max

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    def summary_ms(self) -> dict[str, float]:
        """``{p50, p95, p99, p999, max, mean}`` in milliseconds."""
        return {
            "p50": self.percentile(50) * 1e3,
            "p95": self.percentile(95) * 1e3,
            "p99": self.percentile(99) * 1e3,
            "p999": self.percentile(99.9) * 1e3,
            "max": self.max * 1e3,
            "mean": self.mean * 1e3,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "buckets": {str(k): v for k, v in self.buckets.items()},
            "count": self.count,
            "total": self.total,
            "min": None if self.count == 0 else self.min,
            "max": self.max,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LatencyHistogram:
        h = cls()
        h.buckets = {int(k): int(v) for k, v in data.get("buckets", {}).items()}
        h.count = int(data.get("count", 0))
        h.total = float(data.get("total", 0.0))
        h.min = math.inf if data.get("min") is None else float(data["min"])
        h.max = float(data.get("max", 0.0))
        return h
