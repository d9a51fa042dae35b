"""Retry back-off as Pulsar's client ``Backoff``: doubling from 100 ms up to a maximum, with jitter.

Each :meth:`Backoff.next` doubles the delay (up to ``maximum``) and returns it reduced by a
random amount of up to 10 %, so many clients closed at once (an unload) do not come
back in lockstep. :meth:`Backoff.reset` starts over after a connection proved good.

>>> import random
>>> b = Backoff(0.1, 1.0, rng=random.Random(1))
>>> [round(b.next(), 3) for _ in range(6)]
[0.1, 0.197, 0.366, 0.739, 0.974, 0.95]
"""

from __future__ import annotations

import random

from brokerlb.errors import InvalidInputError

__all__ = ["Backoff"]


class Backoff:
    def __init__(
        self, initial: float = 0.1, maximum: float = 30.0, *, rng: random.Random | None = None
    ) -> None:
        if not 0 < initial <= maximum:
            raise InvalidInputError(f"backoff needs 0 < initial <= maximum, got {initial} and {maximum}")
        self.initial = initial
        self.maximum = maximum
        self._rng = rng or random.Random()
        self._next = initial

    def next(self) -> float:
        current = self._next
        self._next = min(current * 2, self.maximum)
        if current <= self.initial:
            return current
        return max(self.initial, current - self._rng.uniform(0, current / 10))

    def reset(self) -> None:
        self._next = self.initial
