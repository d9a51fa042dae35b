"""The shutdown rule: what a broker writes after another broker left is held back until the cluster
is seen serving on.

When a cluster stops, its brokers leave one after another; the brokers still running see each
departure, take over the bundles of those gone for a moment, and report that. Written down, the
stop reads as "brokers left and their load moved" -- which never served any client. So every
writer holds back the records it produces after a departure (a broker's registration vanished)
for ``hold_ms``:

* if the writer is still running ``hold_ms`` after the latest departure, the cluster served on:
  the held-back records are released, with their own timestamps, and written;
* if the writer stops first (:meth:`DepartureHold.drop`), the departures were the cluster
  stopping: the held-back records are dropped, and the history ends with the cluster as it served
  before the first departure.

A departure during the hold extends it. Bundle layouts are never held back (they are facts of
the metadata store, true whatever happens next); only records of load (broker samples and topic
samples) are. Pure: time is passed in.

>>> hold = DepartureHold(60_000)
>>> hold.admit(["a"], now_ms=0)
['a']
>>> hold.departed(now_ms=1_000)
>>> hold.admit(["b"], now_ms=2_000), hold.holding
([], True)
>>> hold.release(now_ms=61_000)
['b']
>>> hold.departed(now_ms=70_000); hold.admit(["c"], now_ms=71_000); hold.drop()
[]
1
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from brokerlb.errors import InvalidInputError

__all__ = ["DepartureHold"]

R = TypeVar("R")


class DepartureHold(Generic[R]):
    """Records produced within ``hold_ms`` of a departure wait for the cluster to serve on (module docstring)."""

    def __init__(self, hold_ms: int) -> None:
        if hold_ms < 0:
            raise InvalidInputError(f"Invalid departure hold {hold_ms} ms: expected >= 0")
        self.hold_ms = hold_ms
        #: Held-back records are released at this time (``None``: not holding).
        self.until_ms: int | None = None
        self._held: list[R] = []
        #: Records dropped so far (a stop during a hold).
        self.dropped = 0

    @property
    def holding(self) -> bool:
        return self.until_ms is not None

    @property
    def held(self) -> int:
        """How many records are held back now."""
        return len(self._held)

    def departed(self, now_ms: int) -> None:
        """A broker left at ``now_ms``: hold back what follows until ``now_ms + hold_ms``."""
        if self.hold_ms == 0:
            return
        until = now_ms + self.hold_ms
        self.until_ms = until if self.until_ms is None else max(self.until_ms, until)

    def admit(self, records: Iterable[R], now_ms: int) -> list[R]:
        """The records to write now: those released by now, then ``records`` unless holding."""
        out = self.release(now_ms)
        if self.until_ms is None:
            out.extend(records)
        else:
            self._held.extend(records)
        return out

    def release(self, now_ms: int) -> list[R]:
        """The held-back records once the hold has passed (the cluster served on), else nothing."""
        if self.until_ms is None or now_ms < self.until_ms:
            return []
        out, self._held, self.until_ms = self._held, [], None
        return out

    def discard(self, unwanted: Callable[[R], bool]) -> int:
        """Forget the held-back records for which ``unwanted(record)`` is true; returns how many."""
        kept = [r for r in self._held if not unwanted(r)]
        count = len(self._held) - len(kept)
        self._held = kept
        return count

    def drop(self) -> int:
        """The writer stops during a hold: forget the held-back records; returns how many."""
        count = len(self._held)
        self._held, self.until_ms = [], None
        self.dropped += count
        return count
