"""Who gets which message in a perf run: topic and key skew, names, pacing.

* **skew** -- ``uniform`` (every item equally likely) or ``zipf`` with exponent ``s``
  (item *i*, 0-based, has weight ``1 / (i + 1) ** s``): with ``s = 1`` and 200 topics
  the hottest topic gets ~17 % of the messages and the 100 coldest ~ 12 % together.
  :class:`Picker` draws from a seeded :class:`random.Random`, so a run is repeatable;
* **names** -- ``pulsar-perf``'s: one topic ``T`` as given, several ``T-0 .. T-(n-1)``;
* **pacing** -- :class:`Pacer` says how many sends are due now for a target total rate
  (``rate <= 0``: as fast as the producers allow), without drifting over a long run.

>>> p = Picker(4, "zipf", 1.0, seed=7)
>>> [round(w, 3) for w in p.weights]
[0.48, 0.24, 0.16, 0.12]
>>> topic_names("persistent://public/default/perf", 3)
['persistent://public/default/perf-0', 'persistent://public/default/perf-1', 'persistent://public/default/perf-2']
>>> pacer = Pacer(100.0, start=0.0)
>>> pacer.due(0.5), pacer.due(0.5), pacer.due(1.0)
(50, 0, 50)
"""

from __future__ import annotations

import bisect
import itertools
import random

from brokerlb.errors import InvalidInputError
from brokerlb.naming import TopicName

__all__ = ["SKEWS", "skew_weights", "Picker", "topic_names", "Pacer"]

SKEWS = ("uniform", "zipf")


def skew_weights(n: int, skew: str, s: float = 1.0) -> list[float]:
    """Normalised weights of ``n`` items under ``skew``."""
    if n < 1:
        raise InvalidInputError(f"need at least one item, got {n}")
    if skew == "uniform":
        raw = [1.0] * n
    elif skew == "zipf":
        if not s > 0:
            raise InvalidInputError(f"the Zipf exponent must be > 0, got {s}")
        raw = [1.0 / (i + 1) ** s for i in range(n)]
    else:
        raise InvalidInputError(f"unknown skew {skew!r}; expected one of {', '.join(SKEWS)}")
    total = sum(raw)
    return [w / total for w in raw]


class Picker:
    """Draws item indexes ``0..n-1`` with the skew's weights (seeded)."""

    def __init__(self, n: int, skew: str = "uniform", s: float = 1.0, *, seed: int | None = None) -> None:
        self.weights = skew_weights(n, skew, s)
        self._cumulative = list(itertools.accumulate(self.weights))
        self._cumulative[-1] = 1.0
        self._rng = random.Random(seed)
        self._uniform = skew == "uniform"
        self.n = n

    @classmethod
    def from_weights(cls, weights: list[float], *, seed: int | None = None) -> Picker:
        """Draw with explicit (positive, not necessarily normalised) weights."""
        if not weights or any(not w >= 0 for w in weights) or sum(weights) <= 0:
            raise InvalidInputError("weights must be non-negative numbers with a positive sum")
        picker = cls(len(weights), "uniform", seed=seed)
        total = sum(weights)
        picker.weights = [w / total for w in weights]
        picker._cumulative = list(itertools.accumulate(picker.weights))
        picker._cumulative[-1] = 1.0
        picker._uniform = False
        return picker

    def pick(self) -> int:
        if self._uniform:
            return self._rng.randrange(self.n)
        return bisect.bisect_left(self._cumulative, self._rng.random())


def topic_names(base: str, count: int) -> list[str]:
    """``pulsar-perf``'s naming: ``base`` itself for one topic, else ``base-0 .. base-(count-1)``."""
    name = TopicName.parse(base)
    if count < 1:
        raise InvalidInputError(f"--num-topics must be >= 1, got {count}")
    if count == 1:
        return [str(name)]
    return [f"{name}-{i}" for i in range(count)]


class Pacer:
    """Sends due at a target rate: ``due(now)`` = messages owed since the start minus those handed out.

    After a stall (the producers' queues were full) at most one second of owed sends is
    kept, so the run catches up without a burst of the whole backlog (like the stored
    permits of the rate limiter ``pulsar-perf`` uses).
    """

    def __init__(self, rate: float, *, start: float) -> None:
        self.rate = rate
        self.start = start
        self.issued = 0

    def due(self, now: float, cap: int = 10_000) -> int:
        if self.rate <= 0:
            return cap
        owed = int((now - self.start) * self.rate) - self.issued
        backlog = max(1, int(self.rate))
        if owed > backlog:
            self.issued += owed - backlog
            owed = backlog
        count = max(0, min(owed, cap))
        self.issued += count
        return count
