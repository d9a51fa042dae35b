"""A durable cursor's persisted form (Pulsar's ``ManagedCursorInfo``) and its conversion.

The topic engine keeps a subscription's cursor in sequence numbers: everything up to
``mark_delete`` is acknowledged, plus a set of entries acknowledged individually above it,
the batch indexes still unacknowledged of partly acknowledged batches, and the redelivery
counts. :class:`CursorInfo` is the same state in Pulsar's positions, as the storage engine
keeps it and ``internal-stats`` shows it:

* ``markDeletePosition`` -- ``ledger:entry`` of the last entry of the acknowledged prefix
  (``ledger:-1`` at the start of a ledger);
* ``individuallyDeletedMessages`` -- open-closed ranges ``(a..b]`` of positions acknowledged
  above it (at most ``managedLedgerMaxUnackedRangesToPersist`` ranges are persisted, the
  oldest first; the rest is redelivered after a crash, as in Pulsar);
* ``batchDeletedIndexes`` -- per position, the bit mask of the batch indexes *still
  unacknowledged* (Pulsar's ack set);
* redelivery counts per position (brokerlb keeps them with the cursor so a move or a restart
  does not reset them; Pulsar keeps them in the broker's memory).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from brokerlb.errors import InvalidInputError
from brokerlb.mledger.ledgers import LedgerList
from brokerlb.mledger.position import Position

__all__ = ["CursorInfo", "CursorState", "acked_ranges", "ranges_to_set"]


def acked_ranges(acked: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted closed ranges ``[lo, hi]`` covering ``acked`` exactly."""
    out: list[tuple[int, int]] = []
    for seq in sorted(set(acked)):
        if out and out[-1][1] + 1 == seq:
            out[-1] = (out[-1][0], seq)
        else:
            out.append((seq, seq))
    return out


def ranges_to_set(ranges: Iterable[tuple[int, int]]) -> set[int]:
    """The entries of closed ranges ``[lo, hi]``."""
    out: set[int] = set()
    for lo, hi in ranges:
        out.update(range(lo, hi + 1))
    return out


@dataclass(frozen=True, slots=True)
class CursorState:
    """A cursor in the topic engine's sequence numbers."""

    mark_delete: int
    acked: frozenset[int] = frozenset()
    #: seq -> bit mask of the batch indexes still unacknowledged
    partial: Mapping[int, int] = field(default_factory=dict)
    redeliveries: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CursorInfo:
    """A durable cursor as stored (module docstring)."""

    name: str
    subscription_type: str
    mark_delete: Position
    #: open-closed ranges ``(a, b]``
    individually_deleted: tuple[tuple[Position, Position], ...] = ()
    batch_deleted: Mapping[Position, int] = field(default_factory=dict)
    redeliveries: Mapping[Position, int] = field(default_factory=dict)
    properties: Mapping[str, int] = field(default_factory=dict)

    # ------------------------------------------------------------------ conversion
    @classmethod
    def of(
        cls,
        name: str,
        subscription_type: str,
        state: CursorState,
        ledgers: LedgerList,
        *,
        max_ranges: int = 10_000,
        properties: Mapping[str, int] | None = None,
    ) -> CursorInfo:
        """The persisted form of ``state`` (positions from ``ledgers``)."""
        ranges = acked_ranges(s for s in state.acked if s > state.mark_delete)
        if max_ranges >= 0:
            ranges = ranges[:max_ranges]
        return cls(
            name,
            subscription_type,
            ledgers.position_before(state.mark_delete + 1),
            tuple((ledgers.position_before(lo), ledgers.position_of(hi)) for lo, hi in ranges),
            {ledgers.position_of(s): m for s, m in state.partial.items() if s > state.mark_delete},
            {ledgers.position_of(s): c for s, c in state.redeliveries.items() if s > state.mark_delete},
            dict(properties or {}),
        )

    def state(self, ledgers: LedgerList) -> CursorState:
        """The cursor in sequence numbers; positions in ledgers deleted since are clamped to the
        first kept entry (everything before it was acknowledged: it could be deleted)."""
        first = ledgers.first_seq
        mark = _seq_after(ledgers, self.mark_delete) - 1
        mark = max(mark, first - 1)
        acked: set[int] = set()
        for lo, hi in self.individually_deleted:
            start = max(_seq_after(ledgers, lo), mark + 1)
            end = _seq_after(ledgers, hi)
            acked.update(range(start, end))
        partial: dict[int, int] = {}
        for pos, mask in self.batch_deleted.items():
            seq = ledgers.seq_of(pos)
            if seq is not None and seq > mark and mask:
                partial[seq] = mask
        redeliveries: dict[int, int] = {}
        for pos, count in self.redeliveries.items():
            seq = ledgers.seq_of(pos)
            if seq is not None and seq > mark and count > 0:
                redeliveries[seq] = count
        # the acknowledged prefix absorbs individually acknowledged entries right above it
        while mark + 1 in acked:
            mark += 1
            acked.discard(mark)
        return CursorState(mark, frozenset(acked), partial, redeliveries)

    # ------------------------------------------------------------------ storage form
    def to_json(self) -> bytes:
        return json.dumps(
            {
                "type": self.subscription_type,
                "markDeletePosition": str(self.mark_delete),
                "individuallyDeletedMessages": [[str(a), str(b)] for a, b in self.individually_deleted],
                "batchDeletedIndexes": {str(p): format(m, "x") for p, m in self.batch_deleted.items()},
                "redeliveryCounts": {str(p): c for p, c in self.redeliveries.items()},
                "properties": dict(self.properties),
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_json(cls, name: str, data: bytes | str) -> CursorInfo:
        """The stored form back; :class:`InvalidInputError` naming the cursor when it is malformed."""
        try:
            raw = json.loads(data)
            return cls(
                name,
                str(raw["type"]),
                Position.parse(raw["markDeletePosition"]),
                tuple(
                    (Position.parse(a), Position.parse(b))
                    for a, b in raw.get("individuallyDeletedMessages", [])
                ),
                {Position.parse(p): int(m, 16) for p, m in raw.get("batchDeletedIndexes", {}).items()},
                {Position.parse(p): int(c) for p, c in raw.get("redeliveryCounts", {}).items()},
                {str(k): int(v) for k, v in raw.get("properties", {}).items()},
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InvalidInputError(f"Stored cursor {name!r} is malformed: {exc}") from None

    def individually_deleted_text(self) -> str:
        """Pulsar's ``individuallyDeletedMessages`` text: ``[(3:5..3:7], (3:9..3:10]]``."""
        return "[" + ", ".join(f"({a}..{b}]" for a, b in self.individually_deleted) + "]"


def _seq_after(ledgers: LedgerList, position: Position) -> int:
    """The sequence number right after ``position`` (clamped into the kept entries)."""
    exact = ledgers.seq_of(position)
    if exact is not None:
        return max(ledgers.first_seq, min(exact + 1, ledgers.next_seq))
    return ledgers.seq_at_or_after(Position(position.ledger_id, position.entry_id + 1))
