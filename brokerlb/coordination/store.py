"""The metadata-store interface: a ZooKeeper-shaped, asyncio API.

Every recipe (election, registry, ownership, bundle metadata) is written
against :class:`MetadataStore` only; backends are the embedded in-memory store
(:mod:`brokerlb.coordination.memory`) and ZooKeeper through kazoo
(:mod:`brokerlb.coordination.zookeeper`). One contract test suite runs against
both.

The model is ZooKeeper's, because Pulsar's layout and guarantees are:

* a tree of nodes addressed by absolute paths (``/loadbalance/brokers/b1:8080``);
  each node holds bytes and a :class:`Stat` whose ``version`` counts writes;
* **compare-and-set**: :meth:`MetadataStore.set` and :meth:`MetadataStore.delete`
  take an expected ``version`` (``-1`` = any) and raise
  :class:`~brokerlb.errors.BadVersionError` when it does not match;
* **ephemeral** nodes belong to the session that created them and vanish when the
  session ends (closed, or expired by the server after ``session_timeout``);
  ``Stat.ephemeral_owner`` is that session's id;
* **sequential** nodes get a 10-digit counter appended to their name;
* **one-shot watches**: ``get``/``exists``/``children`` take ``watch=callback``; the
  callback runs once on the event loop with a :class:`WatchEvent`, at the next
  change (or with ``EventType.NONE`` when the connection drops: the watch is gone and
  must be set again). :meth:`MetadataStore.watch_data` and
  :meth:`MetadataStore.watch_children` build persistent, session-proof watches on
  top (see :mod:`brokerlb.coordination.watches`);
* **session events**: CONNECTED, SUSPENDED (connection lost; the session may still
  be alive), LOST (the session expired: its ephemerals are gone; the store opens a
  new session and goes CONNECTED again) and CLOSED;
* **transactions**: :meth:`MetadataStore.multi` applies create / set / delete /
  check operations atomically.

Errors are the :class:`~brokerlb.errors.MetadataStoreError` subtree; each has a
``retriable`` flag (connection loss and timeouts are retriable, a lost
compare-and-set is not -- re-read and decide again).

>>> from brokerlb.coordination import open_store
>>> async def demo():
...     async with open_store("memory:doc") as store:
...         await store.create("/a", b"x")
...         data, stat = await store.get("/a")
...         await store.set("/a", b"y", version=stat.version)
...         return (await store.get("/a"))[0]
>>> import asyncio; asyncio.run(demo())
b'y'
"""

from __future__ import annotations

import abc
import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.errors import (
    InvalidStoreOperationError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    StoreClosedError,
)

if TYPE_CHECKING:
    from brokerlb.coordination.watches import ChildrenWatch, DataWatch

__all__ = [
    "SessionState",
    "SessionEvent",
    "EventType",
    "WatchEvent",
    "WatchCallback",
    "SessionListener",
    "Stat",
    "Node",
    "Op",
    "CreateOp",
    "SetOp",
    "DeleteOp",
    "CheckOp",
    "MetadataStore",
    "ANY_VERSION",
    "validate_path",
    "parent_path",
    "join_path",
]

logger = logging.getLogger(__name__)

#: ``version=ANY_VERSION`` makes set/delete unconditional.
ANY_VERSION = -1

T = TypeVar("T")


class SessionState(enum.Enum):
    """State of the store's session with the metadata service."""

    #: Connected; the session and its ephemerals are alive.
    CONNECTED = "connected"
    #: Connection lost; the session may still be alive on the server. Operations fail
    #: with ConnectionLoss; watches are dropped. Leaders must stop acting.
    SUSPENDED = "suspended"
    #: The session expired: its ephemeral nodes are gone. The store reconnects with a
    #: new session (CONNECTED follows); recipes must re-create their ephemerals.
    LOST = "lost"
    #: Not started, or closed.
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """A change of session state, delivered to session listeners on the event loop."""

    state: SessionState
    previous: SessionState
    #: Session id after the change (``None`` when there is no session).
    session_id: int | None

    @property
    def new_session(self) -> bool:
        """CONNECTED after LOST (or a first connect): ephemerals must be re-created."""
        return self.state is SessionState.CONNECTED and self.previous in (
            SessionState.LOST,
            SessionState.CLOSED,
        )


class EventType(enum.Enum):
    """What fired a one-shot watch (ZooKeeper's event types)."""

    CREATED = "created"
    DELETED = "deleted"
    CHANGED = "changed"
    CHILD = "child"
    #: The connection dropped or the session ended: the watch is gone.
    NONE = "none"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: EventType
    path: str


WatchCallback = Callable[[WatchEvent], None]
SessionListener = Callable[[SessionEvent], None]


@dataclass(frozen=True, slots=True)
class Stat:
    """A node's metadata (ZooKeeper's ``Stat``; times in ms since the epoch)."""

    #: Number of writes of the data since creation (0 after create).
    version: int
    #: Number of changes to the children.
    cversion: int
    ctime_ms: int
    mtime_ms: int
    #: Session id of the creator for an ephemeral node, ``None`` for a persistent one.
    ephemeral_owner: int | None
    num_children: int
    data_length: int
    #: Transaction ids of the creation and of the last data change (ZooKeeper zxids).
    czxid: int
    mzxid: int

    @property
    def is_ephemeral(self) -> bool:
        return self.ephemeral_owner is not None


class Node(NamedTuple):
    """A node's data and stat, as returned by :meth:`MetadataStore.get`."""

    data: bytes
    stat: Stat


# --------------------------------------------------------------------------- transactions


@dataclass(frozen=True, slots=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True, slots=True)
class SetOp:
    path: str
    data: bytes
    version: int = ANY_VERSION


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = ANY_VERSION


@dataclass(frozen=True, slots=True)
class CheckOp:
    path: str
    version: int


Op = CreateOp | SetOp | DeleteOp | CheckOp


# --------------------------------------------------------------------------- paths


def validate_path(path: str) -> str:
    """``path`` if it is a valid absolute path, else :class:`InvalidStoreOperationError`.

    Absolute, no trailing ``/`` (except the root), no empty, ``.`` or ``..`` segment,
    no NUL character -- ZooKeeper's rules.
    """
    if not isinstance(path, str) or not path.startswith("/"):
        raise InvalidStoreOperationError(f"Invalid path {path!r}: a path must start with '/'")
    if path == "/":
        return path
    if path.endswith("/"):
        raise InvalidStoreOperationError(f"Invalid path {path!r}: a path must not end with '/'")
    if "\x00" in path:
        raise InvalidStoreOperationError(f"Invalid path {path!r}: NUL character")
    for segment in path[1:].split("/"):
        if segment in ("", ".", ".."):
            raise InvalidStoreOperationError(f"Invalid path {path!r}: empty, '.' or '..' segment")
    return path


def parent_path(path: str) -> str:
    parent = path.rsplit("/", 1)[0]
    return parent or "/"


def join_path(*parts: str) -> str:
    """``join_path("/a", "b/c", "d")`` → ``"/a/b/c/d"``."""
    text = "/".join(p.strip("/") for p in parts if p.strip("/"))
    return "/" + text


# --------------------------------------------------------------------------- the interface


class MetadataStore(abc.ABC):
    """A client session with a metadata service. Use it from one asyncio event loop.

    Subclasses implement the abstract operations and call :meth:`_set_session_state`
    when the session changes. Everything else (session listeners, persistent
    watches, helpers) is shared.

    ``clock`` is what brokerlb waits on around this store: operation timeouts, and the
    recipes built on it (election leases and heartbeats, watch retries, metadata-update
    retries) take it from :attr:`clock`. The embedded store's sessions expire on its
    server's clock; ZooKeeper's sessions are timed by ZooKeeper.
    """

    #: The URL the store was opened with (``memory:name``, ``zk:host:port``).
    url: str

    def __init__(
        self, *, session_timeout: float, operation_timeout: float, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        if session_timeout <= 0:
            raise InvalidStoreOperationError(f"session_timeout must be positive, got {session_timeout}")
        self._session_timeout = float(session_timeout)
        self._operation_timeout = float(operation_timeout)
        self.clock = clock
        self._session_state = SessionState.CLOSED
        self._session_listeners: list[SessionListener] = []
        self._state_changed: asyncio.Event | None = None
        #: Monotonic time up to which the current session is known to be alive; ``None`` when the
        #: backend does not track it (the embedded store: its sessions live in this process).
        self._confirmed_until: float | None = None
        self._liveness_listeners: list[Callable[[float, float], None]] = []
        self._confirm_listeners: list[Callable[[float], None]] = []

    # ------------------------------------------------------------------ session
    @property
    def session_timeout(self) -> float:
        """Session timeout in seconds: how long the server keeps an unreachable session."""
        return self._session_timeout

    @property
    def operation_timeout(self) -> float:
        """Seconds an operation may take before :class:`OperationTimeoutError`."""
        return self._operation_timeout

    @property
    def session_state(self) -> SessionState:
        return self._session_state

    @property
    @abc.abstractmethod
    def session_id(self) -> int | None:
        """Id of the current session (the ``ephemeral_owner`` of nodes it creates)."""

    @property
    def connected(self) -> bool:
        return self._session_state is SessionState.CONNECTED

    # ------------------------------------------------------------------ session liveness
    def session_known_alive(self) -> bool:
        """Whether this process *knows* its session is alive now.

        A reply to a request sent at time *t* proves the server heard the session at or after *t*,
        so the session cannot expire before *t* + session timeout (the server counts the timeout
        from the last time it heard the client). A backend that tracks replies
        (:meth:`_confirm_session`) is known alive until then -- through a brief disconnection too,
        since the session outlives it -- and not after: a process frozen past its session (a GC
        pause, SIGSTOP) wakes up *not* knowing, before any notification of the loss reaches it.
        A backend that does not track replies is known alive while CONNECTED.
        """
        if self._session_state in (SessionState.LOST, SessionState.CLOSED):
            return False
        if self._confirmed_until is None:
            return self._session_state is SessionState.CONNECTED
        return self.clock.monotonic() < self._confirmed_until

    def session_confirmed_until(self) -> float:
        """Monotonic time up to which the session is known alive (``inf`` when not tracked)."""
        if self._confirmed_until is None:
            return float("inf") if self._session_state is SessionState.CONNECTED else float("-inf")
        return self._confirmed_until

    def add_liveness_listener(self, listener: Callable[[float, float], None]) -> Callable[[], None]:
        """``listener(lapsed_at, confirmed_at)`` when the session is confirmed again after a span in which
        this process did not know it alive (monotonic times); returns a remover."""
        self._liveness_listeners.append(listener)
        return lambda: (
            self._liveness_listeners.remove(listener) if listener in self._liveness_listeners else None
        )

    def add_confirmation_listener(self, listener: Callable[[float], None]) -> Callable[[], None]:
        """``listener(deadline)`` every time the session is confirmed further (a tracking backend's
        reply): the monotonic time it is now known alive until. Returns a remover."""
        self._confirm_listeners.append(listener)
        return lambda: (
            self._confirm_listeners.remove(listener) if listener in self._confirm_listeners else None
        )

    def _liveness_timeout(self) -> float:
        """The session timeout the server applies (backends with a negotiated one override this)."""
        return self._session_timeout

    def _confirm_session(self, sent_at: float, session_id: int | None) -> None:
        """A request sent at ``sent_at`` in session ``session_id`` was answered (backends call this)."""
        if session_id is None or session_id != self.session_id:
            return
        deadline = sent_at + self._liveness_timeout()
        previous = self._confirmed_until
        if previous is not None and deadline <= previous:
            return
        self._confirmed_until = deadline
        for confirmed in list(self._confirm_listeners):
            try:
                confirmed(deadline)
            except Exception:
                logger.exception("Confirmation listener %r failed", confirmed)
        now = self.clock.monotonic()
        if previous is not None and previous < now and sent_at >= previous:
            for listener in list(self._liveness_listeners):
                try:
                    listener(previous, now)
                except Exception:
                    logger.exception("Liveness listener %r failed", listener)

    def owns(self, stat: Stat | None) -> bool:
        """The node with ``stat`` is an ephemeral created by this store's current session."""
        return (
            stat is not None and stat.ephemeral_owner is not None and stat.ephemeral_owner == self.session_id
        )

    def add_session_listener(self, listener: SessionListener) -> Callable[[], None]:
        """Call ``listener(SessionEvent)`` on every session change; returns a remover."""
        self._session_listeners.append(listener)

        def remove() -> None:
            if listener in self._session_listeners:
                self._session_listeners.remove(listener)

        return remove

    def _set_session_state(self, state: SessionState) -> None:
        """Record a session change and tell the listeners (backends call this on the loop)."""
        previous = self._session_state
        if state is previous:
            return
        self._session_state = state
        event = SessionEvent(state, previous, self.session_id)
        logger.info(
            "Metadata store %s session %s -> %s (session 0x%x)",
            self.url,
            previous.value,
            state.value,
            event.session_id or 0,
        )
        if self._state_changed is not None:
            self._state_changed.set()
            self._state_changed = asyncio.Event()
        for listener in list(self._session_listeners):
            try:
                listener(event)
            except Exception:  # a listener's bug must not break the store
                logger.exception("Session listener %r failed on %s", listener, event)

    async def wait_for_state(self, state: SessionState, timeout: float | None = None) -> None:
        """Wait until the session is in ``state`` (:class:`OperationTimeoutError` on timeout)."""

        async def wait() -> None:
            while self._session_state is not state:
                if self._state_changed is None:
                    self._state_changed = asyncio.Event()
                await self._state_changed.wait()

        try:
            await self.clock.wait_for(wait(), timeout)
        except TimeoutError:
            raise OperationTimeoutError(
                f"Metadata store {self.url} did not reach {state.value} within {timeout} s "
                f"(now {self._session_state.value})"
            ) from None

    async def wait_connected(self, timeout: float | None = None) -> None:
        await self.wait_for_state(SessionState.CONNECTED, timeout)

    # ------------------------------------------------------------------ life cycle
    @abc.abstractmethod
    async def start(self) -> None:
        """Connect and open a session (CONNECTED)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close the session (its ephemerals are deleted at once) and release resources."""

    async def __aenter__(self) -> MetadataStore:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ operations
    @abc.abstractmethod
    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> str:
        """Create a node; returns its path (with the counter for a sequential node).

        Raises :class:`NodeExistsError`, or :class:`NoNodeError` when the parent is
        missing and ``make_parents`` is false. Parents are created persistent and empty.
        """

    @abc.abstractmethod
    async def get(self, path: str, *, watch: WatchCallback | None = None) -> Node:
        """Data and stat of a node; :class:`NoNodeError` if absent (no watch is set then)."""

    @abc.abstractmethod
    async def set(self, path: str, data: bytes, *, version: int = ANY_VERSION) -> Stat:
        """Replace the data if the node's version is ``version`` (or always with ``-1``)."""

    @abc.abstractmethod
    async def delete(self, path: str, *, version: int = ANY_VERSION) -> None:
        """Delete a node without children; :class:`NotEmptyError` if it has some."""

    @abc.abstractmethod
    async def children(self, path: str, *, watch: WatchCallback | None = None) -> list[str]:
        """Names (not paths) of the children, sorted; :class:`NoNodeError` if absent."""

    @abc.abstractmethod
    async def exists(self, path: str, *, watch: WatchCallback | None = None) -> Stat | None:
        """The node's stat or ``None``; the watch is set in both cases (fires on create)."""

    @abc.abstractmethod
    async def multi(self, ops: Sequence[Op]) -> list[Any]:
        """Apply ``ops`` atomically: all or none.

        Results, per op: the created path (create), the new :class:`Stat` (set),
        ``None`` (delete, check). On failure the error of the failing op is raised
        with ``op_index`` set, and nothing changed.
        """

    # ------------------------------------------------------------------ helpers
    async def get_or_none(self, path: str, *, watch: WatchCallback | None = None) -> Node | None:
        try:
            return await self.get(path, watch=watch)
        except NoNodeError:
            return None

    async def ensure_path(self, path: str) -> None:
        """Create ``path`` and its parents (persistent, empty) if missing."""
        validate_path(path)
        if path == "/" or await self.exists(path) is not None:
            return
        try:
            await self.create(path, b"", make_parents=True)
        except NodeExistsError:
            pass

    async def delete_recursive(self, path: str) -> None:
        """Delete ``path`` and everything below it; no error if it is absent."""
        validate_path(path)
        for _attempt in range(16):
            try:
                kids = await self.children(path)
            except NoNodeError:
                return
            await asyncio.gather(*(self.delete_recursive(join_path(path, k)) for k in kids))
            try:
                if path != "/":
                    await self.delete(path)
                return
            except NoNodeError:
                return
            except NotEmptyError:  # a child was added meanwhile: go round again
                continue
        raise NotEmptyError(f"{path} keeps gaining children; could not delete it", path)

    def watch_data(self, path: str, callback: Callable[[Node | None], None]) -> DataWatch:
        """A persistent watch: ``callback(Node | None)`` with the current value, then on every change.

        Survives connection loss and session expiry (it re-reads and re-arms). Await
        ``watch.start()`` to get the first delivery; ``watch.cancel()`` stops it.
        """
        from brokerlb.coordination.watches import DataWatch

        return DataWatch(self, path, callback)

    def watch_children(self, path: str, callback: Callable[[list[str] | None], None]) -> ChildrenWatch:
        """A persistent watch: ``callback(children | None)`` now and on every change of the children."""
        from brokerlb.coordination.watches import ChildrenWatch

        return ChildrenWatch(self, path, callback)

    # ------------------------------------------------------------------ for backends
    async def _with_timeout(self, awaitable: Awaitable[T], path: str | None) -> T:
        try:
            return await self.clock.wait_for(awaitable, self._operation_timeout)
        except TimeoutError:
            raise OperationTimeoutError(
                f"Metadata operation did not complete within {self._operation_timeout} s", path
            ) from None

    def _check_open(self, path: str | None = None) -> None:
        if self._session_state is SessionState.CLOSED:
            raise StoreClosedError(f"Metadata store {self.url} is closed", path)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r}, {self._session_state.value})"
