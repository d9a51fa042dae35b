"""Time as an injected dependency.

Nothing in brokerlb's core reads the wall clock directly: strategies, the
ownership state machine, the simulator and the shells receive a :class:`Clock`.
``SystemClock`` is the real one; ``ManualClock`` is advanced by hand (tests,
simulator, offline planner with a snapshot's ``now``).

Times are milliseconds since the epoch (``int``), as in Pulsar's load data
(``lastUpdate``, ``updatedAt``), and monotonic seconds (``float``) for timeouts.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "SystemClock", "ManualClock", "SYSTEM_CLOCK"]


@runtime_checkable
class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the epoch."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back."""

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on this clock."""


class SystemClock:
    """The real clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        import asyncio  # only the shells sleep; the pure core never imports asyncio

        await asyncio.sleep(seconds)

    def __repr__(self) -> str:
        return "SystemClock()"


class ManualClock:
    """A clock that moves only when told to.

    >>> c = ManualClock(1_000)
    >>> c.advance(2.5); c.now_ms()
    3500
    """

    def __init__(self, start_ms: int = 0) -> None:
        self._now_ms = int(start_ms)
        self._mono = 0.0

    def now_ms(self) -> int:
        return self._now_ms

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"cannot move a clock backwards ({seconds} s)")
        self._mono += seconds
        self._now_ms += int(round(seconds * 1000))

    def set_ms(self, now_ms: int) -> None:
        if now_ms < self._now_ms:
            raise ValueError(f"cannot move a clock backwards ({self._now_ms} -> {now_ms})")
        self._mono += (now_ms - self._now_ms) / 1000.0
        self._now_ms = int(now_ms)

    async def sleep(self, seconds: float) -> None:
        import asyncio

        self.advance(max(0.0, seconds))
        await asyncio.sleep(0)

    def __repr__(self) -> str:
        return f"ManualClock(now_ms={self._now_ms})"


SYSTEM_CLOCK = SystemClock()
