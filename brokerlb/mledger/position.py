"""``Position``: an entry's address in a managed ledger, ``ledger:entry`` as Pulsar prints it."""

from __future__ import annotations

from dataclasses import dataclass

from brokerlb.errors import InvalidInputError

__all__ = ["Position"]


@dataclass(frozen=True, order=True, slots=True)
class Position:
    """``(ledger_id, entry_id)``; ordered by ledger, then entry. ``entry_id`` -1 is "before the
    ledger's first entry" (a mark-delete position at the start of a ledger)."""

    ledger_id: int
    entry_id: int

    def __str__(self) -> str:
        return f"{self.ledger_id}:{self.entry_id}"

    @classmethod
    def parse(cls, text: str) -> Position:
        """``"12:34"`` -> ``Position(12, 34)``; :class:`InvalidInputError` naming the text otherwise."""
        ledger, sep, entry = str(text).partition(":")
        try:
            if not sep:
                raise ValueError
            return cls(int(ledger), int(entry))
        except ValueError:
            raise InvalidInputError(f"Invalid position {text!r}: expected ledgerId:entryId") from None
