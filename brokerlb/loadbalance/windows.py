"""Column storage for the leader's bundle windows (pure core; numpy).

The modular leader folds a sample into the short- and long-term window of every reported bundle
on every refresh (:mod:`brokerlb.loadbalance.fold`). To do that on arrays, the windows of the
histories it folds live in a :class:`WindowTable` -- one column per window, rows
``num_samples, max_samples, msg_throughput_in, msg_throughput_out, msg_rate_in, msg_rate_out`` --
and the ``BundleData`` objects hold :class:`ColumnWindow` views of their columns instead of plain
:class:`~brokerlb.model.TimeAverageMessageData`. A view *is* a ``TimeAverageMessageData``
(same fields, methods, equality and repr; ``copy()``, ``copy.deepcopy`` and pickling give a
plain one), so strategies, JSON
and persistence read it as before; reading a field costs a little more, which is why the
split check takes its numbers from the fold's summary instead.

Every write through a view bumps :attr:`WindowTable.version`, so a summary taken after a fold
knows when a history changed behind its back.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np

from brokerlb.model import TimeAverageMessageData

__all__ = ["ColumnWindow", "WindowTable"]

#: row of each field in the table
FIELDS = (
    "num_samples",
    "max_samples",
    "msg_throughput_in",
    "msg_throughput_out",
    "msg_rate_in",
    "msg_rate_out",
)
_VALUES = attrgetter(*FIELDS)


class WindowTable:
    """Columns of windows (module docstring); ``index`` maps ``id(view)`` -> its column."""

    def __init__(self, capacity: int = 1024) -> None:
        self.data = np.zeros((len(FIELDS), capacity))
        self.size = 0
        self.version = 0
        self.index: dict[int, int] = {}
        self._views: list[ColumnWindow] = []  # keeps every view alive, so its id stays unique

    def adopt_all(self, windows: Sequence[TimeAverageMessageData]) -> list[ColumnWindow]:
        """Views of new columns holding the values of ``windows`` (one each, in order)."""
        values = (
            np.fromiter(
                chain.from_iterable(map(_VALUES, windows)), dtype=np.float64, count=len(FIELDS) * len(windows)
            )
            .reshape(len(windows), len(FIELDS))
            .T
        )
        return self.new_views(values)

    def new_views(self, values: np.ndarray) -> list[ColumnWindow]:
        """Views of new columns holding ``values`` (``len(FIELDS) x k``, rows in ``FIELDS`` order)."""
        k = values.shape[1]
        start = self.size
        if start + k > self.data.shape[1]:
            grown = np.zeros((len(FIELDS), max(2 * self.data.shape[1], start + k)))
            grown[:, :start] = self.data[:, :start]
            self.data = grown
        self.data[:, start : start + k] = values
        self.size += k
        self.version += 1
        new, put, index = object.__new__, object.__setattr__, self.index
        views = []
        for column in range(start, start + k):
            view = new(ColumnWindow)
            put(view, "_table", self)
            put(view, "_column", column)
            index[id(view)] = column
            views.append(view)
        self._views.extend(views)
        return views


def _field(row: int, cast: type) -> property:
    def get(self: ColumnWindow) -> Any:
        return cast(self._table.data[row, self._column])

    def put(self: ColumnWindow, value: Any) -> None:
        table = self._table
        table.data[row, self._column] = value
        table.version += 1

    return property(get, put, doc=f"``{FIELDS[row]}`` of this window's column")


class ColumnWindow(TimeAverageMessageData):
    """A ``TimeAverageMessageData`` whose fields live in a :class:`WindowTable` column."""

    __slots__ = ("_table", "_column")
    _table: WindowTable
    _column: int

    num_samples = _field(0, int)
    max_samples = _field(1, int)
    msg_throughput_in = _field(2, float)
    msg_throughput_out = _field(3, float)
    msg_rate_in = _field(4, float)
    msg_rate_out = _field(5, float)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in FIELDS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TimeAverageMessageData):
            return NotImplemented
        return self._values() == tuple(getattr(other, name) for name in FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.copy())

    def __reduce__(self) -> Any:
        """Pickled and copied (``copy``, ``deepcopy``) as a plain ``TimeAverageMessageData``."""
        return (
            TimeAverageMessageData,
            (
                self.max_samples,
                self.num_samples,
                self.msg_throughput_in,
                self.msg_throughput_out,
                self.msg_rate_in,
                self.msg_rate_out,
            ),
        )
