"""Who fetches what, when: the measurements of a rebalance protocol.

Consumers report to a :class:`FetchTracker` when they start and stop fetching
partitions. From those intervals it computes, for a window ``[t0, t1]`` around
a membership change:

* ``paused_partition_seconds`` -- summed time the partitions were not fetched;
* ``max_pause_s`` -- the longest time any single partition was not fetched;
* ``stop_the_world_s`` -- the longest stretch in which *no* partition was fetched.

It also records every violation of "a partition is fetched by at most one
consumer at a time" instead of raising inside a consumer's task, so tests can
assert the list is empty. Time comes from an injected monotonic clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from brokerlb.kafka.assignors import TopicPartition

__all__ = ["FetchTracker", "PauseStats", "RebalanceRecord"]


@dataclass
class RebalanceRecord:
    """One member's rebalance: from the trigger to fetching again."""

    member: str
    style: str
    triggered_at: float
    started_at: float = 0.0
    finished_at: float = 0.0
    attempts: int = 0
    succeeded: bool = False
    released: int = 0
    acquired: int = 0
    #: when this member stopped / resumed fetching (the ZooKeeper-era protocol stops everything)
    stopped_fetching_at: float | None = None
    resumed_fetching_at: float | None = None


@dataclass(frozen=True)
class PauseStats:
    paused_partition_seconds: float
    max_pause_s: float
    stop_the_world_s: float


@dataclass
class FetchTracker:
    clock: Callable[[], float] = time.monotonic
    #: partition -> (member, since)
    _live: dict[TopicPartition, tuple[str, float]] = field(default_factory=dict)
    #: closed intervals (partition, member, start, end)
    intervals: list[tuple[TopicPartition, str, float, float]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    #: time of the last start or stop of a fetch
    last_change_at: float = 0.0

    def started(self, member: str, partitions: Iterable[TopicPartition]) -> None:
        now = self.clock()
        for tp in partitions:
            self.last_change_at = now
            current = self._live.get(tp)
            if current is not None and current[0] != member:
                self.violations.append(
                    f"{tp} fetched by {member} while {current[0]} still fetches it "
                    f"(since {current[1]:.3f}, now {now:.3f})"
                )
                continue
            if current is None:
                self._live[tp] = (member, now)

    def stopped(self, member: str, partitions: Iterable[TopicPartition], at: float | None = None) -> None:
        """``member`` stopped using ``partitions`` now, or ``at`` an earlier time (its lease ended then)."""
        now = self.clock() if at is None else at
        for tp in partitions:
            current = self._live.get(tp)
            if current is not None and current[0] == member:
                self.last_change_at = max(self.last_change_at, now)
                del self._live[tp]
                self.intervals.append((tp, member, current[1], max(now, current[1])))

    def fetching(self) -> dict[TopicPartition, str]:
        return {tp: member for tp, (member, _) in self._live.items()}

    def _all_intervals(self, until: float) -> list[tuple[TopicPartition, str, float, float]]:
        return self.intervals + [(tp, m, since, until) for tp, (m, since) in self._live.items()]

    def pause_stats(self, partitions: Iterable[TopicPartition], t0: float, t1: float) -> PauseStats:
        wanted = set(partitions)
        by_partition: dict[TopicPartition, list[tuple[float, float]]] = {tp: [] for tp in wanted}
        union: list[tuple[float, float]] = []
        for tp, _, start, end in self._all_intervals(t1):
            if tp in wanted and end > t0 and start < t1:
                span = (max(start, t0), min(end, t1))
                by_partition[tp].append(span)
                union.append(span)
        paused_total = 0.0
        max_pause = 0.0
        for spans in by_partition.values():
            gaps = _gaps(spans, t0, t1)
            paused_total += sum(gaps)
            max_pause = max([max_pause, *gaps])
        stop_the_world = max(_gaps(union, t0, t1), default=0.0)
        return PauseStats(paused_total, max_pause, stop_the_world)


def _gaps(spans: list[tuple[float, float]], t0: float, t1: float) -> list[float]:
    """Lengths of the parts of ``[t0, t1]`` not covered by ``spans``."""
    gaps = []
    cursor = t0
    for start, end in sorted(spans):
        if start > cursor:
            gaps.append(start - cursor)
        cursor = max(cursor, end)
    if cursor < t1:
        gaps.append(t1 - cursor)
    return gaps
