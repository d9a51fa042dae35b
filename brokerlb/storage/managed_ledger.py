"""A persistent topic's managed ledger on a storage engine, and the broker's factory of them.

:class:`ManagedLedger` is the topic engine's log (:class:`~brokerlb.messaging.log.TopicLog`) on
the storage tier, applying the rules of :mod:`brokerlb.mledger` (Pulsar's ``ManagedLedgerImpl``):

* **appends** go to the current (open) ledger through the broker's
  :class:`~brokerlb.storage.committer.GroupCommitter`; an entry is given its position, counted and
  handed to the topic (:meth:`LogListener.added`: receipts, dispatch) only once its group is
  committed. A group refused by the engine means another owner fenced the ledger; a failed
  commit may or may not have been applied: either way the ledger takes no more appends and the
  topic is closed (its producers re-send after they reconnect; the next open settles what is
  really there) -- at least once, never lost;
* **rollover** after a commit when the current ledger is full (:meth:`LedgerList.should_rollover`),
  or by age on the factory's tick; appends made meanwhile wait for the new ledger;
* **reads** come from the broker's :class:`~brokerlb.storage.cache.EntryCache`, else from the
  engine (retried with back-off while it fails);
* **cursors** are persisted lazily: dirty ones every ``managedLedgerCursorPositionFlushSeconds``
  (one batch for the whole broker), a new subscription at once, and all of them when the topic
  closes -- a crash redelivers what was acknowledged since the last flush, never loses;
* **close**: pending appends are committed, then the cursors are persisted and the ledger closed
  in one write shared by every topic closing at the same moment (a bundle's topics on a move:
  one transaction, :class:`~brokerlb.storage.committer.Batcher`);
* **trimming**: after the cursors are flushed, whole ledgers every cursor is past and retention
  lets go are deleted.

:class:`ManagedLedgerFactory` is the broker's storage client: the engine, the committer, the
cache, the periodic tick, and the fences it takes. A fence opens the range's active topics in its
own transaction (:meth:`~brokerlb.storage.engine.StorageEngine.fence`); the factory keeps them
until the topics are opened here (no storage call then: a moved topic's clients find it open) and
closes, as idle, those nobody opened within ``unclaimed_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.errors import BrokerLBError, LedgerFencedError, ManagedLedgerError, StorageUnavailableError
from brokerlb.messaging.log import Entry, LogListener, ReadCallback
from brokerlb.mledger import CursorInfo, LedgerList, ManagedLedgerConfig, Position
from brokerlb.mledger.cursor import CursorState
from brokerlb.storage.cache import EntryCache
from brokerlb.storage.committer import MAX_GROUP_BYTES, MAX_GROUP_ENTRIES, Batcher, GroupCommitter
from brokerlb.storage.engine import AppendGroup, StorageEngine, TopicClose, TopicRecord

__all__ = ["ManagedLedger", "ManagedLedgerFactory", "CursorSource"]

logger = logging.getLogger(__name__)

#: ``(subscription type, cursor)`` of a durable subscription, or ``None`` when it is gone
CursorSource = Callable[[str], tuple[str, CursorState] | None]

_READ_RETRY_FIRST = 0.05
_READ_RETRY_MAX = 2.0


class ManagedLedger:
    """One topic's managed ledger (module docstring). States: ``open``, ``rolling`` (a new ledger is
    being created), ``failed`` (fenced, or storage failed), ``closed``."""

    def __init__(self, factory: ManagedLedgerFactory, record: TopicRecord) -> None:
        self.factory = factory
        self.name = record.name
        self.epoch = record.epoch
        self.ledgers = LedgerList(record.ledgers)
        self.stored_cursors: dict[str, CursorInfo] = {c.name: c for c in record.cursors}
        self.listener: LogListener | None = None
        #: the topic's durable cursors, read when they are persisted
        self.cursor_source: CursorSource = lambda name: None
        self.state = "open"
        self.error: BrokerLBError | None = None
        self._pending: list[tuple[bytes, int, int, object]] = []
        self._inflight: tuple[AppendGroup, list[object]] | None = None
        self._dirty: set[str] = set()
        self._slowest = 0
        self._idle = asyncio.Event()
        self._idle.set()
        #: Pulsar's ``entriesAddedCounter``: entries added since this broker opened the ledger
        self.entries_added = 0
        self.last_ledger_created_ms = self.ledgers.current.timestamp_ms if self.ledgers.current else 0

    @property
    def pending_adds(self) -> int:
        """Appends not committed yet (Pulsar's ``pendingAddEntriesCount``)."""
        return len(self._pending) + (len(self._inflight[0].entries) if self._inflight is not None else 0)

    # ------------------------------------------------------------------ TopicLog
    @property
    def first_seq(self) -> int:
        return self.ledgers.first_seq

    @property
    def next_seq(self) -> int:
        return self.ledgers.next_seq

    @property
    def written(self) -> int:
        return self.ledgers.written

    def entry(self, seq: int) -> Entry | None:
        return self.factory.cache.get(self, seq)

    def position_of(self, seq: int) -> tuple[int, int]:
        p = self.ledgers.position_of(seq)
        return p.ledger_id, p.entry_id

    def seq_of(self, ledger_id: int, entry_id: int) -> int | None:
        seq = self.ledgers.seq_of(Position(ledger_id, entry_id))
        return seq if seq is not None and 0 <= entry_id and seq < self.ledgers.next_seq else None

    def seq_at_or_after(self, ledger_id: int, entry_id: int) -> int:
        if ledger_id == -1:
            return self.ledgers.first_seq
        return self.ledgers.seq_at_or_after(Position(ledger_id, max(entry_id, 0)))

    def offset_of(self, seq: int) -> int:
        entry = self.factory.cache.get(self, seq)
        return entry.offset if entry is not None else self.ledgers.offset_of(seq)

    def append(self, section: bytes, num_messages: int, publish_time: int, token: object) -> None:
        if self.state in ("failed", "closed"):
            return  # the producer gets no receipt; it is being closed and re-sends elsewhere
        self._pending.append((section, num_messages, publish_time, token))
        self._idle.clear()
        if self.state == "open" and self._inflight is None:
            self.factory.committer.mark(self)

    def read(self, first: int, last: int, callback: ReadCallback) -> None:
        asyncio.ensure_future(self._read(first, last, callback))

    def trim(self, slowest: int) -> None:
        self._slowest = slowest
        self.factory.cache.drop_below(self, slowest)

    def cursor_changed(self, subscription: str) -> None:
        self._dirty.add(subscription)
        self.factory.dirty.add(self)

    def cursor_removed(self, subscription: str) -> None:
        self._dirty.discard(subscription)
        self.stored_cursors.pop(subscription, None)
        self.factory.spawn(self._delete_cursor(subscription))

    # ------------------------------------------------------------------ commits
    def take_group(self) -> AppendGroup | None:
        if self.state != "open" or self._inflight is not None or not self._pending:
            return None
        current = self.ledgers.current
        assert current is not None and not current.closed
        batch: list[tuple[bytes, int, int, object]] = []
        size = 0
        pending = self._pending
        index = 0
        # a group does not cross managedLedgerMaxEntriesPerLedger: the ledger rolls over right there
        room = self.factory.config.max_entries_per_ledger - current.entries
        limit = min(MAX_GROUP_ENTRIES, room) if room > 0 else MAX_GROUP_ENTRIES
        while index < len(pending) and len(batch) < limit and size < MAX_GROUP_BYTES:
            batch.append(pending[index])
            size += len(pending[index][0])
            index += 1
        del pending[:index]
        group = AppendGroup(
            self.name, current.ledger_id, current.entries, [(t, n, s) for s, n, t, _ in batch], size
        )
        self._inflight = (group, [token for *_, token in batch])
        return group

    def group_done(self, result: bool | BrokerLBError) -> None:
        assert self._inflight is not None
        group, tokens = self._inflight
        self._inflight = None
        if result is not True:
            error = (
                result
                if isinstance(result, BrokerLBError)
                else LedgerFencedError(f"Ledger {group.ledger_id} of {self.name} was fenced by another owner")
            )
            self._fail(error)
            return
        before = self.ledgers.current
        assert before is not None
        info = self.ledgers.added(len(group.entries), group.size)
        seq = before.end
        offset = before.base_offset + before.size
        entries = []
        for i, (publish_time, num_messages, section) in enumerate(group.entries):
            entry = Entry(
                seq + i, section, num_messages, publish_time, offset, info.ledger_id, group.first_entry + i
            )
            offset += entry.size
            entries.append(entry)
        self.entries_added += len(entries)
        self.factory.cache.put(self, entries)
        if self.listener is not None:
            self.listener.added(entries, tokens)
        if self.state == "open" and self.ledgers.should_rollover(
            self.factory.clock.now_ms(), self.factory.config
        ):
            self._start_rollover()
        elif self._pending and self.state == "open":
            self.factory.committer.mark(self)
        self._check_idle()

    def _fail(self, error: BrokerLBError) -> None:
        if self.state == "failed":
            return
        logger.warning("Managed ledger %s takes no more appends: %s", self.name, error)
        self.state = "failed"
        self.error = error
        self._pending.clear()
        self._check_idle()
        if self.listener is not None:
            self.listener.failed(error)

    def _check_idle(self) -> None:
        if not self._pending and self._inflight is None and self.state != "rolling":
            self._idle.set()

    # ------------------------------------------------------------------ rollover
    def maybe_rollover(self, now_ms: int) -> None:
        """The factory's tick: roll an idle full / old ledger over."""
        if (
            self.state == "open"
            and self._inflight is None
            and self.ledgers.should_rollover(now_ms, self.factory.config)
        ):
            self._start_rollover()

    def _start_rollover(self) -> None:
        self.state = "rolling"
        self._idle.clear()
        self.factory.spawn(self._rollover())

    async def _rollover(self) -> None:
        current = self.ledgers.current
        assert current is not None
        now = self.factory.clock.now_ms()
        try:
            new = await self.factory.engine.rollover(self.name, self.epoch, current, now)
        except BrokerLBError as exc:
            self.state = "open"  # so _fail runs its course
            self._fail(exc)
            return
        self.ledgers.update_current(replace(current, closed=True, timestamp_ms=now))
        self.ledgers.add(new)
        self.last_ledger_created_ms = new.timestamp_ms
        logger.debug(
            "Managed ledger %s rolled over: ledger %d closed, %d opened",
            self.name,
            current.ledger_id,
            new.ledger_id,
        )
        if self.state == "rolling":
            self.state = "open"
            if self._pending:
                self.factory.committer.mark(self)
        self._check_idle()

    # ------------------------------------------------------------------ reads
    async def _read(self, first: int, last: int, callback: ReadCallback) -> None:
        delay = _READ_RETRY_FIRST
        while True:
            try:
                entries = await self.read_entries(first, last)
            except BrokerLBError as exc:
                if self.state == "closed":
                    callback(exc)
                    return
                logger.warning(
                    "Reading %s entries %d..%d failed (%s); retrying in %.2f s",
                    self.name,
                    first,
                    last,
                    exc,
                    delay,
                )
                await self.factory.clock.sleep(delay)
                delay = min(delay * 2, _READ_RETRY_MAX)
                continue
            callback(entries)
            return

    async def read_entries(self, first: int, last: int) -> list[Entry]:
        """Entries ``first..last`` (sequence numbers), from the cache or the engine."""
        cache = self.factory.cache
        out: list[Entry] = []
        seq = max(first, self.ledgers.first_seq)
        last = min(last, self.ledgers.next_seq - 1)
        while seq <= last:
            cached = cache.get(self, seq)
            if cached is not None:
                out.append(cached)
                seq += 1
                continue
            position = self.ledgers.position_of(seq)
            info = self.ledgers.get(position.ledger_id)
            assert info is not None
            end = min(last, info.end - 1)
            stored = await self.factory.engine.read(position.ledger_id, position.entry_id, end - info.base)
            if not stored:
                seq = end + 1  # deleted meanwhile
                continue
            read: list[Entry] = []
            for item in stored:
                s = info.base + item.entry_id
                read.append(
                    Entry(
                        s,
                        item.payload,
                        item.num_messages,
                        item.publish_time,
                        self.ledgers.offset_of(s),
                        info.ledger_id,
                        item.entry_id,
                    )
                )
            cache.put(self, read)
            out += read
            seq = read[-1].seq + 1
        return out

    async def find_by_publish_time(self, publish_time: int) -> int:
        """The sequence number of the first entry published at or after ``publish_time``."""
        found = await self.factory.engine.find_by_publish_time(self.name, publish_time)
        if found is None:
            return self.next_seq
        return self.ledgers.seq_at_or_after(Position(*found))

    # ------------------------------------------------------------------ cursors
    def cursor_infos(self) -> list[CursorInfo]:
        """The dirty cursors in their persisted form (and they are clean from now on)."""
        out = []
        for name in sorted(self._dirty):
            found = self.cursor_source(name)
            if found is None:
                continue
            kind, state = found
            info = CursorInfo.of(
                name, kind, state, self.ledgers, max_ranges=self.factory.config.max_unacked_ranges_to_persist
            )
            out.append(info)
        self._dirty.clear()
        return out

    async def flush_cursors(self) -> None:
        """Persist this ledger's dirty cursors now (a new subscription, a close)."""
        infos = self.cursor_infos()
        if not infos:
            return
        results = await self.factory.engine.save_cursors([(self.name, self.epoch, i) for i in infos])
        for info, ok in zip(infos, results, strict=True):
            if ok:
                self.stored_cursors[info.name] = info
            else:
                self._fail(
                    LedgerFencedError(
                        f"Cursor {info.name} of {self.name}: the topic was fenced by another owner"
                    )
                )

    async def _delete_cursor(self, name: str) -> None:
        try:
            await self.factory.engine.delete_cursor(self.name, self.epoch, name)
        except BrokerLBError as exc:
            logger.warning("Could not delete cursor %s of %s: %s", name, self.name, exc)

    async def trim_now(self) -> None:
        """Delete the ledgers every cursor is past and retention lets go."""
        if self.state in ("failed", "closed"):
            return
        drop = self.ledgers.trimmable(self._slowest, self.factory.clock.now_ms(), self.factory.config)
        if not drop:
            return
        if await self.factory.engine.delete_ledgers(self.name, self.epoch, drop):
            self.ledgers.remove(drop)
        else:
            self._fail(LedgerFencedError(f"Trimming {self.name}: the topic was fenced by another owner"))

    # ------------------------------------------------------------------ close
    async def close(self, *, idle: bool = False) -> None:
        """Commit what is pending, then persist the cursors and close the ledger (one write with the
        other topics closing now); then forget it. ``idle``: its clients are gone, so the next
        owner's fence does not open it."""
        if self.state == "closed":
            return
        try:
            if self.state in ("open", "rolling") and not self._idle.is_set():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._idle.wait(), self.factory.close_timeout)
            if self.state != "failed":
                infos = self.cursor_infos()
                current = self.ledgers.current
                open_ledger = current.ledger_id if current is not None and not current.closed else None
                closed = TopicClose(self.name, self.epoch, open_ledger, tuple(infos), active=not idle)
                if await self.factory.closer.submit(closed):
                    self.stored_cursors.update((info.name, info) for info in infos)
                else:
                    logger.info("Managed ledger %s was fenced by another owner before its close", self.name)
        except BrokerLBError as exc:
            logger.warning("Closing managed ledger %s: %s", self.name, exc)
        finally:
            self.state = "closed"
            self.factory.forget(self)


class ManagedLedgerFactory:
    """The broker's storage client (module docstring)."""

    def __init__(
        self,
        engine: StorageEngine,
        config: ManagedLedgerConfig | None = None,
        *,
        cache_bytes: int = 256 * 1024 * 1024,
        cache_watermark: float = 0.9,
        cursor_flush_seconds: float = 60.0,
        clock: Clock = SYSTEM_CLOCK,
        owner: str = "",
        close_timeout: float = 30.0,
        unclaimed_seconds: float = 60.0,
    ) -> None:
        self.engine = engine
        self.config = config or ManagedLedgerConfig()
        self.clock = clock
        self.owner = owner
        self.cache = EntryCache(cache_bytes, cache_watermark)
        self.committer = GroupCommitter(engine)
        self.cursor_flush_seconds = max(0.05, float(cursor_flush_seconds))
        self.close_timeout = close_timeout
        self.unclaimed_seconds = unclaimed_seconds
        #: graceful closes of topics, many in one transaction
        self.closer: Batcher[TopicClose, bool] = Batcher(self._close_topics)
        self.ledgers: dict[str, ManagedLedger] = {}
        #: ledgers a fence opened, until a topic claims them: name -> (ledger, fenced range, since)
        self.unclaimed: dict[str, tuple[ManagedLedger, tuple[str, int, int], float]] = {}
        self.dirty: set[ManagedLedger] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._ticker: asyncio.Task[None] | None = None

    async def start(self) -> ManagedLedgerFactory:
        await self.engine.start()
        if not self.engine.durable:
            logger.warning("Storage %s keeps topics in this process only: not durable", self.engine.url)
        self._ticker = asyncio.ensure_future(self._tick())
        return self

    async def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._ticker
            self._ticker = None
        unclaimed = [ledger for ledger, _, _ in self.unclaimed.values()]
        self.unclaimed.clear()
        await asyncio.gather(*(ledger.close() for ledger in [*self.ledgers.values(), *unclaimed]))
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.engine.close()

    def abandon(self) -> None:
        """Stop like a crashed process: every ledger is closed here without writing anything more."""
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        self.unclaimed.clear()
        for ledger in list(self.ledgers.values()):
            ledger.state = "closed"
            ledger._pending.clear()
            ledger._idle.set()
            self.forget(ledger)

    def spawn(self, coro: object) -> None:
        task = asyncio.ensure_future(coro)  # type: ignore[call-overload]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ fences and opens
    async def fence(self, namespace: str, lo: int, hi: int) -> int:
        """A new epoch for ``[lo, hi)`` of ``namespace`` (this broker starts serving it); the range's
        active topics, opened by the same transaction, wait here for their topics (:meth:`open`)."""
        fence = await self.engine.fence(namespace, lo, hi, self.owner, self.clock.now_ms())
        since = self.clock.monotonic()
        for record in fence.topics:
            self.unclaimed[record.name] = (ManagedLedger(self, record), (namespace, lo, hi), since)
        return fence.epoch

    def release(self, namespace: str, lo: int, hi: int) -> None:
        """This broker stopped serving ``[lo, hi)`` of ``namespace``: forget the ledgers its fences
        opened there for topics that never came (the next owner's fence settles them)."""
        for name, (_, (ns, low, high), _) in list(self.unclaimed.items()):
            if ns == namespace and low < hi and lo < high:
                del self.unclaimed[name]

    async def open(
        self, name: str, namespace: str, hash_: int, epoch: int, *, create: bool = True
    ) -> ManagedLedger | None:
        """Open the managed ledger ``name`` with ``epoch`` -- the one a fence of this epoch opened,
        else from storage; ``None`` when it does not exist and not ``create``."""
        if name in self.ledgers:
            raise ManagedLedgerError(f"Managed ledger {name} is already open here")
        opened = self.unclaimed.pop(name, None)
        if opened is not None and opened[0].epoch == epoch:
            ledger = opened[0]
        else:
            record = await self.engine.open_topic(
                name, namespace, hash_, epoch, self.clock.now_ms(), create=create
            )
            if record is None:
                return None
            ledger = ManagedLedger(self, record)
        if name in self.ledgers:  # opened meanwhile (the caller did not wait for its first open)
            raise ManagedLedgerError(f"Managed ledger {name} is already open here")
        self.ledgers[name] = ledger
        return ledger

    async def _close_topics(self, closes: list[TopicClose]) -> Sequence[bool]:
        return await self.engine.close_topics(closes, self.clock.now_ms())

    async def _close_unclaimed(self) -> None:
        """Close, as idle, the ledgers a fence opened that no topic claimed in ``unclaimed_seconds``."""
        deadline = self.clock.monotonic() - self.unclaimed_seconds
        stale = [name for name, (_, _, since) in self.unclaimed.items() if since <= deadline]
        if stale:
            ledgers = [self.unclaimed.pop(name)[0] for name in stale]
            await asyncio.gather(*(ledger.close(idle=True) for ledger in ledgers))

    def forget(self, ledger: ManagedLedger) -> None:
        if self.ledgers.get(ledger.name) is ledger:
            del self.ledgers[ledger.name]
        self.dirty.discard(ledger)
        self.cache.drop(ledger)

    # ------------------------------------------------------------------ the tick
    async def flush_cursors(self) -> None:
        """Persist every dirty cursor of the broker in one batch, then trim."""
        dirty, self.dirty = self.dirty, set()
        batch: list[tuple[ManagedLedger, CursorInfo]] = []
        for ledger in dirty:
            if ledger.state in ("failed", "closed"):
                continue
            batch += [(ledger, info) for info in ledger.cursor_infos()]
        if batch:
            try:
                results = await self.engine.save_cursors([(ml.name, ml.epoch, info) for ml, info in batch])
            except StorageUnavailableError as exc:
                logger.warning(
                    "Persisting %d cursors failed (%s); retrying at the next flush", len(batch), exc
                )
                for ledger, info in batch:
                    ledger._dirty.add(info.name)
                    self.dirty.add(ledger)
                return
            for (ledger, info), ok in zip(batch, results, strict=True):
                if ok:
                    ledger.stored_cursors[info.name] = info
                else:
                    ledger._fail(
                        LedgerFencedError(f"Cursor {info.name} of {ledger.name}: fenced by another owner")
                    )
        for ledger in dirty:
            try:
                await ledger.trim_now()
            except BrokerLBError as exc:
                logger.warning("Trimming %s failed: %s", ledger.name, exc)

    async def _tick(self) -> None:
        waited = 0.0
        while True:
            await self.clock.sleep(1.0 if self.cursor_flush_seconds >= 1 else self.cursor_flush_seconds)
            waited += 1.0 if self.cursor_flush_seconds >= 1 else self.cursor_flush_seconds
            now = self.clock.now_ms()
            for ledger in list(self.ledgers.values()):
                ledger.maybe_rollover(now)
            if self.unclaimed:
                try:
                    await self._close_unclaimed()
                except Exception:
                    logger.exception("Closing unclaimed ledgers failed")
            if waited >= self.cursor_flush_seconds:
                waited = 0.0
                try:
                    await self.flush_cursors()
                except Exception:
                    logger.exception("Cursor flush failed")

    def open_ledgers(self) -> Sequence[ManagedLedger]:
        return list(self.ledgers.values())
