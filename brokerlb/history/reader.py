"""Read history files back in plain Python (tests, small replays, tools).

Only published files (``*.jsonl`` not starting with ``.`` or ``_``) are read, in file-name
order. A line that is not a valid record raises :class:`~brokerlb.errors.InvalidLoadDataError`
naming the file and the line number; blank lines are skipped. (The Spark ingest is the
tolerant reader: it sends such lines to its reject table.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from brokerlb.errors import InvalidInputError, InvalidLoadDataError
from brokerlb.history.records import RECORD_KINDS, HistoryRecord, record_from_json

__all__ = ["history_files", "read_history", "read_history_file"]


def history_files(root: str | os.PathLike[str], kind: str) -> list[Path]:
    """The published files of ``kind`` under ``root`` (``root/<kind>/*.jsonl``), sorted by name."""
    if kind not in RECORD_KINDS:
        raise InvalidInputError(f"Unknown history record kind {kind!r}; known: {', '.join(RECORD_KINDS)}")
    directory = Path(root) / kind
    if not directory.is_dir():
        return []
    return sorted(
        p
        for p in directory.iterdir()
        if p.suffix == ".jsonl" and not p.name.startswith((".", "_")) and p.is_file()
    )


def read_history_file(path: str | os.PathLike[str], kind: str) -> Iterator[HistoryRecord]:
    """The records of one file, in line order."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                yield record_from_json(kind, json.loads(line))
            except (ValueError, InvalidInputError) as exc:  # JSONDecodeError is a ValueError
                raise InvalidLoadDataError(f"{path}:{number}: {exc}") from exc


def read_history(root: str | os.PathLike[str], kind: str) -> list[HistoryRecord]:
    """All records of ``kind`` under ``root``, file by file."""
    return [record for path in history_files(root, kind) for record in read_history_file(path, kind)]
