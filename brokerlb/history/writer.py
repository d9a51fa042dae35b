"""Write load history as JSON Lines day files.

Layout under a history root (one directory per record kind)::

    <root>/broker-samples/broker-samples-2026-11-21-leader-00000.jsonl
    <root>/topic-samples/topic-samples-2026-11-21-broker-1_8080-00000.jsonl
    <root>/bundle-boundaries/bundle-boundaries-2026-11-21-leader-00000.jsonl

* **One file per UTC day** of the records' own timestamps (not of the wall clock), per writer.
  A record of another day closes the current file and opens one for its day.
* **Atomic publication.** A file is written under a hidden name
  (``.<name>.inprogress``) and renamed to its final name when it is closed: by a day change,
  :meth:`HistoryWriter.roll`, ``max_records_per_file``, or :meth:`HistoryWriter.close`.
  Spark's file source ignores hidden files, so an incremental ingest never reads half a file
  and never misses the rest of one. Call :meth:`~HistoryWriter.roll` periodically (e.g.
  hourly) to make recent data visible before the day ends.
* **Restarts.** Part numbers continue after the highest existing part of the same writer and
  day, so nothing is overwritten. In-progress files a crashed writer left behind (same
  ``writer_id``) are published when a new writer opens the directory; a line cut off by the
  crash is kept (made a complete line) and the pipeline rejects it with a reason.
* ``writer_id`` names the writer (a broker id, ``"leader"``, ``"sim-42"``); concurrent
  writers into the same root must use different ids. Characters other than
  ``[A-Za-z0-9._-]`` become ``_`` in file names (Hadoop paths dislike ``:``).

>>> import tempfile
>>> from brokerlb.ring import NamespaceBundles
>>> from brokerlb.history import BundleBoundaries, HistoryWriter
>>> root = tempfile.mkdtemp()
>>> with HistoryWriter(root, "leader") as history:
...     history.write(BundleBoundaries.of(1_700_000_000_000, NamespaceBundles.create("public/default", 4)))
>>> sorted(p.name for p in (Path(root) / "bundle-boundaries").iterdir())
['bundle-boundaries-2023-11-14-leader-00000.jsonl']
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable
from datetime import date, timedelta
from pathlib import Path
from types import TracebackType
from typing import IO

from brokerlb.errors import InvalidInputError
from brokerlb.history.records import RECORD_KINDS, HistoryRecord

__all__ = ["DayFileWriter", "HistoryWriter", "utc_day", "safe_writer_id", "INPROGRESS_SUFFIX"]

INPROGRESS_SUFFIX = ".inprogress"
_MS_PER_DAY = 86_400_000
_EPOCH = date(1970, 1, 1)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def utc_day(timestamp_ms: int) -> str:
    """``YYYY-MM-DD`` of a millisecond timestamp, in UTC."""
    return (_EPOCH + timedelta(days=timestamp_ms // _MS_PER_DAY)).isoformat()


def safe_writer_id(writer_id: str) -> str:
    """``writer_id`` as it appears in file names: characters outside ``[A-Za-z0-9._-]`` become ``_``."""
    if not isinstance(writer_id, str) or not writer_id:
        raise InvalidInputError(f"Invalid history writer id {writer_id!r}: expected a non-empty string")
    return _UNSAFE.sub("_", writer_id)


class DayFileWriter:
    """JSON Lines files of one kind and one writer, one per UTC day, published atomically.

    Not thread-safe on its own; :class:`HistoryWriter` adds the lock.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        prefix: str,
        writer_id: str,
        *,
        max_records_per_file: int | None = None,
    ) -> None:
        if max_records_per_file is not None and max_records_per_file < 1:
            raise InvalidInputError(f"max_records_per_file must be at least 1, got {max_records_per_file}")
        self.directory = Path(directory)
        self.prefix = prefix
        self.writer_id = safe_writer_id(writer_id)
        self.max_records_per_file = max_records_per_file
        self._pattern = re.compile(
            rf"\.?{re.escape(prefix)}-(\d{{4}}-\d{{2}}-\d{{2}})-{re.escape(self.writer_id)}-(\d{{5}})\.jsonl"
            rf"(?:{re.escape(INPROGRESS_SUFFIX)})?"
        )
        self._file: IO[str] | None = None
        self._day: str | None = None
        self._final: Path | None = None
        self._records = 0
        self.directory.mkdir(parents=True, exist_ok=True)
        self.published: list[Path] = self._recover()

    # ------------------------------------------------------------------ writing
    def write_line(self, timestamp_ms: int, line: str) -> None:
        """Append one JSON line (no trailing newline) for a record of ``timestamp_ms``."""
        self.write_lines([(timestamp_ms, line)])

    def write_lines(self, lines: Iterable[tuple[int, str]]) -> None:
        """Append ``(timestamp_ms, line)`` pairs in order, flushed once at the end (a topic dump is
        one write to the operating system, not one per topic)."""
        for timestamp_ms, line in lines:
            day = utc_day(timestamp_ms)
            if self._file is not None and day != self._day:
                self.roll()
            if self._file is None:
                self._open(day)
            assert self._file is not None
            self._file.write(line)
            self._file.write("\n")
            self._records += 1
            if self.max_records_per_file is not None and self._records >= self.max_records_per_file:
                self.roll()
        if self._file is not None:
            self._file.flush()

    def roll(self) -> Path | None:
        """Publish the open file (if any) under its final name; the next record opens a new part."""
        if self._file is None:
            return None
        self._file.close()
        assert self._final is not None
        os.replace(self._inprogress(self._final), self._final)
        published, self._final = self._final, None
        self._file, self._day, self._records = None, None, 0
        self.published.append(published)
        return published

    def close(self) -> Path | None:
        return self.roll()

    # ------------------------------------------------------------------ files
    def _inprogress(self, final: Path) -> Path:
        return final.with_name(f".{final.name}{INPROGRESS_SUFFIX}")

    def _open(self, day: str) -> None:
        part = self._next_part(day)
        self._final = self.directory / f"{self.prefix}-{day}-{self.writer_id}-{part:05d}.jsonl"
        self._file = open(self._inprogress(self._final), "x", encoding="utf-8")  # noqa: SIM115
        self._day = day
        self._records = 0

    def _next_part(self, day: str) -> int:
        parts = [
            int(m.group(2))
            for name in os.listdir(self.directory)
            if (m := self._pattern.fullmatch(name)) and m.group(1) == day
        ]
        return max(parts, default=-1) + 1

    def _recover(self) -> list[Path]:
        """Publish in-progress files a crashed writer with this id left behind."""
        published = []
        for name in sorted(os.listdir(self.directory)):
            if not (
                name.startswith(".") and name.endswith(INPROGRESS_SUFFIX) and self._pattern.fullmatch(name)
            ):
                continue
            leftover = self.directory / name
            final = self.directory / name[1 : -len(INPROGRESS_SUFFIX)]
            if final.exists():
                continue
            if leftover.stat().st_size == 0:
                leftover.unlink()
                continue
            with open(leftover, "rb+") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    f.write(b"\n")
            os.replace(leftover, final)
            published.append(final)
        return published


class HistoryWriter:
    """Writes history records under ``root``, each kind into its own directory.

    ``write(record)`` accepts a :class:`~brokerlb.history.BrokerSample`,
    :class:`~brokerlb.history.TopicSample` or :class:`~brokerlb.history.BundleBoundaries`.
    Thread-safe. Use as a context manager or call :meth:`close` (which publishes the open
    files). See the module docstring for files, rotation and restarts.
    """

    def __init__(
        self, root: str | os.PathLike[str], writer_id: str, *, max_records_per_file: int | None = None
    ) -> None:
        self.root = Path(root)
        self.writer_id = writer_id
        safe_writer_id(writer_id)
        self.max_records_per_file = max_records_per_file
        self._writers: dict[str, DayFileWriter] = {}
        self._lock = threading.Lock()
        self._closed = False

    def write(self, record: HistoryRecord) -> None:
        """Append one record to the day file of its kind and its timestamp's UTC day."""
        self.write_all([record])

    def write_all(self, records: Iterable[HistoryRecord]) -> None:
        """Append records in order (each kind's lines flushed once)."""
        by_kind: dict[str, list[tuple[int, str]]] = {}
        for record in records:
            kind = getattr(record, "kind", None)
            if kind not in RECORD_KINDS:
                raise InvalidInputError(f"Not a history record: {record!r}")
            line = json.dumps(record.to_json(), separators=(",", ":"), allow_nan=False)
            by_kind.setdefault(kind, []).append((record.timestamp, line))
        with self._lock:
            if self._closed:
                raise InvalidInputError("HistoryWriter is closed")
            for kind, lines in by_kind.items():
                self._writer(kind).write_lines(lines)

    def roll(self) -> list[Path]:
        """Publish every open file now (e.g. hourly, so an ingest sees recent data)."""
        with self._lock:
            return [p for w in self._writers.values() if (p := w.roll()) is not None]

    def close(self) -> list[Path]:
        """Publish the open files; further writes raise."""
        with self._lock:
            self._closed = True
            return [p for w in self._writers.values() if (p := w.close()) is not None]

    def published_files(self) -> list[Path]:
        """Every file this writer published (including recovered leftovers), in order."""
        with self._lock:
            return [p for w in self._writers.values() for p in w.published]

    def _writer(self, kind: str) -> DayFileWriter:
        writer = self._writers.get(kind)
        if writer is None:
            writer = DayFileWriter(
                self.root / kind, kind, self.writer_id, max_records_per_file=self.max_records_per_file
            )
            self._writers[kind] = writer
        return writer

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
