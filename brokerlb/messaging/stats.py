"""Per-topic traffic counters and their rates over a sliding window.

Pulsar's broker recomputes every topic's ``msgRateIn/Out`` and ``msgThroughputIn/Out``
once per ``statsUpdateFrequencyInSecs`` (60 s) as "what happened since the last
update / elapsed time", and the load report carries those numbers. brokerlb keeps the
same window length but slides it: each topic counts messages and bytes in one-second
buckets, and the rate at time *t* is the sum of the last ``window`` *completed* seconds
divided by the window (or by the topic's age while it is younger than the window). So
a report written at any moment reflects the last window, not a stale interval, and a
topic that just arrived on a broker (after a move) is not reported at zero for a whole
interval. The numbers are the same as Pulsar's once traffic is steady.

Worked example (window 5 s): 100 msgs in each of seconds 10..14, nothing after. At
t = 15.2 the rate is 500 / 5 = 100 msg/s; at t = 17.0 seconds 12..16 hold 300 messages:
60 msg/s; from t = 20 on: 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokerlb.errors import InvalidInputError

__all__ = ["RateWindow", "TopicCounters", "TopicLoad"]


class RateWindow:
    """Counts and byte totals in one-second buckets over the last ``window`` seconds.

    Times are seconds on any monotonic clock (passed in, so tests drive it).
    """

    __slots__ = ("window", "_counts", "_bytes", "_second", "_started", "total_count", "total_bytes")

    def __init__(self, window: int, now: float) -> None:
        if window < 1:
            raise InvalidInputError(f"a rate window must be at least 1 second, got {window}")
        self.window = int(window)
        size = self.window + 1  # the completed seconds plus the current one
        self._counts = [0] * size
        self._bytes = [0] * size
        self._second = int(now)
        self._started = now
        self.total_count = 0
        self.total_bytes = 0

    def _advance(self, now: float) -> None:
        second = int(now)
        if second <= self._second:
            return
        size = len(self._counts)
        for s in range(self._second + 1, min(second, self._second + size) + 1):
            self._counts[s % size] = 0
            self._bytes[s % size] = 0
        self._second = second

    def add(self, now: float, count: int = 1, size: int = 0) -> None:
        self._advance(now)
        slot = self._second % len(self._counts)
        self._counts[slot] += count
        self._bytes[slot] += size
        self.total_count += count
        self.total_bytes += size

    def rates(self, now: float) -> tuple[float, float]:
        """``(messages/s, bytes/s)`` over the completed seconds of the window."""
        self._advance(now)
        completed = min(self.window, int(now) - int(self._started))
        if completed <= 0:
            return 0.0, 0.0
        current = self._second % len(self._counts)
        count = sum(self._counts) - self._counts[current]
        data = sum(self._bytes) - self._bytes[current]
        return count / completed, data / completed


@dataclass(frozen=True, slots=True)
class TopicLoad:
    """One topic's rates and connections now (Pulsar's topic-stats names in the broker's JSON)."""

    msg_rate_in: float
    msg_throughput_in: float
    msg_rate_out: float
    msg_throughput_out: float
    producer_count: int
    consumer_count: int
    msg_drop_rate: float = 0.0


class TopicCounters:
    """In, out and dropped traffic of one topic (out = deliveries to consumers, all subscriptions)."""

    __slots__ = ("msg_in", "msg_out", "dropped")

    def __init__(self, window: int, now: float) -> None:
        self.msg_in = RateWindow(window, now)
        self.msg_out = RateWindow(window, now)
        self.dropped = RateWindow(window, now)

    def load(self, now: float, producers: int, consumers: int) -> TopicLoad:
        rate_in, tput_in = self.msg_in.rates(now)
        rate_out, tput_out = self.msg_out.rates(now)
        drop, _ = self.dropped.rates(now)
        return TopicLoad(rate_in, tput_in, rate_out, tput_out, producers, consumers, drop)
