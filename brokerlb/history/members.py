"""The brokers the written history says are present: ``broker-samples/_members.json``.

The leader keeps this small file next to the broker samples it writes: the brokers whose latest
*written* broker sample is a report (not a removal), rewritten atomically whenever that set
changes::

    {"timestamp": 1700000000000, "brokers": ["broker-1:8080", "broker-2:8080"]}

A leader that takes over (after a crash, a restart of the cluster, a leader change) reads it to
find the brokers the history still counts but that are not registered any more, and writes their
removals (``docs/load-history.md``, "Departures, shutdowns and restarts"). Spark's file source and
``ingest`` ignore it (its name starts with ``_``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from brokerlb.errors import InvalidLoadDataError
from brokerlb.history.records import BROKER_SAMPLES

__all__ = ["MEMBERS_FILE", "read_members", "write_members"]

MEMBERS_FILE = "_members.json"


def _path(root: str | os.PathLike[str]) -> Path:
    return Path(root) / BROKER_SAMPLES / MEMBERS_FILE


def read_members(root: str | os.PathLike[str]) -> set[str] | None:
    """The present brokers of the written history under ``root``, or ``None`` if none was recorded."""
    path = _path(root)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise InvalidLoadDataError(f"{path}: not JSON: {exc}") from exc
    brokers = doc.get("brokers") if isinstance(doc, dict) else None
    if not isinstance(brokers, list) or not all(isinstance(b, str) and b for b in brokers):
        raise InvalidLoadDataError(f"{path}: expected {{'timestamp': ms, 'brokers': [broker ids]}}")
    return set(brokers)


def write_members(root: str | os.PathLike[str], timestamp_ms: int, brokers: Iterable[str]) -> None:
    """Replace the file atomically (written beside it, then renamed)."""
    path = _path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{MEMBERS_FILE}.{os.getpid()}.tmp")
    tmp.write_text(
        json.dumps({"timestamp": timestamp_ms, "brokers": sorted(brokers)}, separators=(",", ":")),
        encoding="utf-8",
    )
    os.replace(tmp, path)
