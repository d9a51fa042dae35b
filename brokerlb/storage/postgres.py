"""``postgresql://user@host:port/database`` -- the storage tier of a multi-machine deployment.

PostgreSQL (Debian's ``postgresql``) through ``asyncpg``. The tables are those of the embedded
engine (:mod:`brokerlb.storage.sqlite`); what PostgreSQL adds is concurrency, so the fencing
rules rest on its row locks (docs/storage.md):

* an append is **one statement** for the whole group commit: it updates each group's ledger row
  only where the ledger is still open at the entry the writer expects, and inserts the groups
  whose update matched (``WITH g AS (unnest ...), u AS (UPDATE ... RETURNING) INSERT ...``) --
  a group whose ledger a fence closed inserts nothing;
* a fence updates the topics of its range, then closes their open ledgers: it waits for the row
  locks of appends in flight and closes each ledger at its true last entry;
* a rollover locks its topic's row first (``FOR UPDATE``) and checks the epoch, so a fence either
  waits for it and then closes the new ledger too, or goes first and the rollover is refused;
* fences and topic creations of a namespace take one advisory lock, so a topic is never created
  under an epoch a concurrent fence has superseded.

Durability across machines is PostgreSQL's synchronous replication (``synchronous_commit = on``
with ``synchronous_standby_names = 'ANY k (...)'``): the mapping to Pulsar's ensemble / write /
ack quorums is in docs/storage.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
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

__all__ = ["PostgresStorage", "SCHEMA"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMA = """
CREATE SEQUENCE IF NOT EXISTS ml_ids;
CREATE TABLE IF NOT EXISTS ml_fences (
    namespace TEXT NOT NULL, lo BIGINT NOT NULL, hi BIGINT NOT NULL, epoch BIGINT NOT NULL,
    owner TEXT NOT NULL, at_ms BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS ml_fences_ns ON ml_fences (namespace, lo);
CREATE TABLE IF NOT EXISTS ml_topics (
    name TEXT PRIMARY KEY, namespace TEXT NOT NULL, hash BIGINT NOT NULL, epoch BIGINT NOT NULL,
    created_ms BIGINT NOT NULL, active BOOLEAN NOT NULL DEFAULT false);
ALTER TABLE ml_topics ADD COLUMN IF NOT EXISTS active BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS ml_topics_range ON ml_topics (namespace, hash);
CREATE TABLE IF NOT EXISTS ml_ledgers (
    ledger_id BIGINT PRIMARY KEY, topic TEXT NOT NULL, entries BIGINT NOT NULL, size BIGINT NOT NULL,
    ts BIGINT NOT NULL, base BIGINT NOT NULL, base_offset BIGINT NOT NULL, closed BOOLEAN NOT NULL);
CREATE INDEX IF NOT EXISTS ml_ledgers_topic ON ml_ledgers (topic, ledger_id);
CREATE TABLE IF NOT EXISTS ml_entries (
    ledger_id BIGINT NOT NULL, first_entry BIGINT NOT NULL, last_entry BIGINT NOT NULL,
    first_publish BIGINT NOT NULL, data BYTEA NOT NULL, PRIMARY KEY (ledger_id, first_entry));
CREATE TABLE IF NOT EXISTS ml_cursors (
    topic TEXT NOT NULL, name TEXT NOT NULL, info BYTEA NOT NULL, PRIMARY KEY (topic, name));
"""

_APPEND = """
WITH g AS (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bytea[])
        AS g(topic, ledger_id, first_entry, n, size, first_publish, data)
), u AS (
    UPDATE ml_ledgers l SET entries = l.entries + g.n, size = l.size + g.size FROM g
    WHERE l.ledger_id = g.ledger_id AND l.topic = g.topic AND NOT l.closed AND l.entries = g.first_entry
    RETURNING g.ledger_id, g.first_entry, g.n, g.first_publish, g.data
)
INSERT INTO ml_entries (ledger_id, first_entry, last_entry, first_publish, data)
SELECT ledger_id, first_entry, first_entry + n - 1, first_publish, data FROM u
RETURNING ledger_id, first_entry
"""

_LEDGER_COLUMNS = "ledger_id, entries, size, ts, base, base_offset, closed"

#: the active topics of a fenced range ($1 namespace, $2 lo, $3 hi)
_ACTIVE = "SELECT name FROM ml_topics WHERE namespace = $1 AND hash >= $2 AND hash < $3 AND active"

#: a new open ledger for each active topic of a fenced range ($4 now), after its last one
_OPEN_ACTIVE = f"""
WITH last AS (
    SELECT DISTINCT ON (topic) topic, base + entries AS base, base_offset + size AS base_offset
    FROM ml_ledgers WHERE topic IN ({_ACTIVE}) ORDER BY topic, ledger_id DESC
)
INSERT INTO ml_ledgers (ledger_id, topic, entries, size, ts, base, base_offset, closed)
SELECT nextval('ml_ids'), t.name, 0, 0, $4, COALESCE(last.base, 0), COALESCE(last.base_offset, 0), false
FROM ({_ACTIVE} ORDER BY name) t LEFT JOIN last ON last.topic = t.name
"""


def _ledger(row: Any) -> LedgerInfo:
    return LedgerInfo(
        int(row[0]), int(row[1]), int(row[2]), int(row[3]), int(row[4]), int(row[5]), bool(row[6])
    )


class PostgresStorage(StorageEngine):
    """``postgresql://...`` (module docstring)."""

    durable = True

    def __init__(self, url: str, *, pool_size: int = 4, timeout: float = 30.0) -> None:
        if not url.startswith(("postgresql://", "postgres://")):
            raise InvalidConfigError(
                "brokerlbStorageUrl", url, "expected postgresql://user@host:port/database"
            )
        self.url = url
        self._pool_size = pool_size
        self._timeout = timeout
        self._pool: Any = None

    async def start(self) -> None:
        if self._pool is not None:
            return
        import asyncpg

        try:
            self._pool = await asyncpg.create_pool(
                self.url, min_size=1, max_size=self._pool_size, command_timeout=self._timeout
            )
            async with self._pool.acquire() as conn:
                await conn.execute("SELECT pg_advisory_lock(7316)")  # one schema creation at a time
                try:
                    await conn.execute(SCHEMA)
                finally:
                    await conn.execute("SELECT pg_advisory_unlock(7316)")
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            await self.close()
            raise StorageUnavailableError(f"PostgreSQL storage {self._safe_url}: {exc}") from exc

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            try:
                await asyncio.wait_for(pool.close(), 10)
            except Exception:
                pool.terminate()

    @property
    def _safe_url(self) -> str:
        head, sep, tail = self.url.partition("@")
        return f"postgresql://***@{tail}" if sep else self.url

    async def _run(self, body: Callable[[Any], Awaitable[T]], *, transaction: bool = True) -> T:
        import asyncpg

        if self._pool is None:
            raise StorageUnavailableError(f"PostgreSQL storage {self._safe_url} is not started")
        try:
            async with self._pool.acquire() as conn:
                if not transaction:
                    return await body(conn)
                async with conn.transaction():
                    return await body(conn)
        except LedgerFencedError:
            raise
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise StorageUnavailableError(
                f"PostgreSQL storage {self._safe_url}: {type(exc).__name__}: {exc}"
            ) from exc

    @staticmethod
    async def _check_epoch(conn: Any, name: str, epoch: int, *, lock: bool = False) -> None:
        row = await conn.fetchrow(
            f"SELECT epoch FROM ml_topics WHERE name = $1{' FOR UPDATE' if lock else ''}", name
        )
        if row is None:
            raise LedgerFencedError(f"Managed ledger {name} does not exist (deleted?)")
        if int(row[0]) != epoch:
            raise LedgerFencedError(
                f"Managed ledger {name} is fenced: epoch {row[0]} took it over (this writer holds {epoch})"
            )

    @staticmethod
    async def _new_ledger(conn: Any, name: str, now_ms: int) -> LedgerInfo:
        last = await conn.fetchrow(
            f"SELECT {_LEDGER_COLUMNS} FROM ml_ledgers WHERE topic = $1 ORDER BY ledger_id DESC LIMIT 1", name
        )
        base, offset = (0, 0) if last is None else (int(last[4]) + int(last[1]), int(last[5]) + int(last[2]))
        ledger_id = int(await conn.fetchval("SELECT nextval('ml_ids')"))
        await conn.execute(
            "INSERT INTO ml_ledgers VALUES ($1, $2, 0, 0, $3, $4, $5, false)",
            ledger_id,
            name,
            now_ms,
            base,
            offset,
        )
        return LedgerInfo(ledger_id, 0, 0, now_ms, base, offset, False)

    # ------------------------------------------------------------------ fencing
    async def fence(self, namespace: str, lo: int, hi: int, owner: str, now_ms: int) -> Fence:
        async def body(conn: Any) -> Fence:
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", namespace)
            epoch = int(await conn.fetchval("SELECT nextval('ml_ids')"))
            await conn.execute(
                "DELETE FROM ml_fences WHERE namespace = $1 AND lo >= $2 AND hi <= $3", namespace, lo, hi
            )
            await conn.execute(
                "INSERT INTO ml_fences VALUES ($1, $2, $3, $4, $5, $6)",
                namespace,
                lo,
                hi,
                epoch,
                owner,
                now_ms,
            )
            await conn.execute(
                "UPDATE ml_topics SET epoch = $1 WHERE namespace = $2 AND hash >= $3 AND hash < $4",
                epoch,
                namespace,
                lo,
                hi,
            )
            await conn.execute(
                "UPDATE ml_ledgers SET closed = true, ts = $1 WHERE NOT closed AND topic IN "
                "(SELECT name FROM ml_topics WHERE namespace = $2 AND hash >= $3 AND hash < $4)",
                now_ms,
                namespace,
                lo,
                hi,
            )
            # the active topics of the range, opened for the new owner: a new ledger each
            await conn.execute(_OPEN_ACTIVE, namespace, lo, hi, now_ms)
            records: dict[str, TopicRecord] = {}
            for row in await conn.fetch(
                f"SELECT topic, {_LEDGER_COLUMNS} FROM ml_ledgers WHERE topic IN ({_ACTIVE}) "
                "ORDER BY topic, ledger_id",
                namespace,
                lo,
                hi,
            ):
                name = str(row[0])
                record = records.get(name) or records.setdefault(name, TopicRecord(name, epoch))
                record.ledgers.append(_ledger(row[1:]))
            for row in await conn.fetch(
                f"SELECT topic, name, info FROM ml_cursors WHERE topic IN ({_ACTIVE}) ORDER BY topic, name",
                namespace,
                lo,
                hi,
            ):
                records[str(row[0])].cursors.append(CursorInfo.from_json(str(row[1]), bytes(row[2])))
            return Fence(epoch, list(records.values()))

        return await self._run(body)

    async def open_topic(
        self, name: str, namespace: str, hash_: int, epoch: int, now_ms: int, *, create: bool = True
    ) -> TopicRecord | None:
        async def body(conn: Any) -> TopicRecord | None:
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", namespace)
            newest = await conn.fetchval(
                "SELECT max(epoch) FROM ml_fences WHERE namespace = $1 AND lo <= $2 AND hi > $2",
                namespace,
                hash_,
            )
            newest = int(newest) if newest is not None else 0
            if newest != epoch:
                raise LedgerFencedError(
                    f"Cannot open {name} with epoch {epoch}: the hash range was fenced with epoch {newest}"
                )
            topic = await conn.fetchrow("SELECT epoch FROM ml_topics WHERE name = $1 FOR UPDATE", name)
            created = False
            if topic is None:
                if not create:
                    return None
                await conn.execute(
                    "INSERT INTO ml_topics (name, namespace, hash, epoch, created_ms, active) "
                    "VALUES ($1, $2, $3, $4, $5, true)",
                    name,
                    namespace,
                    hash_,
                    epoch,
                    now_ms,
                )
                created = True
            elif int(topic[0]) > epoch:
                raise LedgerFencedError(f"Cannot open {name} with epoch {epoch}: it is at epoch {topic[0]}")
            else:
                await conn.execute(
                    "UPDATE ml_topics SET epoch = $1, active = true WHERE name = $2", epoch, name
                )
            await conn.execute(
                "UPDATE ml_ledgers SET closed = true, ts = $1 WHERE topic = $2 AND NOT closed", now_ms, name
            )
            await self._new_ledger(conn, name, now_ms)
            ledgers = [
                _ledger(r)
                for r in await conn.fetch(
                    f"SELECT {_LEDGER_COLUMNS} FROM ml_ledgers WHERE topic = $1 ORDER BY ledger_id", name
                )
            ]
            cursors = [
                CursorInfo.from_json(str(r[0]), bytes(r[1]))
                for r in await conn.fetch(
                    "SELECT name, info FROM ml_cursors WHERE topic = $1 ORDER BY name", name
                )
            ]
            return TopicRecord(name, epoch, ledgers, cursors, created)

        return await self._run(body)

    # ------------------------------------------------------------------ entries
    async def append(self, groups: Sequence[AppendGroup]) -> list[bool]:
        if not groups:
            return []
        args = (
            [g.topic for g in groups],
            [g.ledger_id for g in groups],
            [g.first_entry for g in groups],
            [len(g.entries) for g in groups],
            [g.size for g in groups],
            [g.entries[0][0] for g in groups],
            [pack_entries(g.entries) for g in groups],
        )

        async def body(conn: Any) -> list[bool]:
            stored = {(int(r[0]), int(r[1])) for r in await conn.fetch(_APPEND, *args)}
            return [(g.ledger_id, g.first_entry) in stored for g in groups]

        return await self._run(body, transaction=False)

    async def rollover(self, name: str, epoch: int, closing: LedgerInfo, now_ms: int) -> LedgerInfo:
        async def body(conn: Any) -> LedgerInfo:
            await self._check_epoch(conn, name, epoch, lock=True)
            status = await conn.execute(
                "UPDATE ml_ledgers SET closed = true, ts = $1 WHERE ledger_id = $2 AND topic = $3 AND NOT closed",
                now_ms,
                closing.ledger_id,
                name,
            )
            if status != "UPDATE 1":
                raise LedgerFencedError(f"Ledger {closing.ledger_id} of {name} is no longer the open one")
            return await self._new_ledger(conn, name, now_ms)

        return await self._run(body)

    async def close_topics(self, closes: Sequence[TopicClose], now_ms: int) -> list[bool]:
        if not closes:
            return []

        async def body(conn: Any) -> list[bool]:
            # the topics still at the closer's epoch, locked against a fence until the commit
            rows = await conn.fetch(
                "WITH c AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::boolean[]) AS c(name, epoch, active)) "
                "UPDATE ml_topics t SET active = c.active FROM c WHERE t.name = c.name AND t.epoch = c.epoch "
                "RETURNING t.name, t.epoch",
                [c.name for c in closes],
                [c.epoch for c in closes],
                [c.active for c in closes],
            )
            held = {(str(r[0]), int(r[1])) for r in rows}
            done = [(c.name, c.epoch) in held for c in closes]
            cursors = [
                (c.name, cursor.name, cursor.to_json())
                for c, ok in zip(closes, done, strict=True)
                if ok
                for cursor in c.cursors
            ]
            if cursors:
                await conn.execute(
                    "INSERT INTO ml_cursors (topic, name, info) "
                    "SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[]) "
                    "ON CONFLICT (topic, name) DO UPDATE SET info = excluded.info",
                    [c[0] for c in cursors],
                    [c[1] for c in cursors],
                    [c[2] for c in cursors],
                )
            closing = [
                (c.name, c.ledger_id)
                for c, ok in zip(closes, done, strict=True)
                if ok and c.ledger_id is not None
            ]
            if closing:
                await conn.execute(
                    "UPDATE ml_ledgers l SET closed = true, ts = $1 FROM unnest($2::text[], $3::bigint[]) "
                    "AS c(topic, ledger_id) WHERE l.ledger_id = c.ledger_id AND l.topic = c.topic AND NOT l.closed",
                    now_ms,
                    [n for n, _ in closing],
                    [i for _, i in closing],
                )
            return done

        return await self._run(body)

    async def read(self, ledger_id: int, first_entry: int, last_entry: int) -> list[StoredEntry]:
        async def body(conn: Any) -> list[StoredEntry]:
            rows = await conn.fetch(
                "SELECT first_entry, data FROM ml_entries WHERE ledger_id = $1 AND last_entry >= $2 "
                "AND first_entry <= $3 ORDER BY first_entry",
                ledger_id,
                first_entry,
                last_entry,
            )
            out: list[StoredEntry] = []
            for first, data in rows:
                out += [
                    e
                    for e in unpack_entries(int(first), bytes(data))
                    if first_entry <= e.entry_id <= last_entry
                ]
            return out

        return await self._run(body, transaction=False)

    async def find_by_publish_time(self, name: str, publish_time: int) -> tuple[int, int] | None:
        async def body(conn: Any) -> tuple[int, int] | None:
            for r in await conn.fetch(
                f"SELECT {_LEDGER_COLUMNS} FROM ml_ledgers WHERE topic = $1 ORDER BY ledger_id", name
            ):
                info = _ledger(r)
                start = await conn.fetchval(
                    "SELECT max(first_entry) FROM ml_entries WHERE ledger_id = $1 AND first_publish < $2",
                    info.ledger_id,
                    publish_time,
                )
                rows = await conn.fetch(
                    "SELECT first_entry, data FROM ml_entries WHERE ledger_id = $1 AND first_entry >= $2 "
                    "AND first_entry < $3 ORDER BY first_entry",
                    info.ledger_id,
                    int(start) if start is not None else 0,
                    info.entries,
                )
                for first, data in rows:
                    for entry in unpack_entries(int(first), bytes(data)):
                        if entry.publish_time >= publish_time and entry.entry_id < info.entries:
                            return info.ledger_id, entry.entry_id
            return None

        return await self._run(body, transaction=False)

    # ------------------------------------------------------------------ cursors and trimming
    async def save_cursors(self, cursors: Sequence[tuple[str, int, CursorInfo]]) -> list[bool]:
        if not cursors:
            return []
        names = [n for n, _, _ in cursors]
        epochs = [e for _, e, _ in cursors]
        cursor_names = [c.name for _, _, c in cursors]
        infos = [c.to_json() for _, _, c in cursors]

        async def body(conn: Any) -> list[bool]:
            rows = await conn.fetch(
                "WITH c AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bytea[], "
                "$5::int[]) AS c(topic, epoch, name, info, i)) "
                "INSERT INTO ml_cursors (topic, name, info) SELECT c.topic, c.name, c.info FROM c "
                "JOIN ml_topics t ON t.name = c.topic AND t.epoch = c.epoch "
                "ON CONFLICT (topic, name) DO UPDATE SET info = excluded.info RETURNING topic, name",
                names,
                epochs,
                cursor_names,
                infos,
                list(range(len(cursors))),
            )
            done = {(str(r[0]), str(r[1])) for r in rows}
            return [(n, c.name) in done for n, _, c in cursors]

        return await self._run(body, transaction=False)

    async def delete_cursor(self, name: str, epoch: int, cursor: str) -> bool:
        async def body(conn: Any) -> bool:
            row = await conn.fetchrow("SELECT epoch FROM ml_topics WHERE name = $1", name)
            if row is None or int(row[0]) != epoch:
                return False
            await conn.execute("DELETE FROM ml_cursors WHERE topic = $1 AND name = $2", name, cursor)
            return True

        return await self._run(body)

    async def delete_ledgers(self, name: str, epoch: int, ledger_ids: Sequence[int]) -> bool:
        async def body(conn: Any) -> bool:
            row = await conn.fetchrow("SELECT epoch FROM ml_topics WHERE name = $1 FOR SHARE", name)
            if row is None or int(row[0]) != epoch:
                return False
            deleted = await conn.fetch(
                "DELETE FROM ml_ledgers WHERE ledger_id = ANY($1::bigint[]) AND topic = $2 AND closed AND ledger_id < "
                "(SELECT max(ledger_id) FROM ml_ledgers WHERE topic = $2) RETURNING ledger_id",
                list(ledger_ids),
                name,
            )
            ids = [int(r[0]) for r in deleted]
            if ids:
                await conn.execute("DELETE FROM ml_entries WHERE ledger_id = ANY($1::bigint[])", ids)
            return True

        return await self._run(body)

    async def delete_topic(self, name: str) -> bool:
        async def body(conn: Any) -> bool:
            status = await conn.execute("DELETE FROM ml_topics WHERE name = $1", name)
            await conn.execute(
                "DELETE FROM ml_entries WHERE ledger_id IN (SELECT ledger_id FROM ml_ledgers WHERE topic = $1)",
                name,
            )
            await conn.execute("DELETE FROM ml_ledgers WHERE topic = $1", name)
            await conn.execute("DELETE FROM ml_cursors WHERE topic = $1", name)
            return bool(status == "DELETE 1")

        return await self._run(body)

    async def topics(self, namespace: str) -> list[str]:
        async def body(conn: Any) -> list[str]:
            return [
                str(r[0])
                for r in await conn.fetch(
                    "SELECT name FROM ml_topics WHERE namespace = $1 ORDER BY name", namespace
                )
            ]

        return await self._run(body, transaction=False)

    async def ledgers_of(self, name: str) -> list[LedgerInfo]:
        async def body(conn: Any) -> list[LedgerInfo]:
            return [
                _ledger(r)
                for r in await conn.fetch(
                    f"SELECT {_LEDGER_COLUMNS} FROM ml_ledgers WHERE topic = $1 ORDER BY ledger_id", name
                )
            ]

        return await self._run(body, transaction=False)
