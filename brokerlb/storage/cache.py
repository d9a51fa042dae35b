"""The broker's entry cache: recently written and read entries of every managed ledger, in one budget.

Pulsar's ``managedLedgerCacheSizeMB``: entries just committed are put here so consumers that keep
up are served from memory, and entries read back from storage are put here so the other
subscriptions of the topic find them. When the cache is over its budget it evicts the oldest
entries first (Pulsar evicts by age too, ``managedLedgerCacheEvictionTimeThresholdMillis``),
down to ``managedLedgerCacheEvictionWatermark`` of the budget; entries every cursor of their
topic is past are dropped at once (:meth:`EntryCache.drop_below`).
"""

from __future__ import annotations

import collections
from collections.abc import Hashable, Iterable

from brokerlb.messaging.log import Entry

__all__ = ["EntryCache"]


class EntryCache:
    """Entries by ``(owner, seq)`` within ``max_bytes`` (0 disables the cache)."""

    def __init__(self, max_bytes: int, watermark: float = 0.9) -> None:
        self.max_bytes = max(0, int(max_bytes))
        self.watermark = min(1.0, max(0.0, watermark))
        self.size = 0
        self._by_owner: dict[Hashable, dict[int, Entry]] = {}
        self._order: collections.deque[tuple[Hashable, int]] = collections.deque()
        self.hits = 0
        self.misses = 0

    def put(self, owner: Hashable, entries: Iterable[Entry]) -> None:
        if not self.max_bytes:
            return
        table = self._by_owner.setdefault(owner, {})
        order = self._order
        for entry in entries:
            if entry.seq in table:
                continue
            table[entry.seq] = entry
            order.append((owner, entry.seq))
            self.size += entry.size
        if self.size > self.max_bytes:
            self._evict(int(self.max_bytes * self.watermark))

    def get(self, owner: Hashable, seq: int) -> Entry | None:
        table = self._by_owner.get(owner)
        entry = table.get(seq) if table is not None else None
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
        return entry

    def drop_below(self, owner: Hashable, seq: int) -> None:
        """Entries of ``owner`` before ``seq`` are no longer needed."""
        table = self._by_owner.get(owner)
        if not table:
            return
        for key in [k for k in table if k < seq]:
            self.size -= table.pop(key).size

    def drop(self, owner: Hashable) -> None:
        table = self._by_owner.pop(owner, None)
        if table:
            self.size -= sum(e.size for e in table.values())

    def _evict(self, target: int) -> None:
        order, tables = self._order, self._by_owner
        while self.size > target and order:
            owner, seq = order.popleft()
            table = tables.get(owner)
            if table is None:
                continue
            entry = table.pop(seq, None)
            if entry is not None:
                self.size -= entry.size
                if not table:
                    del tables[owner]
        if not order:
            return
        # forget order keys of entries already gone (dropped below / dropped owners)
        if len(order) > 4 * max(1, sum(len(t) for t in tables.values())):
            self._order = collections.deque((o, s) for o, s in order if s in tables.get(o, {}))

    def __len__(self) -> int:
        return sum(len(t) for t in self._by_owner.values())
