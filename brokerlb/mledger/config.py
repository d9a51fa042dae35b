"""``ManagedLedgerConfig``: the managed ledger's knobs, from Pulsar's broker.conf keys."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ManagedLedgerConfig", "MB"]

MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ManagedLedgerConfig:
    """Rollover, retention and cursor persistence (Pulsar's defaults)."""

    #: ``managedLedgerMaxEntriesPerLedger``
    max_entries_per_ledger: int = 50_000
    #: ``managedLedgerMaxSizePerLedgerMbytes`` in bytes
    max_size_per_ledger: int = 2048 * MB
    #: ``managedLedgerMinLedgerRolloverTimeMinutes`` in ms
    min_rollover_ms: int = 10 * 60_000
    #: ``managedLedgerMaxLedgerRolloverTimeMinutes`` in ms
    max_rollover_ms: int = 240 * 60_000
    #: retention of acknowledged data (``defaultRetentionTimeInMinutes`` in ms; 0 none, -1 infinite)
    retention_time_ms: int = 0
    #: ``defaultRetentionSizeInMB`` in bytes (0 none, -1 infinite)
    retention_size: int = 0
    #: ``managedLedgerMaxUnackedRangesToPersist``
    max_unacked_ranges_to_persist: int = 10_000

    @classmethod
    def from_config(cls, conf: Any) -> ManagedLedgerConfig:
        """From a :class:`~brokerlb.config.ServiceConfig` (or anything with Pulsar's key names)."""
        minutes, megabytes = conf.defaultRetentionTimeInMinutes, conf.defaultRetentionSizeInMB
        return cls(
            max_entries_per_ledger=int(conf.managedLedgerMaxEntriesPerLedger),
            max_size_per_ledger=int(conf.managedLedgerMaxSizePerLedgerMbytes) * MB,
            min_rollover_ms=int(conf.managedLedgerMinLedgerRolloverTimeMinutes * 60_000),
            max_rollover_ms=int(conf.managedLedgerMaxLedgerRolloverTimeMinutes * 60_000),
            retention_time_ms=minutes * 60_000 if minutes > 0 else minutes,
            retention_size=megabytes * MB if megabytes > 0 else megabytes,
            max_unacked_ranges_to_persist=int(conf.managedLedgerMaxUnackedRangesToPersist),
        )
