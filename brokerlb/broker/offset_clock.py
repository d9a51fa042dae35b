"""A wall clock that jumps on request, for fault campaigns (``brokerlbClockOffsetFile``).

:class:`OffsetClock` is the :class:`~brokerlb.clock.SystemClock` with ``now_ms`` moved by a number
of milliseconds read from a file -- at start, and again whenever :meth:`OffsetClock.reload` is
called (the broker process calls it on SIGUSR1). A campaign writes ``-120000`` into the file and
sends the signal: the broker's wall clock jumps two minutes back, as an NTP step would move it.
Monotonic time is not moved (an NTP step does not move ``CLOCK_MONOTONIC`` either), so sessions,
leases and timers keep their meaning; what a jump disturbs is every timestamp the broker writes
(load reports' ``lastUpdate``, bundle data, message publish times) and reads from others.
"""

from __future__ import annotations

import logging
from pathlib import Path

from brokerlb.clock import SYSTEM_CLOCK, Clock, SystemClock

__all__ = ["OffsetClock", "clock_from_file"]

logger = logging.getLogger(__name__)


class OffsetClock(SystemClock):
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.offset_ms = 0
        self.reload()

    def reload(self) -> None:
        """Read the offset (an integer number of ms) from the file; a missing or bad file keeps the last one."""
        try:
            text = self.path.read_text().strip()
            offset = int(text or "0")
        except (OSError, ValueError) as exc:
            logger.warning(
                "Clock offset file %s unreadable (%s); keeping %d ms", self.path, exc, self.offset_ms
            )
            return
        if offset != self.offset_ms:
            logger.warning("Wall clock jumps by %+d ms (offset now %+d ms)", offset - self.offset_ms, offset)
        self.offset_ms = offset

    def now_ms(self) -> int:
        return super().now_ms() + self.offset_ms

    def __repr__(self) -> str:
        return f"OffsetClock({str(self.path)!r}, {self.offset_ms:+d} ms)"


def clock_from_file(path: str | None) -> Clock:
    """The system clock, or an :class:`OffsetClock` on ``path`` when one is given."""
    return OffsetClock(path) if path else SYSTEM_CLOCK
