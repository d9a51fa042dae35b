"""``memory:[name]`` -- the storage tier in this process's memory, for unit tests and the simulator.

**Not durable**: everything is gone when the process ends. Engines opened with the same name in
one process share one store (the brokers of an in-process standalone cluster), with the same
fencing rules as the durable engines (:mod:`brokerlb.storage.engine`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

from brokerlb.errors import LedgerFencedError
from brokerlb.mledger import CursorInfo, LedgerInfo
from brokerlb.storage.engine import AppendGroup, Fence, StorageEngine, StoredEntry, TopicClose, TopicRecord

__all__ = ["MemoryStorage"]


@dataclass
class _Topic:
    name: str
    namespace: str
    hash: int
    epoch: int
    ledgers: list[LedgerInfo] = field(default_factory=list)
    cursors: dict[str, CursorInfo] = field(default_factory=dict)
    #: opened by an owner and not closed as idle (the next fence opens it)
    active: bool = False


@dataclass
class _Ledger:
    topic: str
    #: entry id -> (publish time, messages, payload)
    entries: list[tuple[int, int, bytes]] = field(default_factory=list)


class _Tables:
    """One in-process store (shared by the engines opened with its name)."""

    def __init__(self) -> None:
        self.sequence = 0
        self.fences: list[tuple[str, int, int, int]] = []  # namespace, lo, hi, epoch
        self.topics: dict[str, _Topic] = {}
        self.ledgers: dict[int, _Ledger] = {}

    def next_id(self) -> int:
        self.sequence += 1
        return self.sequence

    def newest_fence(self, namespace: str, hash_: int) -> int:
        return max((e for ns, lo, hi, e in self.fences if ns == namespace and lo <= hash_ < hi), default=0)


class MemoryStorage(StorageEngine):
    """``memory:[name]`` (module docstring)."""

    durable = False
    _stores: ClassVar[dict[str, _Tables]] = {}

    def __init__(self, name: str = "default") -> None:
        self.name = name or "default"
        self.url = f"memory:{self.name}"
        self._t = self._stores.setdefault(self.name, _Tables())

    @classmethod
    def forget(cls, name: str) -> None:
        """Drop the store registered under ``name`` (for tests)."""
        cls._stores.pop(name, None)

    # ------------------------------------------------------------------ helpers
    def _topic(self, name: str, epoch: int) -> _Topic:
        topic = self._t.topics.get(name)
        if topic is None:
            raise LedgerFencedError(f"Managed ledger {name} does not exist (deleted?)")
        if topic.epoch != epoch:
            raise LedgerFencedError(
                f"Managed ledger {name} is fenced: epoch {topic.epoch} took it over (this writer holds {epoch})"
            )
        return topic

    @staticmethod
    def _settle(topic: _Topic, now_ms: int) -> None:
        if topic.ledgers and not topic.ledgers[-1].closed:
            topic.ledgers[-1] = replace(topic.ledgers[-1], closed=True, timestamp_ms=now_ms)

    def _new_ledger(self, topic: _Topic, now_ms: int) -> LedgerInfo:
        last = topic.ledgers[-1] if topic.ledgers else None
        ledger_id = self._t.next_id()
        info = LedgerInfo(
            ledger_id,
            0,
            0,
            now_ms,
            last.end if last else 0,
            last.base_offset + last.size if last else 0,
            False,
        )
        topic.ledgers.append(info)
        self._t.ledgers[ledger_id] = _Ledger(topic.name)
        return info

    # ------------------------------------------------------------------ fencing
    async def fence(self, namespace: str, lo: int, hi: int, owner: str, now_ms: int) -> Fence:
        t = self._t
        epoch = t.next_id()
        # fences entirely inside the new range are superseded by it
        t.fences = [f for f in t.fences if not (f[0] == namespace and lo <= f[1] and f[2] <= hi)]
        t.fences.append((namespace, lo, hi, epoch))
        fence = Fence(epoch)
        for topic in sorted(t.topics.values(), key=lambda topic: topic.name):
            if topic.namespace == namespace and lo <= topic.hash < hi:
                topic.epoch = epoch
                self._settle(topic, now_ms)
                if topic.active:
                    self._new_ledger(topic, now_ms)
                    fence.topics.append(
                        TopicRecord(topic.name, epoch, list(topic.ledgers), list(topic.cursors.values()))
                    )
        return fence

    async def open_topic(
        self, name: str, namespace: str, hash_: int, epoch: int, now_ms: int, *, create: bool = True
    ) -> TopicRecord | None:
        t = self._t
        newest = t.newest_fence(namespace, hash_)
        if newest != epoch:
            raise LedgerFencedError(
                f"Cannot open {name} with epoch {epoch}: the hash range was fenced with epoch {newest}"
            )
        topic = t.topics.get(name)
        created = False
        if topic is None:
            if not create:
                return None
            topic = t.topics[name] = _Topic(name, namespace, hash_, epoch)
            created = True
        elif topic.epoch > epoch:
            raise LedgerFencedError(f"Cannot open {name} with epoch {epoch}: it is at epoch {topic.epoch}")
        topic.epoch = epoch
        topic.active = True
        self._settle(topic, now_ms)
        self._new_ledger(topic, now_ms)
        return TopicRecord(name, epoch, list(topic.ledgers), list(topic.cursors.values()), created)

    # ------------------------------------------------------------------ entries
    async def append(self, groups: Sequence[AppendGroup]) -> list[bool]:
        out = []
        for group in groups:
            topic = self._t.topics.get(group.topic)
            last = topic.ledgers[-1] if topic is not None and topic.ledgers else None
            if (
                last is None
                or last.ledger_id != group.ledger_id
                or last.closed
                or last.entries != group.first_entry
            ):
                out.append(False)
                continue
            assert topic is not None
            self._t.ledgers[group.ledger_id].entries.extend(group.entries)
            topic.ledgers[-1] = replace(
                last, entries=last.entries + len(group.entries), size=last.size + group.size
            )
            out.append(True)
        return out

    async def rollover(self, name: str, epoch: int, closing: LedgerInfo, now_ms: int) -> LedgerInfo:
        topic = self._topic(name, epoch)
        last = topic.ledgers[-1] if topic.ledgers else None
        if last is None or last.ledger_id != closing.ledger_id or last.closed:
            raise LedgerFencedError(f"Ledger {closing.ledger_id} of {name} is no longer the open one")
        self._settle(topic, now_ms)
        return self._new_ledger(topic, now_ms)

    async def close_topics(self, closes: Sequence[TopicClose], now_ms: int) -> list[bool]:
        out = []
        for close in closes:
            topic = self._t.topics.get(close.name)
            if topic is None or topic.epoch != close.epoch:
                out.append(False)
                continue
            for cursor in close.cursors:
                topic.cursors[cursor.name] = cursor
            if (
                close.ledger_id is not None
                and topic.ledgers
                and topic.ledgers[-1].ledger_id == close.ledger_id
            ):
                self._settle(topic, now_ms)
            topic.active = close.active
            out.append(True)
        return out

    async def read(self, ledger_id: int, first_entry: int, last_entry: int) -> list[StoredEntry]:
        ledger = self._t.ledgers.get(ledger_id)
        if ledger is None:
            return []
        first = max(0, first_entry)
        return [
            StoredEntry(i, t, n, p)
            for i, (t, n, p) in enumerate(ledger.entries[first : last_entry + 1], start=first)
        ]

    async def find_by_publish_time(self, name: str, publish_time: int) -> tuple[int, int] | None:
        topic = self._t.topics.get(name)
        if topic is None:
            return None
        for info in topic.ledgers:
            entries = self._t.ledgers[info.ledger_id].entries[: info.entries]
            index = bisect.bisect_left([e[0] for e in entries], publish_time)
            if index < len(entries):
                return info.ledger_id, index
        return None

    # ------------------------------------------------------------------ cursors and trimming
    async def save_cursors(self, cursors: Sequence[tuple[str, int, CursorInfo]]) -> list[bool]:
        out = []
        for name, epoch, cursor in cursors:
            topic = self._t.topics.get(name)
            ok = topic is not None and topic.epoch == epoch
            if ok:
                assert topic is not None
                topic.cursors[cursor.name] = cursor
            out.append(ok)
        return out

    async def delete_cursor(self, name: str, epoch: int, cursor: str) -> bool:
        topic = self._t.topics.get(name)
        if topic is None or topic.epoch != epoch:
            return False
        topic.cursors.pop(cursor, None)
        return True

    async def delete_ledgers(self, name: str, epoch: int, ledger_ids: Sequence[int]) -> bool:
        topic = self._t.topics.get(name)
        if topic is None or topic.epoch != epoch:
            return False
        drop = {i for i in ledger_ids if i != (topic.ledgers[-1].ledger_id if topic.ledgers else None)}
        drop = {i for i in drop if any(info.ledger_id == i and info.closed for info in topic.ledgers)}
        topic.ledgers = [info for info in topic.ledgers if info.ledger_id not in drop]
        for ledger_id in drop:
            self._t.ledgers.pop(ledger_id, None)
        return True

    async def delete_topic(self, name: str) -> bool:
        topic = self._t.topics.pop(name, None)
        if topic is None:
            return False
        for info in topic.ledgers:
            self._t.ledgers.pop(info.ledger_id, None)
        return True

    async def topics(self, namespace: str) -> list[str]:
        return sorted(n for n, t in self._t.topics.items() if t.namespace == namespace)

    async def ledgers_of(self, name: str) -> list[LedgerInfo]:
        topic = self._t.topics.get(name)
        return [] if topic is None else list(topic.ledgers)
