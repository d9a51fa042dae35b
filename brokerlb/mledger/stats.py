"""``PersistentTopicInternalStats``: a managed ledger as ``pulsar-admin topics stats-internal`` shows it.

Pulsar's JSON field names (``ManagedLedgerInternalStats`` and its ``LedgerInfo`` / ``CursorStats``).
Differences, on purpose: the current (open) ledger's ``entries`` and ``size`` are its committed
counts (Pulsar shows 0 until it is closed; ``currentLedgerEntries`` says the same in both), and
cursors have no cursor ledger (``cursorLedger`` -1: brokerlb keeps them in the storage engine).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from brokerlb.mledger.cursor import CursorInfo
from brokerlb.mledger.ledgers import LedgerList

__all__ = ["CursorView", "internal_stats_json"]


@dataclass(frozen=True, slots=True)
class CursorView:
    """What internal stats show of a subscription's cursor."""

    info: CursorInfo
    #: the next entry to read for a first delivery (``ledger:entry``)
    read_position: str
    active: bool
    messages_consumed: int
    #: entries from the first unacknowledged one to the end
    entries_since_first_not_acked: int


def _time(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).isoformat() if ms else ""


def internal_stats_json(
    ledgers: LedgerList,
    cursors: Mapping[str, CursorView],
    *,
    entries_added: int,
    pending_adds: int,
    state: str,
    last_ledger_created_ms: int,
) -> dict[str, Any]:
    """Pulsar's ``PersistentTopicInternalStats`` (module docstring)."""
    current = ledgers.current
    last = ledgers.position_before(ledgers.next_seq) if current is not None else None
    return {
        "entriesAddedCounter": entries_added,
        "numberOfEntries": ledgers.number_of_entries,
        "totalSize": ledgers.total_size,
        "currentLedgerEntries": current.entries if current is not None else 0,
        "currentLedgerSize": current.size if current is not None else 0,
        "lastLedgerCreatedTimestamp": _time(last_ledger_created_ms),
        "waitingCursorsCount": 0,
        "pendingAddEntriesCount": pending_adds,
        "lastConfirmedEntry": str(last) if last is not None else "-1:-1",
        "state": state,
        "ledgers": [
            {
                "ledgerId": info.ledger_id,
                "entries": info.entries,
                "size": info.size,
                "offloaded": False,
                "underReplicated": False,
            }
            for info in ledgers
        ],
        "cursors": {
            name: {
                "markDeletePosition": str(view.info.mark_delete),
                "readPosition": view.read_position,
                "waitingReadOp": False,
                "pendingReadOps": 0,
                "messagesConsumedCounter": view.messages_consumed,
                "cursorLedger": -1,
                "cursorLedgerLastEntry": -1,
                "individuallyDeletedMessages": view.info.individually_deleted_text(),
                "lastLedgerSwitchTimestamp": "",
                "state": "Open",
                "active": view.active,
                "numberOfEntriesSinceFirstNotAckedMessage": view.entries_since_first_not_acked,
                "totalNonContiguousDeletedMessagesRange": len(view.info.individually_deleted),
                "subscriptionHavePendingRead": False,
                "subscriptionHavePendingReplayRead": False,
                "properties": dict(view.info.properties),
            }
            for name, view in sorted(cursors.items())
        },
        "schemaLedgers": [],
        "compactedLedger": {
            "ledgerId": -1,
            "entries": -1,
            "size": -1,
            "offloaded": False,
            "underReplicated": False,
        },
    }
