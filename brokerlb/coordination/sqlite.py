"""``sqlite:DIRECTORY`` -- the embedded metadata store, kept on disk.

Pulsar's standalone keeps its metadata in RocksDB (``RocksdbMetadataStore``); brokerlb keeps it in
SQLite (``DIRECTORY/metadata.sqlite``, the standard library's ``sqlite3``, WAL mode,
``synchronous=FULL``). It is the in-memory store (:mod:`brokerlb.coordination.memory`) -- the same
tree, sessions, ephemerals, watches and transactions -- whose persistent nodes are also written
to disk in the same step as each change (before any watcher hears of it), and read back at
start. Ephemeral nodes are not kept: their sessions end with the process, as they would on a
restarted ZooKeeper whose clients did not come back.

One process at a time: the directory is locked (``metadata.lock``) while a store is open on it,
so a second process fails at start with a clear error instead of forking the tree. The brokers
of ``brokerlb standalone`` share it within the process, as they share ``memory:NAME``.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from typing import IO, ClassVar

from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.coordination.memory import MemoryMetadataStore, MemoryServer, _ZNode
from brokerlb.errors import InvalidConfigError, StoreClosedError

__all__ = ["SqliteMetadataServer", "open_sqlite_store"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS nodes (
    path TEXT PRIMARY KEY, data BLOB NOT NULL, version INTEGER NOT NULL, cversion INTEGER NOT NULL,
    ctime INTEGER NOT NULL, mtime INTEGER NOT NULL, czxid INTEGER NOT NULL, mzxid INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


class SqliteMetadataServer(MemoryServer):
    """The shared tree of one directory, persisted (module docstring)."""

    _by_path: ClassVar[dict[str, SqliteMetadataServer]] = {}

    def __init__(self, directory: str, clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__(f"sqlite:{directory}", clock)
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self._lock_file: IO[str] | None = open(os.path.join(directory, "metadata.lock"), "w")  # noqa: SIM115
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_file.close()
            self._lock_file = None
            raise StoreClosedError(
                f"The metadata directory {directory} is in use by another process (metadata.lock)"
            ) from None
        self._db = sqlite3.connect(os.path.join(directory, "metadata.sqlite"), isolation_level=None)
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = FULL")
        self._db.executescript(_SCHEMA)
        self._load()

    @classmethod
    def at(cls, directory: str) -> SqliteMetadataServer:
        """The server of ``directory`` in this process, opened on first use."""
        directory = os.path.abspath(directory)
        server = cls._by_path.get(directory)
        if server is None:
            server = cls._by_path[directory] = cls(directory)
        return server

    @classmethod
    def release(cls, directory: str) -> None:
        """Close the server of ``directory`` (its data stays on disk)."""
        server = cls._by_path.pop(os.path.abspath(directory), None)
        if server is not None:
            server.close()

    def close(self) -> None:
        self._db.close()
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None

    def _load(self) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE name = 'zxid'").fetchone()
        self._zxid = int(row[0]) if row else 0
        rows = self._db.execute(
            "SELECT path, data, version, cversion, ctime, mtime, czxid, mzxid FROM nodes ORDER BY length(path), path"
        ).fetchall()
        for path, data, version, cversion, ctime, mtime, czxid, mzxid in rows:
            if path == "/":
                root = self._nodes["/"]
                root.cversion = int(cversion)
                continue
            node = _ZNode(
                bytes(data), int(ctime), int(czxid), None, int(version), int(cversion), int(mtime), int(mzxid)
            )
            parent = path.rsplit("/", 1)[0] or "/"
            if parent not in self._nodes:  # an orphan cannot be in a consistent tree; skip it
                continue
            self._nodes[path] = node
            self._nodes[parent].children.add(path.rsplit("/", 1)[1])

    def _dispatch(self, notes: list[tuple[str, str]], exclude: MemoryMetadataStore | None = None) -> None:
        self._persist({path for path, _kind in notes})
        super()._dispatch(notes, exclude)

    def _persist(self, paths: set[str]) -> None:
        """Write the current state of ``paths`` (persistent nodes) in one transaction."""
        if not paths:
            return
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for path in paths:
                node = self._nodes.get(path)
                if node is None or node.ephemeral_owner is not None:
                    db.execute("DELETE FROM nodes WHERE path = ?", (path,))
                    continue
                db.execute(
                    "INSERT INTO nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET "
                    "data = excluded.data, version = excluded.version, cversion = excluded.cversion, "
                    "mtime = excluded.mtime, mzxid = excluded.mzxid",
                    (
                        path,
                        node.data,
                        node.version,
                        node.cversion,
                        node.ctime_ms,
                        node.mtime_ms,
                        node.czxid,
                        node.mzxid,
                    ),
                )
            db.execute(
                "INSERT INTO meta VALUES ('zxid', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (self._zxid,),
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")


def open_sqlite_store(
    directory: str, *, session_timeout: float, operation_timeout: float
) -> MemoryMetadataStore:
    """A client session on the persisted tree of ``directory``."""
    if not directory:
        raise InvalidConfigError("metadataStoreUrl", "sqlite:", "expected sqlite:DIRECTORY")
    store = MemoryMetadataStore(
        SqliteMetadataServer.at(directory),
        session_timeout=session_timeout,
        operation_timeout=operation_timeout,
    )
    store.url = f"sqlite:{os.path.abspath(directory)}"
    return store
