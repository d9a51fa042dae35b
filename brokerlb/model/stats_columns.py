"""A report's ``lastStats`` held as columns: bundle names in report order, the samples in arrays.

A :class:`~brokerlb.model.LocalBrokerData` lists one :class:`NamespaceBundleStats` per bundle
its broker serves; the leader folds every one of them into its bundle histories at every refresh
(:mod:`brokerlb.loadbalance.fold`), and it does that on arrays. :class:`BundleStatsColumns` is
that same map kept in the form the fold reads -- a read-only ``Mapping[str, NamespaceBundleStats]``
whose samples are made only when someone asks for one -- so a report written in process (the
simulator's brokers write about a million samples a simulated day) costs a few arrays instead
of a hundred validated objects, and the fold reads the arrays as they are.

It is validated when it is made, with the rules of :class:`NamespaceBundleStats` (rates and
throughputs finite and ``>= 0``, ``-0.0`` read as ``0.0``; counts integers ``>= 0``; bundle
names distinct strings): the first bad value raises
:class:`~brokerlb.errors.InvalidLoadDataError` naming the bundle and the field. It cannot be
changed afterwards (its arrays are read-only), so reports may share it.

Rows of :attr:`BundleStatsColumns.rates`: ``msgThroughputIn, msgThroughputOut, msgRateIn,
msgRateOut`` (the fold's order); of :attr:`BundleStatsColumns.counts`: ``topics,
consumerCount, producerCount, cacheSize``.

>>> columns = BundleStatsColumns(
...     ["t/ns/0x00000000_0x80000000", "t/ns/0x80000000_0xffffffff"],
...     [[1000.0, 0.0], [2000.0, 0.0], [10.0, 0.0], [20.0, 0.0]],
...     [[3, 0], [1, 0], [1, 0], [0, 0]],
... )
>>> columns["t/ns/0x00000000_0x80000000"].msg_rate_out, len(columns), "x" in columns
(20.0, 2, False)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from brokerlb.model._validate import invalid
from brokerlb.model.bundle_stats import NamespaceBundleStats, plain_values

__all__ = ["BundleStatsColumns", "RATE_FIELDS", "COUNT_FIELDS", "stats_columns_from_json"]

#: JSON keys of the rows of ``rates`` and ``counts``
RATE_FIELDS = ("msgThroughputIn", "msgThroughputOut", "msgRateIn", "msgRateOut")
COUNT_FIELDS = ("topics", "consumerCount", "producerCount", "cacheSize")

_new = object.__new__
_put = object.__setattr__


class BundleStatsColumns(Mapping[str, NamespaceBundleStats]):
    """``lastStats`` as columns (module docstring). Iterates its bundle names in report order."""

    __slots__ = ("names", "rates", "counts", "_index", "_samples")

    names: tuple[str, ...]
    rates: np.ndarray
    counts: np.ndarray
    _index: dict[str, int]
    _samples: tuple[NamespaceBundleStats, ...] | None

    def __init__(
        self, names: Sequence[str], rates: ArrayLike, counts: ArrayLike, path: str = "lastStats"
    ) -> None:
        names = tuple(names)
        n = len(names)
        index = dict(zip(names, range(n), strict=True))
        if len(index) != n or (n and set(map(type, names)) != {str}):
            bad = next((x for x in names if not isinstance(x, str)), None)
            raise invalid(path, bad if bad is not None else names, "bundle names must be distinct strings")
        values = np.array(rates, dtype=np.float64).reshape(len(RATE_FIELDS), n)
        values += 0.0  # -0.0 -> 0.0
        if not (values >= 0).all() or not np.isfinite(values).all():  # NaN fails >= 0
            _refuse_rates(names, values, path)
        whole = np.asarray(counts)
        if whole.dtype.kind not in "iu":
            raise invalid(path, whole.dtype.name, "counts must be integers")
        whole = whole.astype(np.int64).reshape(len(COUNT_FIELDS), n)
        if n and whole.min() < 0:
            row, col = np.argwhere(whole < 0)[0].tolist()
            raise invalid(
                f"{path}[{names[col]}].{COUNT_FIELDS[row]}", int(whole[row, col]), "must not be negative"
            )
        values.flags.writeable = False
        whole.flags.writeable = False
        self.names = names
        self.rates = values
        self.counts = whole
        self._index = index
        self._samples = None

    # ------------------------------------------------------------------ Mapping

    def __getitem__(self, bundle: str) -> NamespaceBundleStats:
        return self.samples()[self._index[bundle]]

    def __contains__(self, bundle: object) -> bool:
        return bundle in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(zip(self.names, self.samples(), strict=True))!r})"

    def __reduce__(self) -> Any:
        return (type(self), (self.names, self.rates, self.counts))

    # ------------------------------------------------------------------ reading

    def samples(self) -> tuple[NamespaceBundleStats, ...]:
        """Every bundle's :class:`NamespaceBundleStats`, in report order (made once, when first asked)."""
        samples = self._samples
        if samples is None:
            samples = self._samples = tuple(map(_sample, *self.rates.tolist(), *self.counts.tolist()))
        return samples

    def totals(self) -> tuple[float, float, float, float, int, int, int]:
        """Throughput in/out and rate in/out summed in report order from ``0.0`` (as a loop adding
        each sample does, bit for bit), and the topic, consumer and producer counts."""
        if not self.names:
            return 0.0, 0.0, 0.0, 0.0, 0, 0, 0
        floats = np.cumsum(self.rates, axis=1)[:, -1].tolist()  # a running sum: sequential
        ints = self.counts[:3].sum(axis=1).tolist()
        return floats[0], floats[1], floats[2], floats[3], ints[0], ints[1], ints[2]

    @classmethod
    def of_checked(cls, names: Sequence[str], rates: np.ndarray, counts: np.ndarray) -> BundleStatsColumns:
        """Columns of values the caller has already checked with the same rules (finite rates
        ``>= 0``, int64 counts ``>= 0``, distinct names): not checked again. ``rates`` (4 x n
        float64) and ``counts`` (4 x n int64) become the columns' own: they must not be shared."""
        if rates.dtype != np.float64 or counts.dtype != np.int64 or rates.shape != counts.shape:
            return cls(names, rates, counts)  # not what this promises: the checked way
        names = tuple(names)
        rates += 0.0  # -0.0 -> 0.0, as the checked constructor does
        rates.flags.writeable = False
        counts.flags.writeable = False
        columns: BundleStatsColumns = _new(cls)
        columns.names = names
        columns.rates = rates
        columns.counts = counts
        columns._index = dict(zip(names, range(len(names)), strict=True))
        columns._samples = None
        return columns

    @classmethod
    def of(cls, stats: Mapping[str, NamespaceBundleStats]) -> BundleStatsColumns:
        """The columns of a map of samples (same names, same order)."""
        if isinstance(stats, BundleStatsColumns):
            return stats
        samples = tuple(stats.values())
        columns = cls(
            tuple(stats),
            [[getattr(s, attr) for s in samples] for attr in _RATE_ATTRS],
            np.array([[getattr(s, attr) for s in samples] for attr in _COUNT_ATTRS], dtype=np.int64).reshape(
                len(_COUNT_ATTRS), len(samples)
            ),
        )
        columns._samples = samples
        return columns


def stats_columns_from_json(value: Any, path: str) -> BundleStatsColumns:
    """A ``lastStats`` JSON object (bundle -> sample) read straight into columns: the rules of
    :meth:`NamespaceBundleStats.from_json` for every sample (missing keys 0, unknown keys
    ignored, the first bad value named with its path, e.g. ``lastStats[t/ns/0x0_0x1].msgRateIn``),
    without making a sample object (a missing map is empty)."""
    if value is None:
        return _EMPTY
    if not isinstance(value, Mapping):
        raise invalid(path, value, "expected a JSON object")
    names: list[str] = []
    rows: list[tuple[float, float, float, float, int, int, int, int]] = []
    for name, item in value.items():
        if not isinstance(name, str):
            raise invalid(path, name, "keys must be strings")
        values = plain_values(item)
        if values is None:
            sample = NamespaceBundleStats.from_json(item, f"{path}[{name}]")
            values = (
                sample.msg_rate_in,
                sample.msg_throughput_in,
                sample.msg_rate_out,
                sample.msg_throughput_out,
                sample.consumer_count,
                sample.producer_count,
                sample.topics,
                sample.cache_size,
            )
        names.append(name)
        rows.append(values)
    if not rows:
        return _EMPTY
    rate_in, throughput_in, rate_out, throughput_out, consumers, producers, topics, cache_size = zip(
        *rows, strict=True
    )
    try:
        counts = np.array((topics, consumers, producers, cache_size), dtype=np.int64)
    except OverflowError:
        raise invalid(
            path, max(max(c) for c in (topics, consumers, producers, cache_size)), "count out of range"
        ) from None
    return BundleStatsColumns(names, (throughput_in, throughput_out, rate_in, rate_out), counts, path)


def _refuse_rates(names: tuple[str, ...], values: np.ndarray, path: str) -> None:
    """Raise for the first rate that is not finite or is negative."""
    bad = ~np.isfinite(values) | (values < 0)
    row, col = np.argwhere(bad)[0].tolist()
    why = "must not be negative" if np.isfinite(values[row, col]) else "not a finite number"
    raise invalid(f"{path}[{names[col]}].{RATE_FIELDS[row]}", float(values[row, col]), why)


_RATE_ATTRS = ("msg_throughput_in", "msg_throughput_out", "msg_rate_in", "msg_rate_out")
_COUNT_ATTRS = ("topics", "consumer_count", "producer_count", "cache_size")


def _sample(
    throughput_in: float,
    throughput_out: float,
    rate_in: float,
    rate_out: float,
    topics: int,
    consumers: int,
    producers: int,
    cache_size: int,
) -> NamespaceBundleStats:
    """A sample of values already checked (the columns were validated when made)."""
    sample: NamespaceBundleStats = _new(NamespaceBundleStats)
    _put(sample, "msg_rate_in", rate_in)
    _put(sample, "msg_throughput_in", throughput_in)
    _put(sample, "msg_rate_out", rate_out)
    _put(sample, "msg_throughput_out", throughput_out)
    _put(sample, "consumer_count", consumers)
    _put(sample, "producer_count", producers)
    _put(sample, "topics", topics)
    _put(sample, "cache_size", cache_size)
    return sample


_EMPTY = BundleStatsColumns((), np.zeros((len(RATE_FIELDS), 0)), np.zeros((len(COUNT_FIELDS), 0), np.int64))
