"""The storage engines' one seam: what a broker asks of the storage tier.

A storage engine keeps, for every persistent topic (its *managed ledger*, named as Pulsar names
it: ``tenant/namespace/persistent/encodedLocalName``): its ledgers (id, open or closed, entries,
bytes), the entries of each ledger, its durable cursors, and the **fences** -- one epoch per
bundle hash range a broker took. Pulsar keeps the ledger list and cursors in the metadata store
and the entries in BookKeeper; brokerlb keeps all of them in the engine so that the fence can be
checked in the same atomic step as each append (docs/storage.md).

Fencing (BookKeeper's recovery, keyed by hash range):

* :meth:`StorageEngine.fence` -- a broker starting to serve a bundle takes a new epoch (a
  number from the engine's sequence, above every earlier one) for the bundle's namespace and
  hash range; in the same transaction every open ledger of a topic in that range is closed at
  its last committed entry, every such topic's epoch becomes the new one, and every **active**
  topic of the range (opened by its former owner and not closed as idle: its clients are coming
  back) is opened for the new owner -- a new ledger, its ledger list and cursors -- so a move
  costs the destination one transaction whatever the number of topics, and their clients find
  them open;
* an append commits only to an *open* ledger whose committed count is what the writer expects
  (so a former owner's appends after the takeover store nothing, and it learns it was fenced);
* :meth:`StorageEngine.close_topics` -- the owner's graceful close of topics (a move, an idle
  topic, a shutdown): their cursors persisted and their open ledgers closed, all in one
  transaction;
* opening a topic, creating a ledger (rollover), writing cursors and deleting ledgers need the
  writer's epoch to be the topic's, and a topic is created only by the holder of the newest
  fence covering its hash -- so a former owner can neither create nor resurrect a topic there.

Ledger ids come from the engine's sequence, so they only grow, across owners and restarts.

Engines: :mod:`~brokerlb.storage.memory` (``memory:[name]``: one process, not durable),
:mod:`~brokerlb.storage.sqlite` (``sqlite:DIR``: the embedded local directory) and
:mod:`~brokerlb.storage.postgres` (``postgresql://...``); :func:`~brokerlb.storage.open_storage`
picks one by URL. ``tests/contract/test_storage_engines.py`` runs one contract against each.
"""

from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

from brokerlb.mledger import CursorInfo, LedgerInfo

__all__ = [
    "AppendGroup",
    "Fence",
    "StorageEngine",
    "TopicClose",
    "StoredEntry",
    "TopicRecord",
    "pack_entries",
    "unpack_entries",
]

_HEADER = struct.Struct(">qiI")  # publish time ms, messages, payload length


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """One entry as stored: its id in its ledger, publish time, messages in it, payload section."""

    entry_id: int
    publish_time: int
    num_messages: int
    payload: bytes


@dataclass(slots=True)
class AppendGroup:
    """Entries of one topic for one commit: ``entries`` go to ``ledger_id`` from ``first_entry`` on."""

    topic: str
    ledger_id: int
    first_entry: int
    #: ``(publish time ms, messages, payload)``
    entries: list[tuple[int, int, bytes]]
    size: int = 0

    @property
    def last_entry(self) -> int:
        return self.first_entry + len(self.entries) - 1


@dataclass
class TopicRecord:
    """A managed ledger as opened by its owner: its ledgers (the last one new and open) and cursors."""

    name: str
    epoch: int
    ledgers: list[LedgerInfo] = field(default_factory=list)
    cursors: list[CursorInfo] = field(default_factory=list)
    created: bool = False


@dataclass
class Fence:
    """A fence taken: its epoch, and the range's active topics opened for it (:meth:`StorageEngine.fence`)."""

    epoch: int
    topics: list[TopicRecord] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TopicClose:
    """A topic's graceful close by the holder of ``epoch``: ``cursors`` persisted, the open ledger
    ``ledger_id`` (``None``: none) closed at its committed end; ``active`` says whether its clients
    are expected back (a move, a shutdown: the next fence opens it) or not (an idle topic)."""

    name: str
    epoch: int
    ledger_id: int | None
    cursors: tuple[CursorInfo, ...] = ()
    active: bool = True


def pack_entries(entries: Sequence[tuple[int, int, bytes]]) -> bytes:
    """One row's payload: each entry as ``>qiI`` (publish time, messages, length) and its bytes."""
    header = _HEADER.pack
    return b"".join(header(t, n, len(p)) + p for t, n, p in entries)


def unpack_entries(first_entry: int, data: bytes) -> list[StoredEntry]:
    out = []
    view = memoryview(data)
    at, entry_id, size = 0, first_entry, len(data)
    unpack = _HEADER.unpack_from
    while at < size:
        t, n, length = unpack(view, at)
        at += _HEADER.size
        out.append(StoredEntry(entry_id, t, n, bytes(view[at : at + length])))
        at += length
        entry_id += 1
    return out


class StorageEngine(ABC):
    """A storage tier (module docstring). Every method may raise
    :class:`~brokerlb.errors.StorageUnavailableError`; fencing answers with
    :class:`~brokerlb.errors.LedgerFencedError` (or ``False`` per group / cursor in batches)."""

    #: the URL it was opened with
    url: str = ""
    #: whether an acknowledged append survives the process (``memory:`` does not)
    durable: bool = True

    async def start(self) -> None:  # noqa: B027 -- engines without a connection have nothing to do
        """Connect / create the schema."""

    async def close(self) -> None:  # noqa: B027
        """Release connections and threads."""

    @abstractmethod
    async def fence(self, namespace: str, lo: int, hi: int, owner: str, now_ms: int) -> Fence:
        """Take a new epoch for ``[lo, hi)`` of ``namespace`` and open the range's active topics for
        it, in one transaction (module docstring)."""

    @abstractmethod
    async def open_topic(
        self, name: str, namespace: str, hash_: int, epoch: int, now_ms: int, *, create: bool = True
    ) -> TopicRecord | None:
        """Open (creating it when ``create``) the managed ledger ``name`` for the holder of ``epoch``:
        any open ledger is closed at its last committed entry, a new ledger is opened and the topic
        is marked active.
        ``None`` when it does not exist and ``create`` is false. :class:`LedgerFencedError` when
        ``epoch`` is not the newest fence over ``hash_`` or is older than the topic's."""

    @abstractmethod
    async def append(self, groups: Sequence[AppendGroup]) -> list[bool]:
        """Commit every group in one transaction (at most one group per ledger: the committer takes
        one group per managed ledger per flush); per group, ``False`` when it was refused (its
        ledger closed by a fence, or not where the writer expects)."""

    @abstractmethod
    async def rollover(self, name: str, epoch: int, closing: LedgerInfo, now_ms: int) -> LedgerInfo:
        """Close the current ledger ``closing`` (at the entries it says) and open the next one."""

    @abstractmethod
    async def close_topics(self, closes: Sequence[TopicClose], now_ms: int) -> list[bool]:
        """Close topics gracefully (:class:`TopicClose`), all in one transaction; per topic ``False``
        when ``epoch`` is no longer the topic's (nothing is written for it then)."""

    @abstractmethod
    async def read(self, ledger_id: int, first_entry: int, last_entry: int) -> list[StoredEntry]:
        """Entries ``first_entry..last_entry`` of a ledger (fewer when some are not there)."""

    @abstractmethod
    async def find_by_publish_time(self, name: str, publish_time: int) -> tuple[int, int] | None:
        """``(ledger, entry)`` of the first entry published at or after ``publish_time`` (``None``:
        none is)."""

    @abstractmethod
    async def save_cursors(self, cursors: Sequence[tuple[str, int, CursorInfo]]) -> list[bool]:
        """Upsert ``(topic, epoch, cursor)`` in one transaction; ``False`` where the epoch is stale."""

    @abstractmethod
    async def delete_cursor(self, name: str, epoch: int, cursor: str) -> bool: ...

    @abstractmethod
    async def delete_ledgers(self, name: str, epoch: int, ledger_ids: Sequence[int]) -> bool:
        """Delete closed ledgers and their entries (trimming); ``False`` when the epoch is stale."""

    @abstractmethod
    async def delete_topic(self, name: str) -> bool:
        """Delete a managed ledger with its ledgers, entries and cursors; ``False`` if unknown."""

    @abstractmethod
    async def topics(self, namespace: str) -> list[str]:
        """Managed-ledger names of a namespace (``tenant/namespace``)."""

    @abstractmethod
    async def ledgers_of(self, name: str) -> list[LedgerInfo]:
        """The ledger list as stored (for stats of a topic not loaded here, and for tests)."""
