"""The broker-wide group committer: every topic's appends, many entries per flush, one flush at a time.

Committing each topic on its own costs about a core at 5,000 entries/s on this project's
machines; one committer for all topics about 0.45 cores (docs/storage.md). So every managed
ledger of a broker hands its appends to one :class:`GroupCommitter`: a ledger with entries to
write *marks* itself; the committer takes one group from every marked ledger (all its pending
entries, up to :data:`MAX_GROUP_ENTRIES` / :data:`MAX_GROUP_BYTES`) and commits them in one
storage transaction. While a flush is under way, new appends gather for the next one -- the
batching comes from the storage's own latency, with no timer. A flush starts on the event
loop's next turn after the first mark, so the entries of one turn travel together.

:class:`Batcher` does the same for other writes made by many topics at once (the graceful close of
a bundle's topics: one transaction for all of them).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, Protocol, TypeVar

from brokerlb.errors import BrokerLBError, StorageUnavailableError
from brokerlb.storage.engine import AppendGroup, StorageEngine

__all__ = ["Batcher", "GroupCommitter", "Committable", "MAX_GROUP_ENTRIES", "MAX_GROUP_BYTES"]

T = TypeVar("T")
R = TypeVar("R")

logger = logging.getLogger(__name__)

#: The most entries (and bytes) one ledger puts in one flush.
MAX_GROUP_ENTRIES = 10_000
MAX_GROUP_BYTES = 8 * 1024 * 1024


class Committable(Protocol):
    """A managed ledger, as the committer sees it."""

    def take_group(self) -> AppendGroup | None:
        """Its pending entries as one group (``None``: nothing to write now)."""

    def group_done(self, result: bool | BrokerLBError) -> None:
        """The group was committed (``True``), refused by a fence (``False``), or failed."""


class GroupCommitter:
    """One per broker (module docstring)."""

    def __init__(self, engine: StorageEngine) -> None:
        self.engine = engine
        self._marked: dict[Committable, None] = {}
        self._running = False
        self._scheduled = False
        self._task: asyncio.Task[None] | None = None
        #: flushes, entries and groups committed, for stats and benchmarks
        self.flushes = 0
        self.entries = 0
        self.groups = 0
        self.flush_seconds = 0.0

    def mark(self, ledger: Committable) -> None:
        """``ledger`` has entries to write."""
        self._marked[ledger] = None
        if not self._running and not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._start)

    def _start(self) -> None:
        self._scheduled = False
        if self._running or not self._marked:
            return
        self._running = True
        self._task = asyncio.ensure_future(self._flush_all())

    async def _flush_all(self) -> None:
        try:
            while self._marked:
                ledgers = list(self._marked)
                self._marked.clear()
                taken = [(ledger, group) for ledger in ledgers if (group := ledger.take_group()) is not None]
                if taken:
                    await self._flush(taken)
        finally:
            self._running = False
            self._task = None
            if self._marked and not self._scheduled:
                self._scheduled = True
                asyncio.get_running_loop().call_soon(self._start)

    async def _flush(self, taken: Sequence[tuple[Committable, AppendGroup]]) -> None:
        started = time.perf_counter()
        results: Sequence[bool | BrokerLBError]
        try:
            results = await self.engine.append([group for _, group in taken])
        except BrokerLBError as exc:
            logger.warning("Storage commit of %d groups failed: %s", len(taken), exc)
            results = [exc] * len(taken)
        except Exception as exc:  # a bug or a driver error not mapped at the edge: fail the groups
            logger.exception("Storage commit of %d groups failed", len(taken))
            results = [StorageUnavailableError(f"{type(exc).__name__}: {exc}")] * len(taken)
        self.flush_seconds += time.perf_counter() - started
        self.flushes += 1
        self.groups += len(taken)
        for (ledger, group), result in zip(taken, results, strict=True):
            if result is True:
                self.entries += len(group.entries)
            try:
                ledger.group_done(result)
            except Exception:
                logger.exception("Completing a commit of %s failed", group.topic)

    async def drain(self) -> None:
        """Wait until nothing is marked or being flushed."""
        while self._running or self._scheduled or self._marked:
            if self._task is not None:
                await asyncio.shield(self._task)
            else:
                await asyncio.sleep(0)


class Batcher(Generic[T, R]):
    """Requests of many callers written in one call of ``write`` (one storage transaction): a batch
    starts on the event loop's next turn after the first request, and requests made while one is
    being written gather for the next. ``write`` answers one result per request, in order; when it
    raises, every request of the batch raises it."""

    def __init__(self, write: Callable[[list[T]], Awaitable[Sequence[R]]]) -> None:
        self._write = write
        self._queue: list[tuple[T, asyncio.Future[R]]] = []
        self._running = False
        #: batches written and requests in them, for stats and tests
        self.batches = 0
        self.requests = 0

    async def submit(self, request: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.append((request, future))
        if not self._running:
            self._running = True
            asyncio.get_running_loop().call_soon(self._start)
        return await future

    def _start(self) -> None:
        task = asyncio.ensure_future(self._drain())
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    async def _drain(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                self.batches += 1
                self.requests += len(batch)
                try:
                    results = await self._write([request for request, _ in batch])
                except Exception as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                            future.exception()  # retrieved: a caller that gave up does not log it
                    continue
                for (_, future), result in zip(batch, results, strict=True):
                    if not future.done():
                        future.set_result(result)
        finally:
            self._running = False
            if self._queue:  # cancelled with requests left: they are written by a new drain
                self._running = True
                asyncio.get_running_loop().call_soon(self._start)
