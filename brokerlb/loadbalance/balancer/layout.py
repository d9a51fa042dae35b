"""The balancer's bundle table, kept between cycles: which bundles the brokers report, and their stats.

A broker rewrites its load report when its load changed by 10 % or every 15 minutes
(``needBrokerDataUpdate``), and the bundles it serves change only when something moves. So from
one cycle to the next most reports are the same objects, and most rewritten reports list the same
bundles in the same order with new numbers. :class:`Layout` keeps, per broker, the report it last
read (:class:`ReportBlock`: its bundle names and a table of their stats) and the concatenation of
them all -- names, owners, namespaces, hash ranges, the ring order merges walk -- and
:meth:`Layout.refresh` does only what changed:

* a report that is the same object as before: nothing;
* a rewritten report listing the same bundles: its rows of the table are overwritten;
* anything else (a broker joined or left, a bundle moved, split or merged): the concatenation is
  made again from the blocks (each block read once per report) and :attr:`Layout.version` changes.

A bundle listed by two reports (a stale report after a move) belongs to the first broker by id;
the table keeps both rows and :attr:`Layout.keep` says which ones the model uses.

>>> from brokerlb.testing import broker
>>> layout = Layout()
>>> layout.refresh(("b1:8080", "b2:8080"), [broker("b1:8080", bundles=["t/ns/0x00000000_0x80000000"]),
...                                        broker("b2:8080", bundles=["t/ns/0x80000000_0xffffffff"])])
True
>>> layout.names, layout.owner.tolist(), layout.bounds.tolist()
(['t/ns/0x00000000_0x80000000', 't/ns/0x80000000_0xffffffff'], [0, 1], [[0, 2147483648], [2147483648, 4294967295]])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from brokerlb.loadbalance.split.thresholds import range_bounds
from brokerlb.model import LocalBrokerData
from brokerlb.model.stats_columns import BundleStatsColumns

__all__ = ["Layout", "ReportBlock", "COLUMNS"]

#: the table's columns
COLUMNS = ("msgRate", "msgThroughputIn", "msgThroughputOut", "topics", "sessions")


@dataclass(frozen=True, eq=False, slots=True)
class ReportBlock:
    """One broker report's bundles in report order, with their stats, namespace ids and hash ranges
    (module docstring)."""

    report: LocalBrokerData
    last_update: int
    names: tuple[str, ...]
    #: (k, 5) message rate in + out, throughput in, throughput out, topics, sessions
    rows: np.ndarray
    #: (k, 3) namespace id, lower and upper bound of the hash range (``-1, -1``: not a range)
    info: np.ndarray

    def current(self, local: LocalBrokerData) -> bool:
        """Whether ``local`` is the report this block was read from."""
        return self.report is local and self.last_update == local.last_update


def _rows(local: LocalBrokerData) -> tuple[tuple[str, ...], np.ndarray]:
    stats = local.last_stats
    if isinstance(stats, BundleStatsColumns):  # a report read or written as columns
        rates, counts = stats.rates, stats.counts
        rows = np.column_stack([rates[2] + rates[3], rates[0], rates[1], counts[0], counts[1] + counts[2]])
        return stats.names, rows.astype(float)
    names = tuple(stats)
    rows = np.asarray(
        [
            (
                s.msg_rate_in + s.msg_rate_out,
                s.msg_throughput_in,
                s.msg_throughput_out,
                s.topics,
                s.producer_count + s.consumer_count,
            )
            for s in stats.values()
        ],
        dtype=float,
    )
    return names, rows.reshape(len(names), len(COLUMNS))


class Layout:
    """The bundle table over the brokers' reports (module docstring). Not thread-safe."""

    def __init__(self) -> None:
        self.brokers: tuple[str, ...] = ()
        self.blocks: list[ReportBlock] = []
        #: (n + 1,) where each broker's rows start in ``table_all``
        self.starts = np.zeros(1, dtype=np.int64)
        #: (M, 5) every report's rows, duplicates included
        self.table_all = np.zeros((0, len(COLUMNS)))
        #: rows of ``table_all`` the model uses (``None``: all of them)
        self.keep: np.ndarray | None = None
        #: the bundles (first report listing each), their owner, namespace and hash range
        self.names: list[str] = []
        self.bundle_index: dict[str, int] = {}
        self.owner = np.zeros(0, dtype=np.int64)
        self.ns_id = np.zeros(0, dtype=np.int64)
        self.bounds = np.zeros((0, 2), dtype=np.int64)
        self.namespaces: list[str] = []
        #: changes whenever ``names`` or ``owner`` do
        self.version = 0
        self._namespace_ids: dict[str, int] = {}
        self._name_info: dict[str, tuple[int, int, int]] = {}
        self._merge_order: np.ndarray | None = None

    def refresh(self, brokers: tuple[str, ...], reports: Sequence[LocalBrokerData]) -> bool:
        """Read ``reports`` (one per broker of ``brokers``, sorted); ``True`` when the bundles or
        their owners changed (:attr:`version` bumped), ``False`` when only stats did."""
        if brokers != self.brokers or len(reports) != len(self.blocks):
            self._rebuild(brokers, [self._block(r) for r in reports])
            return True
        blocks = self.blocks
        changed = [i for i, r in enumerate(reports) if not blocks[i].current(r)]
        if not changed:
            return False
        fresh = {i: self._block(reports[i], blocks[i]) for i in changed}
        if all(fresh[i].names == blocks[i].names for i in changed):
            for i, block in fresh.items():
                self.table_all[self.starts[i] : self.starts[i + 1]] = block.rows
                blocks[i] = block
            return False
        self._rebuild(brokers, [fresh.get(i, block) for i, block in enumerate(blocks)])
        return True

    def table(self) -> np.ndarray:
        """(m, 5) the model's rows (a copy: later refreshes overwrite the table in place)."""
        return self.table_all[self.keep] if self.keep is not None else self.table_all.copy()

    def merge_order(self) -> np.ndarray:
        """The bundles with a hash range, sorted by namespace then lower bound (ring order)."""
        if self._merge_order is None:
            ranged = np.flatnonzero(self.bounds[:, 0] >= 0)
            self._merge_order = ranged[np.lexsort((self.bounds[ranged, 0], self.ns_id[ranged]))]
        return self._merge_order

    def _block(self, local: LocalBrokerData, previous: ReportBlock | None = None) -> ReportBlock:
        names, rows = _rows(local)
        if previous is not None and names == previous.names:
            info = previous.info
        else:
            info = np.asarray([self._info(name) for name in names], dtype=np.int64).reshape(len(names), 3)
        return ReportBlock(local, local.last_update, names, rows, info)

    def _rebuild(self, brokers: tuple[str, ...], blocks: list[ReportBlock]) -> None:
        self.brokers, self.blocks = brokers, blocks
        sizes = np.asarray([len(b.names) for b in blocks], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        if blocks:
            self.table_all = np.concatenate([b.rows for b in blocks])
            info = np.concatenate([b.info for b in blocks])
        else:
            self.table_all, info = np.zeros((0, len(COLUMNS))), np.zeros((0, 3), dtype=np.int64)
        names = list(chain.from_iterable(b.names for b in blocks))
        owner = np.repeat(np.arange(len(brokers), dtype=np.int64), sizes)
        index = dict(zip(names, range(len(names)), strict=True))
        if len(index) < len(names):  # a stale report lists a moved bundle: the first broker keeps it
            first = dict(zip(reversed(names), range(len(names) - 1, -1, -1), strict=True))
            keep = np.sort(np.fromiter(first.values(), dtype=np.int64, count=len(first)))
            names = [names[k] for k in keep]
            owner, info = owner[keep], info[keep]
            index = dict(zip(names, range(len(names)), strict=True))
            self.keep = keep
        else:
            self.keep = None
        self.names, self.bundle_index, self.owner = names, index, owner
        self.ns_id, self.bounds = info[:, 0].copy(), info[:, 1:].copy()
        if len(self.namespaces) != len(self._namespace_ids):
            self.namespaces = [""] * len(self._namespace_ids)
            for name, i in self._namespace_ids.items():
                self.namespaces[i] = name
        if len(self._name_info) > 2 * len(names) + 1024:  # forget names long gone
            self._name_info = {name: self._name_info[name] for name in names if name in self._name_info}
        self.version += 1
        self._merge_order = None

    def _info(self, name: str) -> tuple[int, int, int]:
        """A bundle name's namespace id and hash range (``-1, -1`` if it is not one), remembered."""
        found = self._name_info.get(name)
        if found is None:
            namespace = name.rpartition("/")[0]
            ns = self._namespace_ids.setdefault(namespace, len(self._namespace_ids))
            bounds = range_bounds(name)
            found = (ns, *bounds) if bounds is not None else (ns, -1, -1)
            self._name_info[name] = found
        return found
