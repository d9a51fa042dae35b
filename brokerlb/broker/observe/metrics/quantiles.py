"""A summary with quantiles over a sliding window, as Pulsar's lookup and assignment summaries export.

``prometheus_client``'s Summary has no quantiles; Pulsar's (simpleclient) keeps them over the last
60 seconds. :class:`QuantileWindow` keeps the observations of the last ``max_age`` seconds (at most
``max_samples``, the oldest dropped first) and answers the quantiles on demand; the count and the
sum are totals since the start, as a Prometheus summary's are.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Sequence

__all__ = ["QuantileWindow", "PULSAR_QUANTILES"]

#: The quantiles Pulsar's ``pulsar_broker_lookup`` and assignment summaries export.
PULSAR_QUANTILES: tuple[float, ...] = (0.5, 0.99, 0.999, 1.0)


class QuantileWindow:
    """Observations of the last ``max_age`` seconds; totals since the start."""

    def __init__(self, now: Callable[[], float], *, max_age: float = 60.0, max_samples: int = 10_000) -> None:
        self._now = now
        self.max_age = max_age
        self._samples: collections.deque[tuple[float, float]] = collections.deque(maxlen=max_samples)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        if not math.isfinite(value):
            return
        self._samples.append((self._now(), value))
        self.count += 1
        self.sum += value

    def quantiles(self, qs: Sequence[float] = PULSAR_QUANTILES) -> dict[float, float]:
        """``q -> value`` (nearest rank) over the window; NaN for every q when the window is empty."""
        horizon = self._now() - self.max_age
        while self._samples and self._samples[0][0] < horizon:
            self._samples.popleft()
        values = sorted(v for _, v in self._samples)
        if not values:
            return {q: math.nan for q in qs}
        return {q: values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))] for q in qs}
