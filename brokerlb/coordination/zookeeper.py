"""ZooKeeper backend, through kazoo. The only module of brokerlb that imports kazoo.

kazoo is threaded: results, watch events and connection-state changes arrive on
kazoo's threads. This module turns each into a call on the asyncio event loop
with ``loop.call_soon_threadsafe`` and does nothing else on those threads.

Operations use kazoo's ``*_async`` calls, so many can be in flight at once on one
session (a thousand ownership claims are pipelined, not serialised).

Session states map as: kazoo CONNECTED → CONNECTED, SUSPENDED → SUSPENDED,
LOST → LOST (kazoo then opens a new session by itself: CONNECTED follows, with a
new :attr:`session_id`). kazoo drops every watch on SUSPENDED and LOST, firing it
with an ``EventType.NONE`` event, as the in-memory store does.

Every kazoo error is mapped to the brokerlb tree by :func:`map_kazoo_error`
(``KAZOO_ERROR_MAP``), chained with ``from``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, RolledBackError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType as KazooEventType
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.retry import KazooRetry

from brokerlb.coordination.store import (
    ANY_VERSION,
    CheckOp,
    CreateOp,
    DeleteOp,
    EventType,
    MetadataStore,
    Node,
    Op,
    SessionState,
    SetOp,
    Stat,
    WatchCallback,
    WatchEvent,
    validate_path,
)
from brokerlb.errors import (
    BadVersionError,
    BrokerLBError,
    ConnectionLossError,
    InvalidStoreOperationError,
    MetadataStoreError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
    StoreAccessDeniedError,
    StoreClosedError,
)

__all__ = ["ZooKeeperMetadataStore", "map_kazoo_error", "KAZOO_ERROR_MAP"]

logger = logging.getLogger(__name__)


def _build_error_map() -> dict[type[BaseException], type[MetadataStoreError]]:
    from kazoo import exceptions as ke

    return {
        ke.NoNodeError: NoNodeError,
        ke.NodeExistsError: NodeExistsError,
        ke.BadVersionError: BadVersionError,
        ke.NotEmptyError: NotEmptyError,
        ke.ConnectionLoss: ConnectionLossError,
        ke.ConnectionDropped: ConnectionLossError,
        ke.OperationTimeoutError: OperationTimeoutError,
        ke.RequestTimeoutError: OperationTimeoutError,
        ke.ThrottledOpError: OperationTimeoutError,
        ke.LockTimeout: OperationTimeoutError,
        KazooTimeoutError: OperationTimeoutError,
        ke.SessionExpiredError: SessionExpiredError,
        ke.UnknownSessionError: SessionExpiredError,
        ke.SessionMovedError: SessionExpiredError,
        ke.ConnectionClosedError: StoreClosedError,
        ke.ZookeeperStoppedError: StoreClosedError,
        ke.CancelledError: StoreClosedError,
        ke.NoAuthError: StoreAccessDeniedError,
        ke.AuthFailedError: StoreAccessDeniedError,
        ke.SessionClosedRequireSaslError: StoreAccessDeniedError,
        ke.SASLException: StoreAccessDeniedError,
        ke.NoChildrenForEphemeralsError: InvalidStoreOperationError,
        ke.BadArgumentsError: InvalidStoreOperationError,
        ke.InvalidACLError: InvalidStoreOperationError,
        ke.InvalidCallbackError: InvalidStoreOperationError,
        ke.UnimplementedError: InvalidStoreOperationError,
        ke.NotReadOnlyCallError: InvalidStoreOperationError,
        ke.EphemeralOnLocalSessionError: InvalidStoreOperationError,
        ke.NoWatcherError: InvalidStoreOperationError,
        ke.ReconfigDisabledError: InvalidStoreOperationError,
        ke.ConfigurationError: InvalidStoreOperationError,
        ke.WriterNotClosedException: InvalidStoreOperationError,
        ke.QuotaExceededError: MetadataStoreError,
        ke.NewConfigNoQuorumError: MetadataStoreError,
        ke.ReconfigInProcessError: MetadataStoreError,
        ke.RolledBackError: MetadataStoreError,
        ke.SystemZookeeperError: MetadataStoreError,
        ke.RuntimeInconsistency: MetadataStoreError,
        ke.DataInconsistency: MetadataStoreError,
        ke.MarshallingError: MetadataStoreError,
        ke.APIError: MetadataStoreError,
        ke.ZookeeperError: MetadataStoreError,
        ke.KazooException: MetadataStoreError,
        # kazoo validates arguments itself (path shape, data type) with these:
        ValueError: InvalidStoreOperationError,
        TypeError: InvalidStoreOperationError,
    }


#: kazoo (and argument) exception class → brokerlb class. Looked up along the MRO.
KAZOO_ERROR_MAP: dict[type[BaseException], type[MetadataStoreError]] = _build_error_map()


def map_kazoo_error(exc: BaseException, path: str | None = None) -> BrokerLBError:
    """The brokerlb error for a kazoo error (``__cause__`` is set to ``exc``)."""
    if isinstance(exc, BrokerLBError):
        return exc
    target: type[MetadataStoreError] = MetadataStoreError
    for klass in type(exc).__mro__:
        if klass in KAZOO_ERROR_MAP:
            target = KAZOO_ERROR_MAP[klass]
            break
    detail = str(exc) or type(exc).__name__
    mapped = target(f"ZooKeeper {type(exc).__name__}: {detail}", path)
    mapped.__cause__ = exc
    return mapped


_EVENT_TYPES = {
    KazooEventType.CREATED: EventType.CREATED,
    KazooEventType.DELETED: EventType.DELETED,
    KazooEventType.CHANGED: EventType.CHANGED,
    KazooEventType.CHILD: EventType.CHILD,
    KazooEventType.NONE: EventType.NONE,
}

_SESSION_STATES = {
    KazooState.CONNECTED: SessionState.CONNECTED,
    KazooState.SUSPENDED: SessionState.SUSPENDED,
    KazooState.LOST: SessionState.LOST,
}


def _stat(zstat: ZnodeStat) -> Stat:
    return Stat(
        version=zstat.version,
        cversion=zstat.cversion,
        ctime_ms=zstat.ctime,
        mtime_ms=zstat.mtime,
        ephemeral_owner=zstat.ephemeralOwner or None,
        num_children=zstat.numChildren,
        data_length=zstat.dataLength,
        czxid=zstat.czxid,
        mzxid=zstat.mzxid,
    )


class ZooKeeperMetadataStore(MetadataStore):
    """A ZooKeeper session (``open_store("zk:127.0.0.1:2181")``).

    ``hosts`` is kazoo's host string: ``host:port[,host:port...][/chroot]``. The
    session timeout is the one requested; the server clamps it to its
    ``minSessionTimeout``/``maxSessionTimeout`` (keep requests inside them).
    """

    def __init__(
        self,
        hosts: str,
        *,
        session_timeout: float = 30.0,
        operation_timeout: float = 30.0,
        connect_timeout: float | None = None,
    ) -> None:
        super().__init__(session_timeout=session_timeout, operation_timeout=operation_timeout)
        self.hosts = hosts
        self.url = f"zk:{hosts}"
        self._connect_timeout = connect_timeout if connect_timeout is not None else max(10.0, session_timeout)
        self._client: KazooClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sid: int | None = None
        self._closing = False
        self._probe: asyncio.Task[None] | None = None

    @property
    def session_id(self) -> int | None:
        return self._sid

    # ------------------------------------------------------------------ life cycle
    async def start(self) -> None:
        if self._client is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._closing = False
        client = KazooClient(
            hosts=self.hosts,
            timeout=self.session_timeout,
            connection_retry=KazooRetry(max_tries=-1, delay=0.05, backoff=1.5, max_delay=1.0),
            logger=logging.getLogger("brokerlb.coordination.kazoo"),
        )
        client.add_listener(self._on_kazoo_state)
        self._client = client
        connect_sent = self.clock.monotonic()
        try:
            await asyncio.to_thread(client.start, self._connect_timeout)
        except Exception as exc:
            self._client = None
            await asyncio.to_thread(_quiet_close, client)
            raise ConnectionLossError(f"Cannot connect to ZooKeeper at {self.hosts}: {exc}") from exc
        client_id = client.client_id
        self._sid = client_id[0] if client_id else None
        self._confirmed_until = connect_sent + self._liveness_timeout()
        self._set_session_state(SessionState.CONNECTED)
        self._probe = asyncio.create_task(self._probe_session(), name=f"session probe {self.hosts}")

    async def _probe_session(self) -> None:
        """Ask the server something small every quarter of the session timeout, so that an idle
        broker still knows its session is alive (:meth:`MetadataStore.session_known_alive`)."""
        while True:
            await self.clock.sleep(self._liveness_timeout() / 4)
            if self._session_state in (SessionState.CONNECTED, SessionState.SUSPENDED):
                try:
                    await self.exists("/")
                except MetadataStoreError as exc:
                    logger.debug("Session probe of %s failed: %r", self.hosts, exc)

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        self._closing = True
        if self._probe is not None:
            self._probe.cancel()
            self._probe = None
        await asyncio.to_thread(_quiet_close, client)
        self._sid = None
        self._set_session_state(SessionState.CLOSED)

    async def force_session_expiry(self) -> None:
        """Make the server expire this session now (testing aid, kazoo harness's technique).

        A second client attaches to the same session id and password, then closes
        it: the server ends the session, this client sees LOST and reconnects.
        """
        client = self._require_client(None)
        client_id = client.client_id
        if client_id is None:
            raise ConnectionLossError("Not connected: no session to expire")
        other = KazooClient(hosts=self.hosts, client_id=client_id, timeout=self.session_timeout)
        await asyncio.to_thread(other.start, self._connect_timeout)
        await asyncio.to_thread(_quiet_close, other)

    # ------------------------------------------------------------------ kazoo threads → loop
    def _on_kazoo_state(self, state: str) -> None:  # runs on a kazoo thread
        client = self._client
        sid = client._session_id if (client is not None and state == KazooState.CONNECTED) else None
        self._post(self._apply_kazoo_state, _SESSION_STATES[state], sid)

    def _apply_kazoo_state(self, state: SessionState, sid: int | None) -> None:
        if self._closing or self._client is None:
            return
        if state is SessionState.CONNECTED:
            self._sid = sid
        elif state is SessionState.LOST:
            self._sid = None
        self._set_session_state(state)

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            pass

    def _watcher(self, callback: WatchCallback | None) -> Callable[[Any], None] | None:
        if callback is None:
            return None

        def on_event(event: Any) -> None:  # runs on kazoo's callback thread
            ours = WatchEvent(_EVENT_TYPES.get(event.type, EventType.NONE), event.path or "")
            self._post(self._run_watch, callback, ours)

        return on_event

    def _run_watch(self, callback: WatchCallback, event: WatchEvent) -> None:
        if self._client is None:
            return
        try:
            callback(event)
        except Exception:
            logger.exception("Watch callback %r failed on %s", callback, event)

    # ------------------------------------------------------------------ calls
    def _require_client(self, path: str | None) -> KazooClient:
        self._check_open(path)
        if self._client is None:
            raise StoreClosedError(f"Metadata store {self.url} is not started", path)
        return self._client

    async def _call(self, path: str | None, start_call: Callable[[KazooClient], Any]) -> Any:
        client = self._require_client(path)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        sent_at, session = self.clock.monotonic(), self._sid
        try:
            async_result = start_call(client)
        except Exception as exc:
            raise map_kazoo_error(exc, path) from exc

        def resolve(result: Any) -> None:  # on the loop
            if future.done():
                return
            if result.successful():
                self._confirm_session(sent_at, session)
                future.set_result(result.value)
            else:
                future.set_exception(map_kazoo_error(result.exception, path))

        async_result.rawlink(lambda result: self._post(resolve, result))
        return await self._with_timeout(future, path)

    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> str:
        validate_path(path)
        _check_bytes(data, path)
        created = await self._call(
            path,
            lambda c: c.create_async(
                path, bytes(data), ephemeral=ephemeral, sequence=sequential, makepath=make_parents
            ),
        )
        return str(created)

    async def get(self, path: str, *, watch: WatchCallback | None = None) -> Node:
        validate_path(path)
        data, zstat = await self._call(path, lambda c: c.get_async(path, watch=self._watcher(watch)))
        return Node(bytes(data or b""), _stat(zstat))

    async def set(self, path: str, data: bytes, *, version: int = ANY_VERSION) -> Stat:
        validate_path(path)
        _check_bytes(data, path)
        zstat = await self._call(path, lambda c: c.set_async(path, bytes(data), version=version))
        return _stat(zstat)

    async def delete(self, path: str, *, version: int = ANY_VERSION) -> None:
        validate_path(path)
        if path == "/":
            raise InvalidStoreOperationError("The root node cannot be deleted", "/")
        await self._call(path, lambda c: c.delete_async(path, version=version))

    async def children(self, path: str, *, watch: WatchCallback | None = None) -> list[str]:
        validate_path(path)
        names = await self._call(path, lambda c: c.get_children_async(path, watch=self._watcher(watch)))
        return sorted(names)

    async def exists(self, path: str, *, watch: WatchCallback | None = None) -> Stat | None:
        validate_path(path)
        zstat = await self._call(path, lambda c: c.exists_async(path, watch=self._watcher(watch)))
        return None if zstat is None else _stat(zstat)

    async def multi(self, ops: Sequence[Op]) -> list[Any]:
        ops = list(ops)
        if not ops:
            return []
        for op in ops:
            validate_path(op.path)
            if isinstance(op, (CreateOp, SetOp)):
                _check_bytes(op.data, op.path)

        def commit(client: KazooClient) -> Any:
            txn = client.transaction()
            for op in ops:
                if isinstance(op, CreateOp):
                    txn.create(op.path, bytes(op.data), ephemeral=op.ephemeral, sequence=op.sequential)
                elif isinstance(op, SetOp):
                    txn.set_data(op.path, bytes(op.data), version=op.version)
                elif isinstance(op, DeleteOp):
                    txn.delete(op.path, version=op.version)
                elif isinstance(op, CheckOp):
                    txn.check(op.path, op.version)
                else:
                    raise InvalidStoreOperationError(f"Unknown transaction operation {op!r}")
            return txn.commit_async()

        results = await self._call(None, commit)
        failure = _first_failure(results)
        if failure is not None:
            index, exc = failure
            mapped = map_kazoo_error(exc, ops[index].path)
            if isinstance(mapped, MetadataStoreError):
                mapped.op_index = index
            raise mapped from exc
        return [_tx_result(op, value) for op, value in zip(ops, results, strict=True)]


def _first_failure(results: list[Any]) -> tuple[int, BaseException] | None:
    failures = [(i, r) for i, r in enumerate(results) if isinstance(r, BaseException)]
    for index, exc in failures:
        if not isinstance(exc, RolledBackError):
            return index, exc
    return failures[0] if failures else None


def _tx_result(op: Op, value: Any) -> Any:
    if isinstance(op, CreateOp):
        return str(value)
    if isinstance(op, SetOp):
        return _stat(value)
    return None


def _check_bytes(data: object, path: str) -> None:
    if not isinstance(data, (bytes, bytearray)):
        raise InvalidStoreOperationError(f"Node data must be bytes, got {type(data).__name__}", path)


def _quiet_close(client: KazooClient) -> None:
    """Stop and close a kazoo client from a worker thread, whatever state it is in."""
    try:
        client.stop()
    except KazooException:
        logger.debug("kazoo stop failed", exc_info=True)
    try:
        client.close()
    except KazooException:
        logger.debug("kazoo close failed", exc_info=True)
