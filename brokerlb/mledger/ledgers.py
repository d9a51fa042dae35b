"""The ledger list of a managed ledger: positions <-> sequence numbers, rollover, trimming.

Every entry of a topic has a dense **sequence number** (0, 1, 2, ... across all its ledgers,
never reused): the topic engine counts cursors, backlogs and permits in it, and the ledger
list maps it to Pulsar's ``(ledger id, entry id)`` and back. A ledger records ``base`` (the
sequence number of its first entry) and ``base_offset`` (the bytes written to the topic
before it), fixed when it is created -- after the ledger before it was closed -- so the
mapping survives trimming, restarts and moves.

Rules (Pulsar's ``ManagedLedgerImpl``):

* **rollover** (:meth:`LedgerList.should_rollover`, ``currentLedgerIsFull``): the current
  ledger is full when it holds ``managedLedgerMaxEntriesPerLedger`` entries or
  ``managedLedgerMaxSizePerLedgerMbytes``, or was created ``managedLedgerMaxLedgerRolloverTimeMinutes``
  ago (with at least one entry); it rolls over only once it is older than
  ``managedLedgerMinLedgerRolloverTimeMinutes``;
* **trimming** (:meth:`LedgerList.trimmable`, ``internalTrimLedgers``): from the oldest, a
  closed ledger all of whose entries every cursor has passed is deleted while retention lets
  it go -- its close is older than the retention time, or what is kept after it is still
  above the retention size (0 = keep nothing, -1 = keep for ever). The current ledger is never
  deleted. Data goes in whole ledgers, as in Pulsar.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from brokerlb.errors import InvalidInputError
from brokerlb.mledger.config import ManagedLedgerConfig
from brokerlb.mledger.position import Position

__all__ = ["LedgerInfo", "LedgerList"]


@dataclass(frozen=True, slots=True)
class LedgerInfo:
    """One ledger of a managed ledger (Pulsar's ``LedgerInfo`` plus ``base`` / ``base_offset``)."""

    ledger_id: int
    #: entries committed (a closed ledger: all of them)
    entries: int = 0
    #: bytes committed
    size: int = 0
    #: creation time (an open ledger), close time (a closed one), ms
    timestamp_ms: int = 0
    #: sequence number of its first entry
    base: int = 0
    #: bytes written to the topic before it
    base_offset: int = 0
    closed: bool = False

    @property
    def end(self) -> int:
        """Sequence number after its last entry."""
        return self.base + self.entries


class LedgerList:
    """A managed ledger's ledgers, oldest first; the last one is the current (open or just closed)."""

    __slots__ = ("_ledgers", "_bases", "_ids")

    def __init__(self, ledgers: Iterable[LedgerInfo] = ()) -> None:
        self._ledgers: list[LedgerInfo] = []
        self._bases: list[int] = []
        self._ids: dict[int, int] = {}
        for info in ledgers:
            self.add(info)

    # ------------------------------------------------------------------ the list
    def __len__(self) -> int:
        return len(self._ledgers)

    def __iter__(self) -> Iterator[LedgerInfo]:
        return iter(self._ledgers)

    @property
    def ledgers(self) -> Sequence[LedgerInfo]:
        return tuple(self._ledgers)

    @property
    def current(self) -> LedgerInfo | None:
        return self._ledgers[-1] if self._ledgers else None

    def get(self, ledger_id: int) -> LedgerInfo | None:
        index = self._ids.get(ledger_id)
        return None if index is None else self._ledgers[index]

    def add(self, info: LedgerInfo) -> None:
        """Append a new ledger: its id above every other, its ``base`` where the last one ends."""
        last = self.current
        if last is not None:
            if info.ledger_id <= last.ledger_id:
                raise InvalidInputError(
                    f"Ledger {info.ledger_id} added after ledger {last.ledger_id}: ids must grow"
                )
            if info.base != last.end or info.base_offset != last.base_offset + last.size:
                raise InvalidInputError(
                    f"Ledger {info.ledger_id} must start at entry {last.end} / byte "
                    f"{last.base_offset + last.size}, not {info.base} / {info.base_offset}"
                )
        self._ids[info.ledger_id] = len(self._ledgers)
        self._ledgers.append(info)
        self._bases.append(info.base)

    def update_current(self, info: LedgerInfo) -> None:
        """Replace the current ledger's record (entries added, closed)."""
        last = self.current
        if last is None or last.ledger_id != info.ledger_id:
            raise InvalidInputError(f"Ledger {info.ledger_id} is not the current ledger")
        self._ledgers[-1] = info

    def added(self, entries: int, size: int) -> LedgerInfo:
        """``entries`` entries of ``size`` bytes were committed to the current ledger."""
        last = self.current
        if last is None or last.closed:
            raise InvalidInputError("No open ledger to add entries to")
        info = replace(last, entries=last.entries + entries, size=last.size + size)
        self._ledgers[-1] = info
        return info

    def remove(self, ledger_ids: Iterable[int]) -> None:
        """Drop deleted ledgers (never the current one)."""
        drop = set(ledger_ids)
        current = self.current
        if current is not None:
            drop.discard(current.ledger_id)
        if not drop:
            return
        kept = [info for info in self._ledgers if info.ledger_id not in drop]
        self._ledgers, self._bases, self._ids = [], [], {}
        for info in kept:
            self._ids[info.ledger_id] = len(self._ledgers)
            self._ledgers.append(info)
            self._bases.append(info.base)

    # ------------------------------------------------------------------ sizes
    @property
    def first_seq(self) -> int:
        """The oldest entry kept (``next_seq`` when none is)."""
        for info in self._ledgers:
            if info.entries:
                return info.base
        return self.next_seq

    @property
    def next_seq(self) -> int:
        """The sequence number the next committed entry gets."""
        last = self.current
        return 0 if last is None else last.end

    @property
    def written(self) -> int:
        """Bytes ever written to the topic (the end offset)."""
        last = self.current
        return 0 if last is None else last.base_offset + last.size

    @property
    def number_of_entries(self) -> int:
        return sum(info.entries for info in self._ledgers)

    @property
    def total_size(self) -> int:
        return sum(info.size for info in self._ledgers)

    # ------------------------------------------------------------------ addressing
    def _index_of_seq(self, seq: int) -> int:
        """The index of the ledger holding ``seq`` (the last ledger whose base is at or below it)."""
        return bisect.bisect_right(self._bases, seq) - 1

    def position_of(self, seq: int) -> Position:
        """The position of entry ``seq`` (an entry not written yet: where it will be in the current
        ledger; before the first ledger: its entry -1)."""
        if not self._ledgers:
            return Position(-1, seq)
        index = self._index_of_seq(seq)
        if index < 0:
            return Position(self._ledgers[0].ledger_id, -1)
        info = self._ledgers[index]
        # an empty ledger shares its base with the next one: the later one holds the entry
        while index + 1 < len(self._ledgers) and self._ledgers[index + 1].base == info.base + info.entries:
            if seq < info.end:
                break
            index += 1
            info = self._ledgers[index]
        return Position(info.ledger_id, seq - info.base)

    def position_before(self, seq: int) -> Position:
        """Pulsar's mark-delete position when every entry below ``seq`` is acknowledged: the
        position of ``seq - 1``, or ``(ledger of seq):-1`` at the start of a ledger."""
        if seq - 1 >= self.first_seq and self._ledgers:
            return self.position_of(seq - 1)
        at = self.position_of(seq)
        return Position(at.ledger_id, at.entry_id - 1)

    def seq_of(self, position: Position) -> int | None:
        """The sequence number at ``position``; ``None`` when no kept ledger has it (an unknown
        ledger, or an entry beyond a closed ledger's end)."""
        index = self._ids.get(position.ledger_id)
        if index is None:
            return None
        info = self._ledgers[index]
        if position.entry_id < -1:
            return None
        if info.closed and position.entry_id >= info.entries:
            return None
        return info.base + position.entry_id

    def seq_at_or_after(self, position: Position) -> int:
        """The first sequence number at or after ``position`` (clamped into the kept range): a
        position before every kept ledger is the first entry, after them the end."""
        if not self._ledgers:
            return 0
        exact = self.seq_of(position)
        if exact is not None:
            return max(self.first_seq, min(exact, self.next_seq))
        if position.ledger_id < self._ledgers[0].ledger_id:
            return self.first_seq
        for info in self._ledgers:
            if info.ledger_id > position.ledger_id:
                return info.base
            if info.ledger_id == position.ledger_id:
                return info.end
        return self.next_seq

    def offset_of(self, seq: int) -> int:
        """Bytes written before entry ``seq``: exact at ledger edges, interpolated inside a ledger
        (Pulsar's estimated backlog size does the same)."""
        if not self._ledgers or seq >= self.next_seq:
            return self.written
        index = self._index_of_seq(seq)
        if index < 0:
            return self._ledgers[0].base_offset
        info = self._ledgers[index]
        if not info.entries:
            return info.base_offset
        inside = min(seq - info.base, info.entries)
        return info.base_offset + (info.size * inside) // info.entries

    # ------------------------------------------------------------------ rules
    def should_rollover(self, now_ms: int, config: ManagedLedgerConfig) -> bool:
        """Pulsar's ``currentLedgerIsFull`` for the current (open) ledger."""
        info = self.current
        if info is None or info.closed:
            return False
        quota = info.entries >= config.max_entries_per_ledger or info.size >= config.max_size_per_ledger
        age = now_ms - info.timestamp_ms
        too_old = info.entries > 0 and age >= config.max_rollover_ms
        if not (quota or too_old):
            return False
        return age > config.min_rollover_ms if config.min_rollover_ms > 0 else True

    def trimmable(self, slowest: int, now_ms: int, config: ManagedLedgerConfig) -> list[int]:
        """Ledgers that may be deleted now, oldest first: closed, every entry below ``slowest``
        (the oldest sequence number any cursor still needs), and let go by retention."""
        total = self.total_size
        deleted_size = 0
        out: list[int] = []
        current = self.current
        for info in self._ledgers:
            if info is current or not info.closed or info.end > slowest:
                break
            expired = config.retention_time_ms >= 0 and now_ms - info.timestamp_ms > config.retention_time_ms
            # what is kept once this ledger goes is still at least the retention size
            over_size = (
                config.retention_size >= 0 and total - deleted_size - info.size >= config.retention_size
            )
            if not (expired or over_size):
                break
            out.append(info.ledger_id)
            deleted_size += info.size
        return out
