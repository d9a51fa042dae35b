"""The managed ledger's bookkeeping, as a pure core (no I/O): Pulsar's ``ManagedLedgerImpl`` and
``ManagedCursorImpl`` rules without BookKeeper.

A persistent topic is a *managed ledger*: an ordered list of ledgers, each a run of entries
addressed by ``(ledger id, entry id)`` -- the message ids clients see -- written by one writer,
open until it is closed with its last entry. Here:

* :mod:`~brokerlb.mledger.position` -- :class:`Position` (``ledger:entry``, Pulsar's spelling);
* :mod:`~brokerlb.mledger.ledgers` -- :class:`LedgerInfo` and :class:`LedgerList`: the ledger
  list, the mapping between positions and the topic's dense entry *sequence numbers* (what the
  topic engine counts in), rollover (``managedLedgerMaxEntriesPerLedger``,
  ``managedLedgerMaxSizePerLedgerMbytes``, ``managedLedgerMinLedgerRolloverTimeMinutes``,
  ``managedLedgerMaxLedgerRolloverTimeMinutes``) and which ledgers may be deleted (every cursor
  past them, and retention lets them go);
* :mod:`~brokerlb.mledger.cursor` -- a durable cursor's persisted form (mark-delete position,
  individually deleted ranges, batch-index acks, redelivery counts) and its conversion to and
  from the topic engine's sequence numbers;
* :mod:`~brokerlb.mledger.config` -- :class:`ManagedLedgerConfig` from Pulsar's broker.conf keys;
* :mod:`~brokerlb.mledger.stats` -- ``PersistentTopicInternalStats`` with Pulsar's JSON names.

The storage engines (:mod:`brokerlb.storage`) keep ledgers, entries and cursors; the topic
engine (:mod:`brokerlb.messaging.topic`) reads and writes through
:class:`brokerlb.storage.managed_ledger.ManagedLedger`, which applies the rules written here.
"""

from brokerlb.mledger.config import ManagedLedgerConfig
from brokerlb.mledger.cursor import CursorInfo, acked_ranges, ranges_to_set
from brokerlb.mledger.ledgers import LedgerInfo, LedgerList
from brokerlb.mledger.position import Position

__all__ = [
    "CursorInfo",
    "LedgerInfo",
    "LedgerList",
    "ManagedLedgerConfig",
    "Position",
    "acked_ranges",
    "ranges_to_set",
]
