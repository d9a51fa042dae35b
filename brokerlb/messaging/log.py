"""What the topic engine stores its entries in: a *log* (the seam between the engine and storage).

The engine (:mod:`brokerlb.messaging.topic`) counts entries in dense **sequence numbers**; the
log maps them to Pulsar's ``(ledger id, entry id)``, keeps the entries and tells the engine when
appended entries are committed. Two logs:

* :class:`MemoryLog` (here, pure) -- one ledger in memory, committed at once; entries leave it
  one by one once every subscription is past them and retention lets them go. Used by
  non-persistent topics, unit tests and brokers without a storage tier;
* :class:`brokerlb.storage.managed_ledger.ManagedLedger` -- a managed ledger on a storage
  engine: appends are committed by the broker's group committer (``added`` comes later, after
  the commit), entries are read back from storage on a cache miss, ledgers roll over and are
  trimmed whole, as in Pulsar.
"""

from __future__ import annotations

import bisect
import collections
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from brokerlb.dispatch import Message, sticky_key_hash
from brokerlb.errors import BrokerLBError
from brokerlb.messaging.frames import read_metadata

__all__ = ["Entry", "LogListener", "MemoryLog", "ReadCallback", "Retention", "TopicLog"]


class Entry:
    """One stored publish: the payload section as the producer sent it, and what dispatch needs."""

    __slots__ = (
        "seq",
        "ledger_id",
        "entry_id",
        "section",
        "num_messages",
        "size",
        "publish_time",
        "offset",
        "_key_hash",
    )

    def __init__(
        self,
        seq: int,
        section: bytes,
        num_messages: int,
        publish_time: int,
        offset: int,
        ledger_id: int = 0,
        entry_id: int | None = None,
    ) -> None:
        #: the topic-wide sequence number (what the engine counts in)
        self.seq = seq
        self.ledger_id = ledger_id
        self.entry_id = seq if entry_id is None else entry_id
        self.section = section
        self.num_messages = num_messages
        self.size = len(section)
        self.publish_time = publish_time
        #: bytes written to the topic before this entry
        self.offset = offset
        self._key_hash: int | None = None

    @property
    def key_hash(self) -> int:
        """The sticky-key hash of the entry (ordering key, else partition key, else ``NONE_KEY``)."""
        if self._key_hash is None:
            try:
                meta = read_metadata(self.section)
                key: str | bytes | None = meta.partition_key
                ordering = meta.ordering_key
            except BrokerLBError:
                key, ordering = None, None
            self._key_hash = sticky_key_hash(Message(key=key, ordering_key=ordering).sticky_key)
        return self._key_hash


@dataclass(frozen=True, slots=True)
class Retention:
    """Keep acknowledged entries for ``time_ms`` and up to ``size_bytes`` (0 = none, -1 = infinite)."""

    time_ms: int = 0
    size_bytes: int = 0


#: ``callback(entries)`` or ``callback(error)`` when a read from storage ends
ReadCallback = Callable[[Sequence[Entry] | BaseException], None]


class LogListener(Protocol):
    """The topic engine, as its log calls it back."""

    def added(self, entries: Sequence[Entry], tokens: Sequence[object]) -> None:
        """``entries`` are committed (in order), ``tokens`` as given to :meth:`TopicLog.append`."""

    def failed(self, error: BrokerLBError) -> None:
        """The log can take no more appends (fenced by another owner, or storage failed); what was
        not committed is dropped -- its producers re-send after they reconnect."""


class TopicLog(Protocol):
    """The seam (module docstring)."""

    listener: LogListener | None

    @property
    def first_seq(self) -> int:
        """The oldest entry kept (``next_seq`` when none)."""

    @property
    def next_seq(self) -> int:
        """The sequence number after the last committed entry."""

    @property
    def written(self) -> int:
        """Bytes committed to the topic ever (the end offset)."""

    def entry(self, seq: int) -> Entry | None:
        """The entry if it is at hand (in memory or cached), else ``None`` (then :meth:`read` it)."""

    def read(self, first: int, last: int, callback: ReadCallback) -> None:
        """Read entries ``first..last`` and call ``callback`` with them (later, or at once)."""

    def append(self, section: bytes, num_messages: int, publish_time: int, token: object) -> None:
        """Append an entry; :meth:`LogListener.added` follows once it is committed."""

    def position_of(self, seq: int) -> tuple[int, int]:
        """``(ledger id, entry id)`` of ``seq``."""

    def seq_of(self, ledger_id: int, entry_id: int) -> int | None:
        """The sequence number of a committed entry's id (``None``: not an entry of this log)."""

    def seq_at_or_after(self, ledger_id: int, entry_id: int) -> int:
        """The first sequence number at or after a message id (clamped to the kept entries)."""

    def offset_of(self, seq: int) -> int:
        """Bytes written before ``seq`` (exact, or estimated inside a stored ledger)."""

    def trim(self, slowest: int) -> None:
        """Every subscription is at or past ``slowest``: drop what retention lets go."""

    def cursor_changed(self, subscription: str) -> None:
        """A durable subscription's cursor moved (persisted lazily)."""

    def cursor_removed(self, subscription: str) -> None:
        """A durable subscription was deleted."""


class MemoryLog:
    """One ledger in memory, committed at once (module docstring)."""

    def __init__(self, ledger_id: int, retention: Retention, now_ms: Callable[[], int]) -> None:
        self.ledger_id = ledger_id
        self.retention = retention
        self._now_ms = now_ms
        self.entries: collections.deque[Entry] = collections.deque()
        self._next = 0
        self._written = 0
        self.listener: LogListener | None = None

    @property
    def first_seq(self) -> int:
        return self.entries[0].seq if self.entries else self._next

    @property
    def next_seq(self) -> int:
        return self._next

    @property
    def written(self) -> int:
        return self._written

    def entry(self, seq: int) -> Entry | None:
        first = self.first_seq
        if first <= seq < self._next:
            return self.entries[seq - first]
        return None

    def read(self, first: int, last: int, callback: ReadCallback) -> None:
        callback([e for s in range(first, last + 1) if (e := self.entry(s)) is not None])

    def append(self, section: bytes, num_messages: int, publish_time: int, token: object) -> None:
        entry = Entry(self._next, section, num_messages, publish_time, self._written, self.ledger_id)
        self._next += 1
        self._written += entry.size
        self.entries.append(entry)
        if self.listener is not None:
            self.listener.added((entry,), (token,))

    def position_of(self, seq: int) -> tuple[int, int]:
        return self.ledger_id, seq

    def seq_of(self, ledger_id: int, entry_id: int) -> int | None:
        if ledger_id != self.ledger_id or not 0 <= entry_id < self._next:
            return None
        return entry_id

    def seq_at_or_after(self, ledger_id: int, entry_id: int) -> int:
        if ledger_id == -1 or ledger_id < self.ledger_id:
            return self.first_seq
        if ledger_id > self.ledger_id:
            return self._next
        return min(max(entry_id, self.first_seq), self._next)

    def offset_of(self, seq: int) -> int:
        entry = self.entry(seq)
        return (
            entry.offset
            if entry is not None
            else (self.entries[0].offset if self.entries and seq < self.first_seq else self._written)
        )

    def publish_time_seq(self, publish_time: int) -> int:
        """The first entry published at or after ``publish_time``."""
        times = [e.publish_time for e in self.entries]
        return self.first_seq + bisect.bisect_left(times, publish_time)

    def trim(self, slowest: int) -> None:
        entries = self.entries
        if not entries or entries[0].seq >= slowest:
            return
        keep_ms, keep_bytes = self.retention.time_ms, self.retention.size_bytes
        boundary = self.entry(slowest)
        below_end = boundary.offset if boundary is not None else self._written
        now_ms = self._now_ms()
        while entries and entries[0].seq < slowest:
            head = entries[0]
            expired = keep_ms >= 0 and now_ms - head.publish_time >= keep_ms
            oversize = keep_bytes >= 0 and below_end - head.offset > keep_bytes
            if not (expired or oversize):
                break
            entries.popleft()

    def cursor_changed(self, subscription: str) -> None:
        pass

    def cursor_removed(self, subscription: str) -> None:
        pass
