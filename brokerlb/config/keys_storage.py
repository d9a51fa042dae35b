"""Keys of the storage tier: where persistent topics live and Pulsar's managed-ledger knobs.

Names, types and defaults are Pulsar's ``ServiceConfiguration`` (``managedLedger*``); the engine
itself is brokerlb's ``brokerlbStorageUrl`` (:mod:`brokerlb.config.keys_brokerlb`), which replaces
Pulsar's BookKeeper client settings (docs/storage.md).
"""

from __future__ import annotations

from brokerlb.config.kinds import DOUBLE, INT
from brokerlb.config.registry import KeyGroup, key

__all__ = ["StorageKeys"]


class StorageKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "Storage (managed ledgers)"
    INTRO = (
        "Where persistent topics live -- each one a managed ledger of ledgers of entries, with its "
        "durable cursors -- and how ledgers roll over, are cached and trimmed (docs/storage.md)."
    )

    managedLedgerMaxEntriesPerLedger: int = key(
        INT,
        50000,
        "Entries after which the current ledger rolls over (once it is older than the minimum rollover time).",
        ge=1,
    )
    managedLedgerMaxSizePerLedgerMbytes: int = key(
        INT,
        2048,
        "Size after which the current ledger rolls over (once it is older than the minimum rollover time).",
        ge=1,
    )
    managedLedgerMinLedgerRolloverTimeMinutes: int = key(
        INT, 10, "Minimum age of a ledger before it rolls over.", ge=0, unit="minutes"
    )
    managedLedgerMaxLedgerRolloverTimeMinutes: int = key(
        INT, 240, "Age after which a ledger with entries rolls over.", ge=0, unit="minutes"
    )
    managedLedgerCursorPositionFlushSeconds: int = key(
        INT,
        60,
        "At the latest, how often the broker persists the cursors that moved (one batch for all "
        "topics; managedLedgerDefaultMarkDeleteRateLimit makes it more often). A new subscription, a "
        "seek and a topic's close persist at once.",
        ge=1,
        unit="seconds",
    )
    managedLedgerDefaultMarkDeleteRateLimit: float = key(
        DOUBLE,
        1.0,
        "Persisted moves of a cursor per second (the broker persists every cursor that moved at this "
        "rate, all topics in one batch; 0 = only every managedLedgerCursorPositionFlushSeconds). A "
        "crash redelivers what was acknowledged since.",
        ge=0,
    )
    managedLedgerCacheSizeMB: int = key(
        INT,
        256,
        "Memory for the entries just written or read, shared by every topic of the broker "
        "(0 = no cache: every read goes to storage).",
        ge=0,
        deviation="Pulsar's default is a fifth of the JVM's direct memory (at least 64 MB), and the key "
        "is dynamic there; here it is read once at start.",
    )
    managedLedgerCacheEvictionWatermark: float = key(
        DOUBLE,
        0.9,
        "When the cache is full, evict the oldest entries down to this fraction of it.",
        ge=0,
        le=1,
        deviation="Dynamic in Pulsar; read once at start here.",
    )
    managedLedgerMaxUnackedRangesToPersist: int = key(
        INT,
        10000,
        "Ranges of individually acknowledged messages persisted per cursor; beyond them a crash "
        "redelivers the rest.",
        ge=0,
    )
