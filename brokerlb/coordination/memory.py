"""The embedded in-memory metadata store: ZooKeeper's semantics in one process.

A :class:`MemoryServer` is the shared tree (one per name: ``memory:cluster-a``);
each :class:`MemoryMetadataStore` is one client session on it, so N brokers in
one process share a store by opening the same name. It is the default for
standalone mode, unit tests and the simulator. It follows ZooKeeper where the
recipes can tell the difference: versions and zxids, ephemerals owned by a
session, sequential names from the parent's ``cversion``, one-shot watches
(dropped with an ``EventType.NONE`` event when the connection drops), atomic
``multi``, session expiry by the server after ``session_timeout`` of silence.

Deterministic: no threads, no randomness; session ids count up from
``0x100000001``; events are delivered on the event loop in the order they happen.
Time is the server's :class:`~brokerlb.clock.Clock` (node ``ctime``/``mtime``, session
expiry, the fault injection's delays, operation timeouts): on a
:class:`~brokerlb.clock.ManualClock` a session expires exactly when the test moves
the clock past its timeout, and nothing happens in between.

Fault injection (per client):

* :meth:`MemoryMetadataStore.expire_session` -- the server expires the session
  now: ephemerals vanish, the client sees LOST then CONNECTED with a new session;
* :meth:`~MemoryMetadataStore.drop_connection` /
  :meth:`~MemoryMetadataStore.restore_connection` -- SUSPENDED; operations fail
  with ConnectionLoss; if the connection stays down longer than the session
  timeout, the server expires the session (LOST on restore);
* :meth:`~MemoryMetadataStore.crash` -- like SIGKILL: the client stops talking and
  the server expires its session after the timeout;
* :meth:`~MemoryMetadataStore.pause` / :meth:`~MemoryMetadataStore.resume` -- like
  SIGSTOP / SIGCONT: operations and events wait; on resume after the timeout the
  client goes SUSPENDED, LOST, CONNECTED (new session), as kazoo does;
* :meth:`~MemoryMetadataStore.set_operation_delay` -- every operation waits first.

A store must be used from the event loop it was started on.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from brokerlb.clock import SYSTEM_CLOCK, Clock, TimerHandle
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
    parent_path,
    validate_path,
)
from brokerlb.errors import (
    BadVersionError,
    ConnectionLossError,
    InvalidStoreOperationError,
    MetadataStoreError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    StoreClosedError,
)

__all__ = ["MemoryServer", "MemoryMetadataStore"]

_FIRST_SESSION_ID = 0x1_0000_0001


@dataclass(slots=True)
class _ZNode:
    data: bytes
    ctime_ms: int
    czxid: int
    ephemeral_owner: int | None = None
    version: int = 0
    cversion: int = 0
    mtime_ms: int = 0
    mzxid: int = 0
    children: set[str] = field(default_factory=set)

    def stat(self) -> Stat:
        return Stat(
            self.version,
            self.cversion,
            self.ctime_ms,
            self.mtime_ms,
            self.ephemeral_owner,
            len(self.children),
            len(self.data),
            self.czxid,
            self.mzxid,
        )


@dataclass(slots=True)
class _Session:
    id: int
    timeout: float
    client: MemoryMetadataStore
    expiry: TimerHandle | None = None


#: (path, kind) with kind in created / changed / deleted / child.
_Notification = tuple[str, str]


class MemoryServer:
    """The shared tree and the session table. ``MemoryServer.named("x")`` is the one behind ``memory:x``.

    ``clock`` times the tree (``ctime``/``mtime``), session expiry and every client's waits.
    """

    _registry: ClassVar[dict[str, MemoryServer]] = {}

    def __init__(self, name: str = "", clock: Clock = SYSTEM_CLOCK) -> None:
        self.name = name
        self.clock = clock
        self._zxid = 0
        self._nodes: dict[str, _ZNode] = {"/": _ZNode(b"", clock.now_ms(), 0)}
        self._sessions: dict[int, _Session] = {}
        self._ephemerals: dict[int, set[str]] = {}
        self._session_ids = itertools.count(_FIRST_SESSION_ID)
        self._clients: list[MemoryMetadataStore] = []

    @classmethod
    def named(cls, name: str) -> MemoryServer:
        """The server registered under ``name``, created on first use."""
        server = cls._registry.get(name)
        if server is None:
            server = cls._registry[name] = cls(name)
        return server

    @classmethod
    def forget(cls, name: str) -> None:
        """Drop the server registered under ``name`` (its data is lost)."""
        cls._registry.pop(name, None)

    # ------------------------------------------------------------------ inspection
    def paths(self) -> list[str]:
        """Every path in the tree, sorted (for tests and debugging)."""
        return sorted(self._nodes)

    def live_sessions(self) -> list[int]:
        return sorted(self._sessions)

    # ------------------------------------------------------------------ sessions
    def open_session(self, client: MemoryMetadataStore, timeout: float) -> int:
        sid = next(self._session_ids)
        self._sessions[sid] = _Session(sid, timeout, client)
        self._ephemerals[sid] = set()
        if client not in self._clients:
            self._clients.append(client)
        return sid

    def session_alive(self, sid: int | None) -> bool:
        return sid is not None and sid in self._sessions

    def start_expiry_timer(self, sid: int) -> None:
        """The client went silent: expire its session after its timeout unless it comes back."""
        session = self._sessions.get(sid)
        if session is None or session.expiry is not None:
            return
        session.expiry = self.clock.call_later(session.timeout, self.expire_session, sid)

    def cancel_expiry_timer(self, sid: int) -> None:
        session = self._sessions.get(sid)
        if session is not None and session.expiry is not None:
            session.expiry.cancel()
            session.expiry = None

    def close_session(self, sid: int) -> None:
        """A graceful close: the session's ephemerals are deleted at once."""
        self._end_session(sid, notify_owner=False)

    def expire_session(self, sid: int) -> None:
        """The server expires the session: ephemerals deleted, the owner is told (LOST)."""
        self._end_session(sid, notify_owner=True)

    def _end_session(self, sid: int, notify_owner: bool) -> None:
        session = self._sessions.pop(sid, None)
        if session is None:
            return
        if session.expiry is not None:
            session.expiry.cancel()
        notes: list[_Notification] = []
        for path in sorted(self._ephemerals.pop(sid, set()), reverse=True):
            if path in self._nodes:
                self._remove(path, notes)
        self._dispatch(notes, exclude=session.client)
        if notify_owner:
            session.client._on_session_expired(sid)

    def detach(self, client: MemoryMetadataStore) -> None:
        if client in self._clients:
            self._clients.remove(client)

    # ------------------------------------------------------------------ operations
    def _next_zxid(self) -> int:
        self._zxid += 1
        return self._zxid

    def _node(self, path: str) -> _ZNode:
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(f"No node at {path}", path)
        return node

    def read(self, path: str) -> Node:
        node = self._node(path)
        return Node(node.data, node.stat())

    def stat_or_none(self, path: str) -> Stat | None:
        node = self._nodes.get(path)
        return None if node is None else node.stat()

    def children_of(self, path: str) -> list[str]:
        return sorted(self._node(path).children)

    def create(
        self,
        sid: int,
        op: CreateOp,
        make_parents: bool,
        notes: list[_Notification],
        undo: list[Callable[[], None]],
    ) -> str:
        path = validate_path(op.path)
        if path == "/":
            raise NodeExistsError("The root node always exists", path)
        parent = parent_path(path)
        if parent not in self._nodes:
            if not make_parents:
                raise NoNodeError(f"Parent node {parent} does not exist", path)
            self.create(sid, CreateOp(parent), True, notes, undo)
        pnode = self._nodes[parent]
        if pnode.ephemeral_owner is not None:
            raise InvalidStoreOperationError(f"Ephemeral node {parent} cannot have children", path)
        if op.sequential:
            path = f"{path}{pnode.cversion:010d}"
        if path in self._nodes:
            raise NodeExistsError(f"Node {path} already exists", path)
        zxid, now = self._next_zxid(), self.clock.now_ms()
        owner = sid if op.ephemeral else None
        self._nodes[path] = _ZNode(bytes(op.data), now, zxid, owner, mtime_ms=now, mzxid=zxid)
        name = path.rsplit("/", 1)[1]
        pnode.children.add(name)
        pnode.cversion += 1
        if owner is not None:
            self._ephemerals[owner].add(path)
        notes += [(path, "created"), (parent, "child")]

        def revert() -> None:
            self._nodes.pop(path, None)
            pnode.children.discard(name)
            pnode.cversion -= 1
            if owner is not None:
                self._ephemerals.get(owner, set()).discard(path)

        undo.append(revert)
        return path

    def set(self, op: SetOp, notes: list[_Notification], undo: list[Callable[[], None]]) -> Stat:
        node = self._checked(op.path, op.version)
        before = (node.data, node.version, node.mtime_ms, node.mzxid)
        node.data = bytes(op.data)
        node.version += 1
        node.mtime_ms = self.clock.now_ms()
        node.mzxid = self._next_zxid()
        notes.append((op.path, "changed"))

        def revert() -> None:
            node.data, node.version, node.mtime_ms, node.mzxid = before

        undo.append(revert)
        return node.stat()

    def delete(self, op: DeleteOp, notes: list[_Notification], undo: list[Callable[[], None]]) -> None:
        if op.path == "/":
            raise InvalidStoreOperationError("The root node cannot be deleted", "/")
        node = self._checked(op.path, op.version)
        if node.children:
            raise NotEmptyError(f"Node {op.path} has children", op.path)
        parent = self._nodes[parent_path(op.path)]
        self._remove(op.path, notes)

        def revert() -> None:
            self._nodes[op.path] = node
            parent.children.add(op.path.rsplit("/", 1)[1])
            parent.cversion -= 1
            if node.ephemeral_owner is not None and node.ephemeral_owner in self._ephemerals:
                self._ephemerals[node.ephemeral_owner].add(op.path)

        undo.append(revert)

    def check(self, op: CheckOp) -> None:
        self._checked(op.path, op.version)

    def _checked(self, path: str, version: int) -> _ZNode:
        node = self._node(validate_path(path))
        if version != ANY_VERSION and version != node.version:
            raise BadVersionError(f"Version {version} expected but {path} is at version {node.version}", path)
        return node

    def _remove(self, path: str, notes: list[_Notification]) -> None:
        node = self._nodes.pop(path)
        parent = parent_path(path)
        pnode = self._nodes[parent]
        pnode.children.discard(path.rsplit("/", 1)[1])
        pnode.cversion += 1
        if node.ephemeral_owner is not None:
            self._ephemerals.get(node.ephemeral_owner, set()).discard(path)
        notes += [(path, "deleted"), (parent, "child")]

    # ------------------------------------------------------------------ notifications
    def _dispatch(self, notes: list[_Notification], exclude: MemoryMetadataStore | None = None) -> None:
        for client in list(self._clients):
            if client is not exclude:
                for path, kind in notes:
                    client._notify(path, kind)


class MemoryMetadataStore(MetadataStore):
    """One client session on a :class:`MemoryServer` (``open_store("memory:name")``)."""

    def __init__(
        self,
        server: MemoryServer | str = "default",
        *,
        session_timeout: float = 10.0,
        operation_timeout: float = 30.0,
    ) -> None:
        server = server if isinstance(server, MemoryServer) else MemoryServer.named(server)
        super().__init__(
            session_timeout=session_timeout, operation_timeout=operation_timeout, clock=server.clock
        )
        self.server = server
        self.url = f"memory:{self.server.name}"
        self._sid: int | None = None
        #: connected / disconnected / paused / crashed / closed
        self._conn = "closed"
        self._expired_while_away = False
        self._delay = 0.0
        self._resumed = asyncio.Event()
        self._resumed.set()
        self._data_watches: dict[str, list[WatchCallback]] = {}
        self._child_watches: dict[str, list[WatchCallback]] = {}
        self._held_events: list[tuple[WatchCallback, WatchEvent]] = []

    @property
    def session_id(self) -> int | None:
        return self._sid

    # ------------------------------------------------------------------ life cycle
    async def start(self) -> None:
        if self._conn != "closed":
            return
        self._sid = self.server.open_session(self, self.session_timeout)
        self._conn = "connected"
        self._set_session_state(SessionState.CONNECTED)

    async def close(self) -> None:
        if self._conn in ("closed", "crashed"):
            self._conn = "closed"
            self.server.detach(self)
            return
        self._conn = "closed"
        if self._sid is not None:
            self.server.close_session(self._sid)
        self._drop_watches(fire=False)
        self._resumed.set()
        self.server.detach(self)
        self._set_session_state(SessionState.CLOSED)

    # ------------------------------------------------------------------ fault injection
    def expire_session(self) -> None:
        """Have the server expire this client's session now (ephemerals vanish, LOST, then CONNECTED)."""
        if self._sid is not None:
            self.server.expire_session(self._sid)

    def drop_connection(self, duration: float | None = None) -> None:
        """Lose the connection (SUSPENDED); restore it after ``duration`` s (on the clock) if given."""
        if self._conn != "connected":
            return
        self._conn = "disconnected"
        self._drop_watches(fire=True)
        if self._sid is not None:
            self.server.start_expiry_timer(self._sid)
        self._set_session_state(SessionState.SUSPENDED)
        if duration is not None:
            self.clock.call_later(duration, self.restore_connection)

    def restore_connection(self) -> None:
        """Reconnect: CONNECTED with the same session, or LOST then CONNECTED if it expired meanwhile."""
        if self._conn != "disconnected":
            return
        self._conn = "connected"
        self._reconnect()

    def crash(self) -> None:
        """Die like a SIGKILLed process: no goodbye; the server expires the session after the timeout."""
        if self._conn in ("closed", "crashed"):
            return
        self._conn = "crashed"
        if self._sid is not None:
            self.server.start_expiry_timer(self._sid)
        self._data_watches.clear()
        self._child_watches.clear()
        self._held_events.clear()
        self._resumed.set()
        self._session_state = SessionState.CLOSED  # nobody is left to be told
        self.server.detach(self)

    def pause(self) -> None:
        """Freeze like a SIGSTOPped process: operations and events wait; the server hears nothing."""
        if self._conn != "connected":
            return
        self._conn = "paused"
        self._resumed.clear()
        if self._sid is not None:
            self.server.start_expiry_timer(self._sid)

    def resume(self) -> None:
        """Continue after :meth:`pause` (SUSPENDED, LOST, CONNECTED if the session expired meanwhile)."""
        if self._conn != "paused":
            return
        self._conn = "connected"
        if self._expired_while_away:
            self._set_session_state(SessionState.SUSPENDED)
        held, self._held_events = self._held_events, []
        loop = asyncio.get_running_loop()
        for callback, event in held:
            loop.call_soon(self._run_watch, callback, event)
        self._reconnect()
        self._resumed.set()

    def set_operation_delay(self, seconds: float) -> None:
        """Make every following operation wait ``seconds`` (on the clock) before it runs (0 to stop)."""
        self._delay = max(0.0, float(seconds))

    def _reconnect(self) -> None:
        if self._expired_while_away or not self.server.session_alive(self._sid):
            self._expired_while_away = False
            self._drop_watches(fire=True)
            self._set_session_state(SessionState.LOST)
            self._sid = self.server.open_session(self, self.session_timeout)
        elif self._sid is not None:
            self.server.cancel_expiry_timer(self._sid)
        self._set_session_state(SessionState.CONNECTED)

    def _on_session_expired(self, sid: int) -> None:
        """Called by the server when it expires our session."""
        if sid != self._sid or self._conn in ("closed", "crashed"):
            return
        if self._conn == "connected":
            self._drop_watches(fire=True)
            self._set_session_state(SessionState.LOST)
            asyncio.get_running_loop().call_soon(self._reopen_after_expiry, sid)
        else:  # disconnected or paused: learnt on reconnection / resume
            self._expired_while_away = True

    def _reopen_after_expiry(self, sid: int) -> None:
        if self._conn == "connected" and self._sid == sid:
            self._sid = self.server.open_session(self, self.session_timeout)
            self._set_session_state(SessionState.CONNECTED)

    # ------------------------------------------------------------------ watches
    def _notify(self, path: str, kind: str) -> None:
        if self._conn in ("closed", "crashed", "disconnected"):
            return
        if kind == "created":
            self._fire(self._data_watches, path, EventType.CREATED)
        elif kind == "changed":
            self._fire(self._data_watches, path, EventType.CHANGED)
        elif kind == "deleted":
            self._fire(self._data_watches, path, EventType.DELETED)
            self._fire(self._child_watches, path, EventType.DELETED)
        elif kind == "child":
            self._fire(self._child_watches, path, EventType.CHILD)

    def _fire(self, table: dict[str, list[WatchCallback]], path: str, kind: EventType) -> None:
        callbacks = table.pop(path, [])
        event = WatchEvent(kind, path)
        if self._conn == "paused":
            self._held_events += [(cb, event) for cb in callbacks]
            return
        loop = asyncio.get_running_loop()
        for callback in callbacks:
            loop.call_soon(self._run_watch, callback, event)

    def _drop_watches(self, fire: bool) -> None:
        tables = (self._data_watches, self._child_watches)
        dropped = [(path, cb) for table in tables for path, cbs in table.items() for cb in cbs]
        self._data_watches, self._child_watches = {}, {}
        if fire and dropped:
            loop = asyncio.get_running_loop()
            for path, callback in dropped:
                loop.call_soon(self._run_watch, callback, WatchEvent(EventType.NONE, path))

    def _run_watch(self, callback: WatchCallback, event: WatchEvent) -> None:
        if self._conn in ("closed", "crashed"):
            return
        try:
            callback(event)
        except Exception:
            import logging

            logging.getLogger(__name__).exception("Watch callback %r failed on %s", callback, event)

    def _arm(self, table: dict[str, list[WatchCallback]], path: str, watch: WatchCallback | None) -> None:
        if watch is not None:
            table.setdefault(path, []).append(watch)

    # ------------------------------------------------------------------ operations
    async def _gate(self, path: str | None) -> int:
        """Wait as the fault injection says; returns the session id the operation runs in."""
        self._check_open(path)
        if self._delay:
            await self.clock.sleep(self._delay)
        sid = self._sid
        if not self._resumed.is_set():
            await self._resumed.wait()
            if self._sid != sid:
                raise ConnectionLossError("Connection lost while the client was paused", path)
        return self._ready_session(path)

    async def _run(self, path: str | None, body: Callable[[int], Any]) -> Any:
        if self._delay or not self._resumed.is_set():

            async def op() -> Any:
                sid = await self._gate(path)
                return body(sid)

            return await self._with_timeout(op(), path)
        return body(self._ready_session(path))  # nothing to wait for: run now, no timer

    def _ready_session(self, path: str | None) -> int:
        self._check_open(path)
        if self._conn == "crashed":
            raise StoreClosedError("The client crashed", path)
        if self._conn == "disconnected":
            raise ConnectionLossError(f"Not connected to {self.url}", path)
        assert self._sid is not None
        return self._sid

    def _write(self, sid: int, ops: Sequence[Op], make_parents: bool = False) -> list[Any]:
        notes: list[_Notification] = []
        undo: list[Callable[[], None]] = []
        results: list[Any] = []
        for index, op in enumerate(ops):
            try:
                results.append(self._apply(sid, op, make_parents, notes, undo))
            except MetadataStoreError as exc:
                for revert in reversed(undo):
                    revert()
                if len(ops) > 1:
                    exc.op_index = index
                raise
        self.server._dispatch(notes)
        return results

    def _apply(
        self, sid: int, op: Op, make_parents: bool, notes: list[_Notification], undo: list[Callable[[], None]]
    ) -> Any:
        server = self.server
        if isinstance(op, CreateOp):
            _check_bytes(op.data, op.path)
            return server.create(sid, op, make_parents, notes, undo)
        if isinstance(op, SetOp):
            _check_bytes(op.data, op.path)
            return server.set(op, notes, undo)
        if isinstance(op, DeleteOp):
            server.delete(op, notes, undo)
            return None
        if isinstance(op, CheckOp):
            server.check(op)
            return None
        raise InvalidStoreOperationError(f"Unknown transaction operation {op!r}")

    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> str:
        op = CreateOp(validate_path(path), data, ephemeral, sequential)
        result = await self._run(path, lambda sid: self._write(sid, [op], make_parents))
        return str(result[0])

    async def get(self, path: str, *, watch: WatchCallback | None = None) -> Node:
        validate_path(path)

        def body(_sid: int) -> Node:
            node = self.server.read(path)
            self._arm(self._data_watches, path, watch)
            return node

        return await self._run(path, body)  # type: ignore[no-any-return]

    async def set(self, path: str, data: bytes, *, version: int = ANY_VERSION) -> Stat:
        op = SetOp(validate_path(path), data, version)
        result = await self._run(path, lambda sid: self._write(sid, [op]))
        return result[0]  # type: ignore[no-any-return]

    async def delete(self, path: str, *, version: int = ANY_VERSION) -> None:
        op = DeleteOp(validate_path(path), version)
        await self._run(path, lambda sid: self._write(sid, [op]))

    async def children(self, path: str, *, watch: WatchCallback | None = None) -> list[str]:
        validate_path(path)

        def body(_sid: int) -> list[str]:
            names = self.server.children_of(path)
            self._arm(self._child_watches, path, watch)
            return names

        return await self._run(path, body)  # type: ignore[no-any-return]

    async def exists(self, path: str, *, watch: WatchCallback | None = None) -> Stat | None:
        validate_path(path)

        def body(_sid: int) -> Stat | None:
            stat = self.server.stat_or_none(path)
            self._arm(self._data_watches, path, watch)
            return stat

        return await self._run(path, body)  # type: ignore[no-any-return]

    async def multi(self, ops: Sequence[Op]) -> list[Any]:
        ops = list(ops)
        for op in ops:
            validate_path(op.path)
        if not ops:
            return []
        return await self._run(None, lambda sid: self._write(sid, ops))  # type: ignore[no-any-return]


def _check_bytes(data: object, path: str) -> None:
    if not isinstance(data, (bytes, bytearray)):
        raise InvalidStoreOperationError(f"Node data must be bytes, got {type(data).__name__}", path)
