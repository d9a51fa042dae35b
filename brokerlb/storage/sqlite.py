"""``sqlite:DIR`` -- the embedded storage tier: a local directory holding one SQLite database.

The default of ``brokerlb standalone`` and the demo. Ledgers, entries, cursors and fences live in
``DIR/ledgers.sqlite`` (the standard library's ``sqlite3``) in WAL mode with
``synchronous=FULL``: a commit returns once the WAL is synced, so an acknowledged entry survives
a crash of the process (and of the machine, as far as its disk keeps its promises). Entries are
stored one row per topic per group commit (``managed ledger``, ``first entry``, their packed
payloads), which is 2-3 times cheaper than a row per entry.

Threads: SQLite's calls block, so the engine runs them off the event loop -- one writer thread
(all writes, one transaction at a time), one reader thread (WAL readers never wait for the
writer), and a checkpointer that copies the WAL back into the database every second
(``PRAGMA wal_checkpoint(PASSIVE)``): automatic checkpoints are off, so a checkpoint never
runs inside a commit (they stalled commits by 67-95 ms at saturation when they did).

Several broker processes on one machine may share the directory: SQLite's file locks make
their writes take turns (``busy_timeout`` 10 s) and the fences work across them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from brokerlb.errors import InvalidConfigError, LedgerFencedError, StorageUnavailableError
from brokerlb.mledger import CursorInfo, LedgerInfo
from brokerlb.storage.engine import (
    AppendGroup,
    Fence,
    StorageEngine,
    StoredEntry,
    TopicClose,
    TopicRecord,
    pack_entries,
    unpack_entries,
)

__all__ = ["SqliteStorage", "SCHEMA"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds between two background checkpoints of the WAL.
CHECKPOINT_PERIOD = 1.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS ml_sequence (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO ml_sequence VALUES ('id', 0);
CREATE TABLE IF NOT EXISTS ml_fences (
    namespace TEXT NOT NULL, lo INTEGER NOT NULL, hi INTEGER NOT NULL, epoch INTEGER NOT NULL,
    owner TEXT NOT NULL, at_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS ml_fences_ns ON ml_fences (namespace, lo);
CREATE TABLE IF NOT EXISTS ml_topics (
    name TEXT PRIMARY KEY, namespace TEXT NOT NULL, hash INTEGER NOT NULL, epoch INTEGER NOT NULL,
    created_ms INTEGER NOT NULL, active INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS ml_topics_range ON ml_topics (namespace, hash);
CREATE TABLE IF NOT EXISTS ml_ledgers (
    ledger_id INTEGER PRIMARY KEY, topic TEXT NOT NULL, entries INTEGER NOT NULL, size INTEGER NOT NULL,
    ts INTEGER NOT NULL, base INTEGER NOT NULL, base_offset INTEGER NOT NULL, closed INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS ml_ledgers_topic ON ml_ledgers (topic, ledger_id);
CREATE TABLE IF NOT EXISTS ml_entries (
    ledger_id INTEGER NOT NULL, first_entry INTEGER NOT NULL, last_entry INTEGER NOT NULL,
    first_publish INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (ledger_id, first_entry)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ml_cursors (
    topic TEXT NOT NULL, name TEXT NOT NULL, info BLOB NOT NULL, PRIMARY KEY (topic, name)) WITHOUT ROWID;
"""

_LEDGER_COLUMNS = "ledger_id, entries, size, ts, base, base_offset, closed"


def _create_schema(conn: sqlite3.Connection) -> None:
    conn.executescript(SCHEMA)
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(ml_topics)")}
    if "active" not in columns:  # a directory written before topics were marked active
        conn.execute("ALTER TABLE ml_topics ADD COLUMN active INTEGER NOT NULL DEFAULT 0")


def _ledger(row: Sequence[Any]) -> LedgerInfo:
    return LedgerInfo(
        int(row[0]), int(row[1]), int(row[2]), int(row[3]), int(row[4]), int(row[5]), bool(row[6])
    )


class _Worker:
    """One thread with its own connection; calls run there one at a time."""

    def __init__(self, path: str, name: str, setup: Callable[[sqlite3.Connection], None]) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=name)
        self._local = threading.local()
        self._path = path
        self._setup = setup

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False, timeout=10.0)
            conn.execute("PRAGMA busy_timeout = 10000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            self._setup(conn)
            self._local.conn = conn
        return conn

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, lambda: fn(self._conn()))
        except sqlite3.Error as exc:
            raise StorageUnavailableError(f"SQLite storage {self._path}: {exc}") from exc
        except RuntimeError as exc:  # the executor was shut down: the engine is closing
            raise StorageUnavailableError(f"SQLite storage {self._path} is closed") from exc

    def close(self) -> None:
        def shut() -> None:
            conn = getattr(self._local, "conn", None)
            if conn is not None:
                conn.close()
                self._local.conn = None

        try:
            self._executor.submit(shut).result(timeout=10)
        except Exception:  # the thread may be gone already
            pass
        self._executor.shutdown(wait=True)


def _transaction(conn: sqlite3.Connection, body: Callable[[sqlite3.Connection], T]) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = body(conn)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


class SqliteStorage(StorageEngine):
    """``sqlite:DIR`` (module docstring)."""

    durable = True

    def __init__(self, directory: str) -> None:
        if not directory:
            raise InvalidConfigError("brokerlbStorageUrl", "sqlite:", "expected sqlite:DIRECTORY")
        self.directory = os.path.abspath(directory)
        self.path = os.path.join(self.directory, "ledgers.sqlite")
        self.url = f"sqlite:{self.directory}"
        self._writer: _Worker | None = None
        self._reader: _Worker | None = None
        self._checkpointer: _Worker | None = None
        self._checkpoints: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._writer is not None:
            return
        try:
            os.makedirs(self.directory, exist_ok=True)
        except OSError as exc:
            raise StorageUnavailableError(
                f"Cannot create the storage directory {self.directory}: {exc}"
            ) from exc
        self._writer = _Worker(self.path, "sqlite-writer", lambda conn: None)
        await self._writer.run(_create_schema)
        self._reader = _Worker(self.path, "sqlite-reader", lambda conn: None)
        self._checkpointer = _Worker(self.path, "sqlite-checkpoint", lambda conn: None)
        self._checkpoints = asyncio.ensure_future(self._checkpoint_loop())

    async def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.cancel()
            try:
                await self._checkpoints
            except (asyncio.CancelledError, Exception):
                pass
            self._checkpoints = None
        for worker in (self._writer, self._reader, self._checkpointer):
            if worker is not None:
                await asyncio.get_running_loop().run_in_executor(None, worker.close)
        self._writer = self._reader = self._checkpointer = None

    async def _checkpoint_loop(self) -> None:
        assert self._checkpointer is not None
        while True:
            await asyncio.sleep(CHECKPOINT_PERIOD)
            try:
                await self._checkpointer.run(
                    lambda conn: conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                )
            except StorageUnavailableError as exc:
                logger.debug("WAL checkpoint failed: %s", exc)

    async def _write(self, body: Callable[[sqlite3.Connection], T]) -> T:
        if self._writer is None:
            raise StorageUnavailableError(f"SQLite storage {self.path} is not started")
        return await self._writer.run(lambda conn: _transaction(conn, body))

    async def _read(self, body: Callable[[sqlite3.Connection], T]) -> T:
        if self._reader is None:
            raise StorageUnavailableError(f"SQLite storage {self.path} is not started")
        return await self._reader.run(body)

    # ------------------------------------------------------------------ helpers (writer thread)
    @staticmethod
    def _next_id(conn: sqlite3.Connection) -> int:
        return int(
            conn.execute(
                "UPDATE ml_sequence SET value = value + 1 WHERE name = 'id' RETURNING value"
            ).fetchone()[0]
        )

    @staticmethod
    def _check_epoch(conn: sqlite3.Connection, name: str, epoch: int) -> None:
        row = conn.execute("SELECT epoch FROM ml_topics WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise LedgerFencedError(f"Managed ledger {name} does not exist (deleted?)")
        if int(row[0]) != epoch:
            raise LedgerFencedError(
                f"Managed ledger {name} is fenced: epoch {row[0]} took it over (this writer holds {epoch})"
            )

    def _new_ledger(self, conn: sqlite3.Connection, name: str, now_ms: int) -> LedgerInfo:
        last = conn.execute(
            f"SELECT {_LEDGER_COLUMNS} FROM ml_ledgers WHERE topic = ? ORDER BY ledger_id DESC LIMIT 1",
            (name,),
        ).fetchone()
        base, offset = (0, 0) if last is None else (int(last[4]) + int(last[1]), int(last[5]) + int(last[2]))
        info = LedgerInfo(self._next_id(conn), 0, 0, now_ms, base, offset, False)
        conn.execute(
            "INSERT INTO ml_ledgers VALUES (?, ?, 0, 0, ?, ?, ?, 0)",
            (info.ledger_id, name, now_ms, base, offset),
        )
        return info

    # ------------------------------------------------------------------ fencing
    async def fence(self, namespace: str, lo: int, hi: int, owner: str, now_ms: int) -> Fence:
        def body(conn: sqlite3.Connection) -> Fence:
            epoch = self._next_id(conn)
            in_range = (namespace, lo, hi)
            conn.execute("DELETE FROM ml_fences WHERE namespace = ? AND lo >= ? AND hi <= ?", in_range)
            conn.execute(
                "INSERT INTO ml_fences VALUES (?, ?, ?, ?, ?, ?)", (namespace, lo, hi, epoch, owner, now_ms)
            )
            conn.execute(
                "UPDATE ml_topics SET epoch = ? WHERE namespace = ? AND hash >= ? AND hash < ?",
                (epoch, *in_range),
            )
            conn.execute(
                "UPDATE ml_ledgers SET closed = 1, ts = ? WHERE closed = 0 AND topic IN "
                "(SELECT name FROM ml_topics WHERE namespace = ? AND hash >= ? AND hash < ?)",
                (now_ms, *in_range),
            )
            # the active topics of the range, opened for the new owner: a new ledger each
            active = (
                "SELECT name FROM ml_topics WHERE namespace = ? AND hash >= ? AND hash < ? AND active = 1"
            )
            names = [str(r[0]) for r in conn.execute(active + " ORDER BY name", in_range)]
            for name in names:
                self._new_ledger(conn, name, now_ms)
            records = {name: TopicRecord(name, epoch) for name in names}
            for row in conn.execute(
                f"SELECT topic, {_LEDGER_COLUMNS} FROM ml_ledgers WHERE topic IN ({active}) "
                "ORDER BY topic, ledger_id",
                in_range,
            ):
                records[str(row[0])].ledgers.append(_ledger(row[1:]))
            for row in conn.execute(
                f"SELECT topic, name, info FROM ml_cursors WHERE topic IN ({active}) ORDER BY topic, name",
                in_range,
            ):
                records[str(row[0])].cursors.append(CursorInfo.from_json(str(row[1]), row[2]))
            return Fence(epoch, list(records.values()))

        return await self._write(body)

    async def open_topic(
        self, name: str, namespace: str, hash_: int, epoch: int, now_ms: int, *, create: bool = True
    ) -> TopicRecord | None:
        def body(conn: sqlite3.Connection) -> TopicRecord | None:
            row = conn.execute(
                "SELECT max(epoch) FROM ml_fences WHERE namespace = ? AND lo <= ? AND hi > ?",
                (namespace, hash_, hash_),
            ).fetchone()
            newest = int(row[0]) if row and row[0] is not None else 0
            if newest != epoch:
                raise LedgerFencedError(
                    f"Cannot open {name} with epoch {epoch}: the hash range was fenced with epoch {newest}"
                )
            topic = conn.execute("SELECT epoch FROM ml_topics WHERE name = ?", (name,)).fetchone()
            created = False
            if topic is None:
                if not create:
                    return None
                conn.execute(
                    "INSERT INTO ml_topics (name, namespace, hash, epoch, created_ms, active) "
                    "VALUES (?, ?, ?, ?, ?, 1)",
                    (name, namespace, hash_, epoch, now_ms),
                )
                created = True
            elif int(topic[0]) > epoch:
                raise LedgerFencedError(f"Cannot open {name} with epoch {epoch}: it is at epoch {topic[0]}")
            else:
                conn.execute("UPDATE ml_topics SET epoch = ?, active = 1 WHERE name = ?", (epoch, name))
            conn.execute(
                "UPDATE ml_ledgers SET closed = 1, ts = ? WHERE topic = ? AND closed = 0", (now_ms, name)
            )
            self._new_ledger(conn, name, now_ms)
            ledgers = [
                _ledger(r)
                for r in conn.execute(
                    f"SELECT {_LEDGER_COLUMNS} FROM ml_ledgers WHERE topic = ? ORDER BY ledger_id", (name,)
                )
            ]
            cursors = [
                CursorInfo.from_json(str(r[0]), r[1])
                for r in conn.execute(
                    "SELECT name, info FROM ml_cursors WHERE topic = ? ORDER BY name", (name,)
                )
            ]
            return TopicRecord(name, epoch, ledgers, cursors, created)

        return await self._write(body)

    # ------------------------------------------------------------------ entries
    async def append(self, groups: Sequence[AppendGroup]) -> list[bool]:
        rows = [(g, pack_entries(g.entries)) for g in groups]

        def body(conn: sqlite3.Connection) -> list[bool]:
            out = []
            for group, data in rows:
                cur = conn.execute(
                    "UPDATE ml_ledgers SET entries = entries + ?, size = size + ? "
                    "WHERE ledger_id = ? AND topic = ? AND closed = 0 AND entries = ?",
                    (len(group.entries), group.size, group.ledger_id, group.topic, group.first_entry),
                )
                if cur.rowcount != 1:
                    out.append(False)
                    continue
                conn.execute(
                    "INSERT INTO ml_entries VALUES (?, ?, ?, ?, ?)",
                    (group.ledger_id, group.first_entry, group.last_entry, group.entries[0][0], data),
                )
                out.append(True)
            return out

        return await self._write(body)

    async def rollover(self, name: str, epoch: int, closing: LedgerInfo, now_ms: int) -> LedgerInfo:
        def body(conn: sqlite3.Connection) -> LedgerInfo:
            self._check_epoch(conn, name, epoch)
            cur = conn.execute(
                "UPDATE ml_ledgers SET closed = 1, ts = ? WHERE ledger_id = ? AND topic = ? AND closed = 0",
                (now_ms, closing.ledger_id, name),
            )
            if cur.rowcount != 1:
                raise LedgerFencedError(f"Ledger {closing.ledger_id} of {name} is no longer the open one")
            return self._new_ledger(conn, name, now_ms)

        return await self._write(body)

    async def close_topics(self, closes: Sequence[TopicClose], now_ms: int) -> list[bool]:
        rows = [(c, [(c.name, cursor.name, cursor.to_json()) for cursor in c.cursors]) for c in closes]

        def body(conn: sqlite3.Connection) -> list[bool]:
            out = []
            for close, cursors in rows:
                cur = conn.execute(
                    "UPDATE ml_topics SET active = ? WHERE name = ? AND epoch = ?",
                    (int(close.active), close.name, close.epoch),
                )
                if cur.rowcount != 1:
                    out.append(False)
                    continue
                conn.executemany(
                    "INSERT INTO ml_cursors VALUES (?, ?, ?) "
                    "ON CONFLICT (topic, name) DO UPDATE SET info = excluded.info",
                    cursors,
                )
                if close.ledger_id is not None:
                    conn.execute(
                        "UPDATE ml_ledgers SET closed = 1, ts = ? WHERE ledger_id = ? AND topic = ? AND closed = 0",
                        (now_ms, close.ledger_id, close.name),
                    )
                out.append(True)
            return out

        return await self._write(body)

    async def read(self, ledger_id: int, first_entry: int, last_entry: int) -> list[StoredEntry]:
        def body(conn: sqlite3.Connection) -> list[StoredEntry]:
            start = conn.execute(
                "SELECT max(first_entry) FROM ml_entries WHERE ledger_id = ? AND first_entry <= ?",
                (ledger_id, first_entry),
            ).fetchone()
            lowest = int(start[0]) if start and start[0] is not None else first_entry
            out: list[StoredEntry] = []
            for first, data in conn.execute(
                "SELECT first_entry, data FROM ml_entries WHERE ledger_id = ? AND first_entry >= ? "
                "AND first_entry <= ? ORDER BY first_entry",
                (ledger_id, lowest, last_entry),
            ):
                out += [
                    e for e in unpack_entries(int(first), data) if first_entry <= e.entry_id <= last_entry
                ]
            return out

        return await self._read(body)

    async def find_by_publish_time(self, name: str, publish_time: int) -> tuple[int, int] | None:
        def body(conn: sqlite3.Connection) -> tuple[int, int] | None:
            ledgers = [
                _ledger(r)
                for r in conn.execute(
                    f"SELECT {_LEDGER_COLUMNS} FROM ml_ledgers WHERE topic = ? ORDER BY ledger_id", (name,)
                )
            ]
            for info in ledgers:
                rows = conn.execute(
                    "SELECT first_entry, data FROM ml_entries WHERE ledger_id = ? AND first_entry < ? "
                    "ORDER BY first_entry",
                    (info.ledger_id, info.entries),
                ).fetchall()
                # the first group whose successor starts at or after the time holds the answer
                for index, (first, data) in enumerate(rows):
                    following = rows[index + 1] if index + 1 < len(rows) else None
                    if following is not None and _first_publish(following[1]) < publish_time:
                        continue
                    for entry in unpack_entries(int(first), data):
                        if entry.publish_time >= publish_time and entry.entry_id < info.entries:
                            return info.ledger_id, entry.entry_id
            return None

        return await self._read(body)

    # ------------------------------------------------------------------ cursors and trimming
    async def save_cursors(self, cursors: Sequence[tuple[str, int, CursorInfo]]) -> list[bool]:
        rows = [(name, epoch, cursor.name, cursor.to_json()) for name, epoch, cursor in cursors]

        def body(conn: sqlite3.Connection) -> list[bool]:
            out = []
            for name, epoch, cursor, info in rows:
                cur = conn.execute(
                    "INSERT INTO ml_cursors SELECT ?, ?, ? WHERE (SELECT epoch FROM ml_topics WHERE name = ?) = ? "
                    "ON CONFLICT (topic, name) DO UPDATE SET info = excluded.info",
                    (name, cursor, info, name, epoch),
                )
                out.append(cur.rowcount == 1)
            return out

        return await self._write(body)

    async def delete_cursor(self, name: str, epoch: int, cursor: str) -> bool:
        def body(conn: sqlite3.Connection) -> bool:
            row = conn.execute("SELECT epoch FROM ml_topics WHERE name = ?", (name,)).fetchone()
            if row is None or int(row[0]) != epoch:
                return False
            conn.execute("DELETE FROM ml_cursors WHERE topic = ? AND name = ?", (name, cursor))
            return True

        return await self._write(body)

    async def delete_ledgers(self, name: str, epoch: int, ledger_ids: Sequence[int]) -> bool:
        def body(conn: sqlite3.Connection) -> bool:
            row = conn.execute("SELECT epoch FROM ml_topics WHERE name = ?", (name,)).fetchone()
            if row is None or int(row[0]) != epoch:
                return False
            for ledger_id in ledger_ids:
                cur = conn.execute(
                    "DELETE FROM ml_ledgers WHERE ledger_id = ? AND topic = ? AND closed = 1 AND ledger_id < "
                    "(SELECT max(ledger_id) FROM ml_ledgers WHERE topic = ?)",
                    (ledger_id, name, name),
                )
                if cur.rowcount:
                    conn.execute("DELETE FROM ml_entries WHERE ledger_id = ?", (ledger_id,))
            return True

        return await self._write(body)

    async def delete_topic(self, name: str) -> bool:
        def body(conn: sqlite3.Connection) -> bool:
            cur = conn.execute("DELETE FROM ml_topics WHERE name = ?", (name,))
            conn.execute(
                "DELETE FROM ml_entries WHERE ledger_id IN (SELECT ledger_id FROM ml_ledgers WHERE topic = ?)",
                (name,),
            )
            conn.execute("DELETE FROM ml_ledgers WHERE topic = ?", (name,))
            conn.execute("DELETE FROM ml_cursors WHERE topic = ?", (name,))
            return cur.rowcount == 1

        return await self._write(body)

    async def topics(self, namespace: str) -> list[str]:
        return await self._read(
            lambda conn: [
                str(r[0])
                for r in conn.execute(
                    "SELECT name FROM ml_topics WHERE namespace = ? ORDER BY name", (namespace,)
                )
            ]
        )

    async def ledgers_of(self, name: str) -> list[LedgerInfo]:
        return await self._read(
            lambda conn: [
                _ledger(r)
                for r in conn.execute(
                    f"SELECT {_LEDGER_COLUMNS} FROM ml_ledgers WHERE topic = ? ORDER BY ledger_id", (name,)
                )
            ]
        )


def _first_publish(data: bytes) -> int:
    return int.from_bytes(data[:8], "big", signed=True)
