"""The storage tier: where persistent topics live, so that brokers hold no data.

* :mod:`~brokerlb.storage.engine` -- the engines' one seam (:class:`StorageEngine`), fencing rules;
* :mod:`~brokerlb.storage.memory`, :mod:`~brokerlb.storage.sqlite`,
  :mod:`~brokerlb.storage.postgres` -- the engines;
* :mod:`~brokerlb.storage.committer` -- the broker-wide group committer (many entries, of all
  topics, per flush);
* :mod:`~brokerlb.storage.cache` -- the broker's entry cache (``managedLedgerCacheSizeMB``);
* :mod:`~brokerlb.storage.managed_ledger` -- a topic's managed ledger on an engine.

:func:`open_storage` picks the engine by URL (``brokerlbStorageUrl``): ``memory:[name]``,
``sqlite:DIR``, ``postgresql://user@host:port/db``.
"""

from __future__ import annotations

from brokerlb.errors import InvalidConfigError
from brokerlb.storage.engine import AppendGroup, Fence, StorageEngine, StoredEntry, TopicClose, TopicRecord

__all__ = [
    "AppendGroup",
    "Fence",
    "StorageEngine",
    "StoredEntry",
    "TopicClose",
    "TopicRecord",
    "open_storage",
    "bundle_hash_range",
]


def open_storage(url: str) -> StorageEngine:
    """An unstarted engine for ``url`` (module docstring); :class:`InvalidConfigError` naming the URL."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidConfigError(
            "brokerlbStorageUrl", url, "expected memory:[name], sqlite:DIRECTORY or postgresql://..."
        )
    url = url.strip()
    if url.startswith("memory:"):
        from brokerlb.storage.memory import MemoryStorage

        return MemoryStorage(url[len("memory:") :].lstrip("/") or "default")
    if url.startswith("sqlite:"):
        from brokerlb.storage.sqlite import SqliteStorage

        return SqliteStorage(url[len("sqlite:") :])
    if url.startswith(("postgresql://", "postgres://")):
        from brokerlb.storage.postgres import PostgresStorage

        return PostgresStorage(url)
    raise InvalidConfigError(
        "brokerlbStorageUrl",
        url,
        "unsupported storage URL (expected memory:[name], sqlite:DIRECTORY or postgresql://...)",
    )


def bundle_hash_range(lower: int, upper: int) -> tuple[int, int]:
    """A bundle's hashes as a half-open ``[lo, hi)``: the last bundle also holds ``0xffffffff``."""
    return lower, upper + 1 if upper == 0xFFFFFFFF else upper
