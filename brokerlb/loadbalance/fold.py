"""The refresh's fold of every reported bundle sample, on arrays (pure core; numpy).

Pulsar's ``updateAll`` adds each bundle of each broker's ``lastStats`` to that bundle's short-
and long-term windows (``TimeAverageMessageData.update``) and sets the broker's
``TimeAverageBrokerData`` to the sums of those windows, on every refresh -- for the brokers
whose report did not change too. :class:`FoldCache` does the same arithmetic on arrays:

* for each window ``n = min(num_samples + 1, max_samples)`` and
  ``avg = ((n - 1) * avg + sample) / n`` -- the same IEEE double operations in the same order
  as the scalar code, so the results are bit for bit those of :meth:`BundleData.update`;
* a bundle reported by two brokers (a stale report of its previous owner) is folded twice,
  in broker order: occurrences are processed in rounds, the k-th report of a bundle in round k;
* a broker's sums are accumulated sequentially from 0.0 in its ``lastStats`` order
  (added position by position: the k-th value of every broker at step k), exactly as
  ``s += value`` does;
* the windows live in a :class:`~brokerlb.loadbalance.windows.WindowTable` (the ``BundleData``
  objects hold views of its columns, adopted on their first fold); a topic count is written
  only when it changes.

What makes it fast is what it does *not* do: a broker whose report is the same object as last
time, none of whose bundles was set or removed in ``bundle_data`` since (a
:class:`~brokerlb.loadbalance.tracked.TrackedDict` says so), keeps its resolved columns and
sample arrays -- the 10,000 ``BundleData`` objects of a large cluster are not visited. This relies
on what the refresh already documents: a report handed to it is not changed in place, and a
history's windows are replaced only by the refresh.

Worked example: a window with ``max_samples`` 2, ``num_samples`` 2 and ``msg_rate_in`` 15
folding a sample of 40 becomes ``(1 * 15 + 40) / 2 = 27.5`` (as in
:mod:`brokerlb.model.time_average`).

The result, :class:`FoldSummary`, keeps each reported bundle's long-term message rate and
throughput after the refresh, so the split check rejects the bundles below every threshold
without reading their objects (:mod:`brokerlb.loadbalance.split.bundle_splitter_task`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter, is_
from typing import Any

import numpy as np

from brokerlb.loadbalance.tracked import TrackedDict
from brokerlb.loadbalance.windows import WindowTable
from brokerlb.model import (
    BundleData,
    BundleStatsColumns,
    LocalBrokerData,
    NamespaceBundleStats,
    TimeAverageBrokerData,
)

__all__ = ["FoldCache", "FoldSummary", "Segment"]

_SAMPLE = attrgetter("msg_throughput_in", "msg_throughput_out", "msg_rate_in", "msg_rate_out")
_COUNTS = attrgetter("topics", "consumer_count", "producer_count")
_SHORT = attrgetter("short_term_data")
_LONG = attrgetter("long_term_data")


@dataclass(frozen=True, slots=True, eq=False)
class Segment:
    """One broker's report as the fold resolved it: its ``lastStats`` (``keys``), the histories
    they fold into, their table columns and history rows, the sample values (4 x n: throughput
    in/out, rate in/out) and counts (3 x n: topics, consumers, producers)."""

    report: LocalBrokerData
    stats_map: Mapping[str, NamespaceBundleStats]
    keys: tuple[str, ...]
    histories: tuple[BundleData, ...]
    short: np.ndarray
    long: np.ndarray
    rows: np.ndarray
    x: np.ndarray
    counts: np.ndarray
    ranges: dict[str, tuple[str, ...]]


@dataclass(frozen=True, slots=True, eq=False)
class FoldSummary:
    """Every reported bundle after one refresh, in report order (broker, then ``lastStats``):
    ``long_term_rate`` / ``long_term_throughput`` (``in + out`` of its long-term window),
    ``topics`` and ``sessions`` (consumers + producers) of its sample; ``segments`` the reports."""

    segments: tuple[Segment, ...]
    offsets: np.ndarray
    long_term_rate: np.ndarray
    long_term_throughput: np.ndarray
    topics: np.ndarray
    sessions: np.ndarray
    cache: FoldCache
    version: int

    def occurrence(self, i: int) -> tuple[str, NamespaceBundleStats, BundleData]:
        """The ``i``-th reported bundle: name, sample, history."""
        s = int(np.searchsorted(self.offsets, i, side="right")) - 1
        segment, j = self.segments[s], i - int(self.offsets[s])
        key = segment.keys[j]
        return key, segment.stats_map[key], segment.histories[j]

    def describes(self, reports: Sequence[LocalBrokerData], bundle_data: Mapping[str, BundleData]) -> bool:
        """Whether this summary still holds: the same report objects in the same order, and
        neither ``bundle_data`` nor any window changed since the fold."""
        cache = self.cache
        if cache.version != self.version or not cache.current() or bundle_data is not cache.bundle_data:
            return False
        if not isinstance(bundle_data, TrackedDict) or bundle_data.has_changes():
            return False
        return len(reports) == len(self.segments) and all(
            map(is_, reports, (s.report for s in self.segments))
        )


class FoldCache:
    """The fold's memory between refreshes: window table, resolved reports, topic counts."""

    def __init__(self) -> None:
        self.table = WindowTable()
        self.segments: dict[str, Segment] = {}
        self.bundle_data: Mapping[str, BundleData] | None = None
        self.version = 0  # bumped by every fold and every table write since (see describes)
        self._row_of: dict[int, int] = {}  # id(history) -> row
        self._histories: list[BundleData] = []  # keeps them alive: ids stay unique
        self._topics = np.zeros(0, dtype=np.int64)  # the topic count last written to each row
        self._table_version = -1
        self._layout: _Layout | None = None

    # ------------------------------------------------------------------ which reports to re-read

    def unchanged(
        self, bundle_data: Mapping[str, BundleData], reports: Mapping[str, LocalBrokerData]
    ) -> dict[str, bool]:
        """The brokers whose resolved report can be reused: ``True`` -- the same report object;
        ``False`` -- a new report of the same bundles in the same order (only its samples are
        read). In both cases none of those bundles was set or removed in ``bundle_data`` since.
        Call first in a refresh: it takes the changes ``bundle_data`` recorded."""
        if not isinstance(bundle_data, TrackedDict) or bundle_data is not self.bundle_data:
            self.segments.clear()
            self.bundle_data = bundle_data
            if isinstance(bundle_data, TrackedDict):
                bundle_data.take_changes()
            return {}
        changes = bundle_data.take_changes()
        if changes is None:
            self.segments.clear()
            return {}
        kept: dict[str, bool] = {}
        for broker, report in reports.items():
            segment = self.segments.get(broker)
            if segment is None:
                continue
            stats_map = report.last_stats
            same = segment.report is report and segment.stats_map is stats_map
            if not same and (len(stats_map) != len(segment.keys) or _keys(stats_map) != segment.keys):
                continue
            if changes and not changes.isdisjoint(segment.keys):
                continue
            kept[broker] = same
        return kept

    # ------------------------------------------------------------------ the fold

    def fold(
        self,
        brokers: Sequence[tuple[str, LocalBrokerData, TimeAverageBrokerData]],
        bundle_data: Mapping[str, BundleData],
        unchanged: Mapping[str, bool],
    ) -> FoldSummary:
        """Fold every broker's ``lastStats`` (all bundles in ``bundle_data``) and set its sums;
        ``unchanged`` is what :meth:`unchanged` said at the start of the refresh."""
        if isinstance(bundle_data, TrackedDict):
            bundle_data.take_changes()  # the new histories of this refresh: in re-read reports only
        segments = []
        for broker, report, _ in brokers:
            same = unchanged.get(broker)
            if same is None:
                segment = self._resolve(report, bundle_data)
            elif same:
                segment = self.segments[broker]
            else:
                segment = self._reread(self.segments[broker], report)
            segments.append(segment)
        self.segments = {b[0]: s for b, s in zip(brokers, segments, strict=True)}
        layout = self._layout
        if layout is None or not layout.fits(segments):
            layout = self._layout = _Layout(segments)
        else:
            layout.take_samples(segments)
        if not layout.size:
            for _, _, average in brokers:
                _set_sums(average, (0.0,) * 8)
            empty = np.zeros(0)
            self.version += 1
            return FoldSummary(
                tuple(segments),
                layout.offsets,
                empty,
                empty,
                empty.astype(np.int64),
                empty.astype(np.int64),
                self,
                self.version,
            )
        x, counts, values = layout.x, layout.counts, layout.values
        data = self.table.data
        final = None
        for part, columns, rounds in (
            (0, layout.short, layout.short_rounds),
            (4, layout.long, layout.long_rounds),
        ):
            for occ in rounds:
                c = columns if occ is None else columns[occ]
                n = data[0].take(c)
                n += 1.0
                np.minimum(n, data[1].take(c), out=n)
                new = data[2:6].take(c, axis=1)
                new *= n - 1.0
                new += x if occ is None else x[:, occ]
                new /= n
                data[0, c] = n
                data[2:6, c] = new
                if occ is None:
                    values[part : part + 4] = new
                    final = new
                else:
                    values[part : part + 4, occ] = new
        if len(layout.long_rounds) > 1:
            final = data[2:6].take(layout.long, axis=1)  # each window as its last report left it
        assert final is not None
        self._set_topics(layout, counts[0])
        _set_broker_sums([b[2] for b in brokers], layout)
        self.table.version += 1
        self.version += 1
        self._table_version = self.table.version
        return FoldSummary(
            tuple(segments),
            layout.offsets,
            final[2] + final[3],
            final[0] + final[1],
            counts[0].copy(),
            counts[1] + counts[2],
            self,
            self.version,
        )

    def folded_whole(self, broker: str, report: LocalBrokerData) -> bool:
        """Whether the last fold read ``report`` (this object, its ``lastStats`` unchanged) for
        ``broker``: every bundle it lists had a history in ``bundle_data`` then."""
        segment = self.segments.get(broker)
        return segment is not None and segment.report is report and segment.stats_map is report.last_stats

    def current(self) -> bool:
        """Whether no window was written since the last fold."""
        return self.table.version == self._table_version

    # ------------------------------------------------------------------ helpers

    def _reread(self, segment: Segment, report: LocalBrokerData) -> Segment:
        """``segment`` with the samples of a new report of the same bundles."""
        stats_map = report.last_stats
        x, counts = _sample_arrays(stats_map)
        return Segment(
            report,
            stats_map,
            segment.keys,
            segment.histories,
            segment.short,
            segment.long,
            segment.rows,
            x,
            counts,
            segment.ranges,
        )

    def _resolve(self, report: LocalBrokerData, bundle_data: Mapping[str, BundleData]) -> Segment:
        stats_map = report.last_stats
        keys = _keys(stats_map)
        histories = tuple(map(bundle_data.__getitem__, keys))
        ranges: dict[str, list[str]] = {}
        for bundle in keys:
            namespace, _, bundle_range = bundle.rpartition("/")
            ranges.setdefault(namespace, []).append(bundle_range)
        return Segment(
            report,
            stats_map,
            keys,
            histories,
            self._columns(histories, _SHORT, "short_term_data"),
            self._columns(histories, _LONG, "long_term_data"),
            self._rows(histories),
            *_sample_arrays(stats_map),
            {ns: tuple(r) for ns, r in ranges.items()},
        )

    def _columns(
        self, histories: tuple[BundleData, ...], getter: attrgetter[Any], attribute: str
    ) -> np.ndarray:
        """The table column of each history's window, adopting windows the table does not hold
        yet (a window shared by several histories stays shared)."""
        table = self.table
        columns = list(map(table.index.get, map(id, map(getter, histories))))
        if None in columns:
            # adopt in one batch; a window seen twice (shared, or a bundle reported twice) once
            pending: dict[int, tuple[object, list[int]]] = {}
            for i, history in enumerate(histories):
                if columns[i] is None:
                    window = getattr(history, attribute)
                    pending.setdefault(id(window), (window, []))[1].append(i)
            views = table.adopt_all([window for window, _ in pending.values()])  # type: ignore[misc]
            for (_, positions), view in zip(pending.values(), views, strict=True):
                column = table.index[id(view)]
                for i in positions:
                    setattr(histories[i], attribute, view)
                    columns[i] = column
        return np.array(columns, dtype=np.int64)

    def _rows(self, histories: tuple[BundleData, ...]) -> np.ndarray:
        rows = list(map(self._row_of.get, map(id, histories)))
        if None not in rows:
            return np.array(rows, dtype=np.int64)
        rows = []
        for history in histories:
            row = self._row_of.get(id(history))
            if row is None:
                row = self._row_of[id(history)] = len(self._histories)
                self._histories.append(history)
                if row >= len(self._topics):
                    self._topics = np.concatenate(
                        [self._topics, np.zeros(max(row + 1, len(self._topics)), np.int64)]
                    )
                self._topics[row] = history.topics
            rows.append(row)
        return np.array(rows, dtype=np.int64)

    def _set_topics(self, layout: _Layout, topics: np.ndarray) -> None:
        """``history.topics = sample.topics`` in report order (the last report of a bundle wins),
        written where it differs from what was last written."""
        target_rows, wanted = layout.last_rows, topics[layout.last]
        for i in np.flatnonzero(self._topics[target_rows] != wanted).tolist():
            row, value = int(target_rows[i]), int(wanted[i])
            self._histories[row].topics = value
            self._topics[row] = value


class _Layout:
    """The fold's arrays for one sequence of resolved reports, kept while the next fold has the
    same: the concatenated table columns and history rows with their rounds, each history row's
    last occurrence, the order in which the broker sums add the occurrences, and the
    concatenated samples -- a report re-read since is copied into its place, the rest stay."""

    def __init__(self, segments: Sequence[Segment]) -> None:
        self.structure = [s.short for s in segments]  # a re-read segment keeps its arrays
        self.sources = [s.x for s in segments]
        lengths = np.fromiter((len(s.keys) for s in segments), dtype=np.int64, count=len(segments))
        self.lengths = lengths
        self.offsets = np.r_[0, np.cumsum(lengths)]
        self.size = size = int(self.offsets[-1])
        if not size:
            segments = []  # nothing to fold: empty arrays
        self.x = np.concatenate([np.zeros((4, 0))] + [s.x for s in segments], axis=1)
        self.counts = np.concatenate([np.zeros((3, 0), np.int64)] + [s.counts for s in segments], axis=1)
        self.values = np.empty((8, size))  # per occurrence: short 4, long 4 values after its fold
        self.short = np.concatenate([np.zeros(0, np.int64)] + [s.short for s in segments])
        self.long = np.concatenate([np.zeros(0, np.int64)] + [s.long for s in segments])
        self.short_rounds = _rounds(self.short)
        self.long_rounds = _rounds(self.long)
        rows = np.concatenate([np.zeros(0, np.int64)] + [s.rows for s in segments])
        self.last, self.last_rows = _last_occurrences(rows)
        # the broker sums, position by position: the brokers longest report first, so the brokers
        # with a k-th bundle are the first active[k]; ``perm`` lists the occurrences in that order
        brokers = len(lengths)
        self.order = np.argsort(-lengths, kind="stable")
        ascending = np.sort(lengths)
        longest = int(ascending[-1]) if brokers else 0
        active = brokers - np.searchsorted(ascending, np.arange(longest), side="right")
        starts = np.r_[0, np.cumsum(active)]
        self.steps = list(zip(active.tolist(), starts[:-1].tolist(), starts[1:].tolist(), strict=True))
        position = np.repeat(np.arange(longest), active)
        rank = np.arange(size) - np.repeat(starts[:-1], active)
        self.perm = self.offsets[:-1][self.order[rank]] + position

    def fits(self, segments: Sequence[Segment]) -> bool:
        return len(segments) == len(self.structure) and all(
            map(is_, (s.short for s in segments), self.structure)
        )

    def take_samples(self, segments: Sequence[Segment]) -> None:
        """Copy in the samples of the reports re-read since the last fold."""
        sources, offsets = self.sources, self.offsets
        for i, segment in enumerate(segments):
            if segment.x is not sources[i]:
                start, end = int(offsets[i]), int(offsets[i + 1])
                self.x[:, start:end] = segment.x
                self.counts[:, start:end] = segment.counts
                sources[i] = segment.x


def _keys(stats_map: Mapping[str, NamespaceBundleStats]) -> tuple[str, ...]:
    return stats_map.names if isinstance(stats_map, BundleStatsColumns) else tuple(stats_map)


def _sample_arrays(stats_map: Mapping[str, NamespaceBundleStats]) -> tuple[np.ndarray, np.ndarray]:
    """4 x n sample values (throughput in/out, rate in/out) and 3 x n counts (topics, consumers,
    producers); a report held as columns is read as it is (no sample is made)."""
    if isinstance(stats_map, BundleStatsColumns):
        return stats_map.rates, stats_map.counts[:3]
    samples = tuple(stats_map.values())
    n = len(samples)
    x = np.fromiter(chain.from_iterable(map(_SAMPLE, samples)), dtype=np.float64, count=4 * n).reshape(n, 4).T
    counts = (
        np.fromiter(chain.from_iterable(map(_COUNTS, samples)), dtype=np.int64, count=3 * n).reshape(n, 3).T
    )
    return x, counts


def _rounds(rows: np.ndarray) -> list[np.ndarray | None]:
    """Occurrence indexes by round: a window reported k times (stale reports of earlier owners)
    is folded in round 0, 1, ..., k - 1 in report order; each round touches a column once.
    ``[None]``: every window once, in a single round."""
    if not len(rows) or np.bincount(rows).max() <= 1:
        return [None]  # the common case, found without sorting
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    repeated = ordered[1:] == ordered[:-1]
    first = np.flatnonzero(np.r_[True, ~repeated])
    starts = np.repeat(first, np.diff(np.r_[first, len(order)]))
    round_of = np.empty(len(rows), dtype=np.int64)
    round_of[order] = np.arange(len(order)) - starts
    return [np.flatnonzero(round_of == r) for r in range(int(round_of.max()) + 1)]


def _last_occurrences(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The occurrence that comes last for each history row, and that row."""
    if not len(rows) or np.bincount(rows).max() <= 1:
        return np.arange(len(rows)), rows  # every row once (the common case)
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    last = order[np.r_[ordered[1:] != ordered[:-1], True]]
    return last, rows[last]


def _set_broker_sums(averages: Sequence[TimeAverageBrokerData], layout: _Layout) -> None:
    """Each broker's eight sums, added in report order from 0.0 (a running sum per broker): position
    by position, each step adding the k-th value of every broker that has one."""
    ordered = layout.values.take(layout.perm, axis=1)
    sums = np.zeros((8, len(averages)))
    for active, start, end in layout.steps:
        sums[:, :active] += ordered[:, start:end]
    for j, values in zip(layout.order.tolist(), sums.T.tolist(), strict=True):
        _set_sums(averages[j], values)


def _set_sums(average: TimeAverageBrokerData, sums: Sequence[float]) -> None:
    (
        average.short_term_msg_throughput_in,
        average.short_term_msg_throughput_out,
        average.short_term_msg_rate_in,
        average.short_term_msg_rate_out,
        average.long_term_msg_throughput_in,
        average.long_term_msg_throughput_out,
        average.long_term_msg_rate_in,
        average.long_term_msg_rate_out,
    ) = sums
