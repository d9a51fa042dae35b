"""An ephemeral node holding a value: Pulsar's ``ResourceLock``, on the store interface.

Broker registration and bundle ownership are both "the ephemeral node at this
path, holding my value". The rules are Pulsar's (``ResourceLockImpl``):

* **acquire** creates the ephemeral node. If it exists:

  - same value, created by this session → already ours;
  - same value, created by *another* session → a stale node of an earlier
    incarnation of ours (e.g. a restart within the session timeout): delete it
    (with its version) and create ours;
  - different value, this session → replace it;
  - different value, another session → :class:`~brokerlb.errors.LockBusyError`
    carrying the holder's session id;
  - a persistent node → :class:`~brokerlb.errors.LockBusyError`.

* **update** writes a new value with the held version (compare-and-set).
* **revalidation**: when the node disappears while held (deleted by someone, or
  the session was LOST and a new one opened), the lock tries to take it again with
  the same rules but one: a node with our value from another session is *not*
  treated as stale here (our own earlier session's ephemerals are already gone
  when we learn it expired), so it is a live twin, and we yield to it. Pulsar
  deletes it, and two live processes with the same value then take the node from
  each other forever. If another session holds it now, the lock is **lost**: the
  ``on_lost`` callback runs once and :attr:`EphemeralLock.lost` is set. While the
  connection is merely SUSPENDED the lock is kept (Pulsar does the same); callers
  that must not act without certainty also check that the store is connected.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable

from brokerlb.coordination.store import (
    CreateOp,
    MetadataStore,
    Node,
    Op,
    SessionEvent,
    SessionState,
    parent_path,
)
from brokerlb.coordination.watches import DataWatch
from brokerlb.errors import (
    BadVersionError,
    LockBusyError,
    MetadataStoreError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
    StoreClosedError,
)

__all__ = ["EphemeralLock", "LockState"]

logger = logging.getLogger(__name__)


class LockState(enum.Enum):
    INIT = "init"
    HELD = "held"
    RELEASING = "releasing"
    #: Released by us, or lost to another session.
    RELEASED = "released"


class EphemeralLock:
    """The ephemeral node ``path`` holding ``value`` for this store's session."""

    def __init__(
        self,
        store: MetadataStore,
        path: str,
        value: bytes,
        *,
        on_lost: Callable[[EphemeralLock, str], None] | None = None,
        on_reacquired: Callable[[EphemeralLock], None] | None = None,
        guard: Callable[[], Awaitable[Op | None]] | None = None,
    ) -> None:
        self.store = store
        #: a check the node's creation is conditional on (read anew for every creation): the node is
        #: created with it in one transaction, and a failed check is :class:`LockBusyError`
        self._guard = guard
        self.path = path
        self._value = bytes(value)
        self._version = -1
        self._state = LockState.INIT
        self._on_lost = on_lost
        self._on_reacquired = on_reacquired
        self._mutex = asyncio.Lock()
        self._watch: DataWatch | None = None
        self._remove_listener: Callable[[], None] | None = None
        self._revalidating: asyncio.Task[None] | None = None
        #: Set once the lock is released or lost.
        self.lost = asyncio.Event()
        #: Why the lock ended (``None`` while held).
        self.lost_reason: str | None = None
        #: The session that created the node we hold, and the node's creation transaction id (its
        #: *epoch*: every re-creation of the node has a higher one), known once the watch delivered it.
        self.session_id: int | None = None
        self.epoch: int | None = None
        #: The watch showed the node gone or another session's; cleared when revalidated.
        self._suspect = False

    # ------------------------------------------------------------------ views
    @property
    def value(self) -> bytes:
        return self._value

    @property
    def version(self) -> int:
        return self._version

    @property
    def state(self) -> LockState:
        return self._state

    @property
    def held(self) -> bool:
        return self._state is LockState.HELD

    @property
    def current(self) -> bool:
        """Held, the node was created by the store's current session, and nothing has shown otherwise
        since: the condition for acting as the holder (a node of an expired session is not ours even
        before the revalidation says so)."""
        return (
            self._state is LockState.HELD
            and not self._suspect
            and self.session_id is not None
            and self.session_id == self.store.session_id
        )

    # ------------------------------------------------------------------ operations
    async def acquire(self) -> None:
        """Take the lock, or raise :class:`LockBusyError` (another session holds it)."""
        async with self._mutex:
            if self._state is LockState.RELEASED:
                raise StoreClosedError(f"Lock on {self.path} was released; create a new one", self.path)
            await self._take(self._value, stale_rule=True)
            self._state = LockState.HELD
        await self._start_watching()
        logger.info("Acquired lock on %s (session 0x%x)", self.path, self.store.session_id or 0)

    async def update(self, value: bytes) -> None:
        """Write a new value into the held node (compare-and-set on the held version)."""
        async with self._mutex:
            if self._state is not LockState.HELD:
                raise LockBusyError(f"Lock on {self.path} is not held ({self._state.value})", self.path)
            try:
                stat = await self.store.set(self.path, bytes(value), version=self._version)
                self._value, self._version = bytes(value), stat.version
            except (BadVersionError, NoNodeError):
                await self._take(bytes(value), stale_rule=False)

    async def release(self) -> None:
        """Delete the node (if it is still ours) and stop watching. Idempotent."""
        async with self._mutex:
            if self._state in (LockState.RELEASED, LockState.INIT):
                self._finish("released")
                return
            self._state = LockState.RELEASING
            try:
                await self._delete_own_generation()
            except (NoNodeError, StoreClosedError, SessionExpiredError):
                pass  # the node is gone, or goes with the session
            except MetadataStoreError:
                # the store did not answer (connection lost, timeout): the node may still be ours.
                # Held again, so that a later release -- the caller's retry, the ownership watchdog
                # -- deletes it, or a revalidation finds it gone; not left half-released, where
                # nothing would ever delete a node its live session keeps.
                self._state = LockState.HELD
                raise
            self._finish("released")
        logger.info("Released lock on %s", self.path)

    async def _delete_own_generation(self) -> None:
        """Delete the node only if it is the one this lock created or adopted: same session and same
        creation transaction (epoch). A node re-created meanwhile -- by another session, or by this
        session for a newer lock on the same path -- is another generation's and stays (deleting by
        path, or by version alone, would remove it: every new node has version 0)."""
        node = await self.store.get_or_none(self.path)
        if node is None or not self.store.owns(node.stat):
            return
        if self.epoch is not None and node.stat.czxid != self.epoch:
            logger.info(
                "Not deleting %s: it is a newer generation (epoch %d, ours %d)",
                self.path,
                node.stat.czxid,
                self.epoch,
            )
            return
        try:
            await self.store.delete(self.path, version=node.stat.version)
        except BadVersionError:
            # our own node, written again between the read and the delete (an update in flight)
            again = await self.store.get_or_none(self.path)
            if again is not None and self.store.owns(again.stat) and again.stat.czxid == node.stat.czxid:
                await self.store.delete(self.path, version=again.stat.version)

    def abandon(self) -> None:
        """Forget the lock without touching the store (the process is going away)."""
        self._finish("abandoned")

    # ------------------------------------------------------------------ the rules
    async def _take(self, value: bytes, *, stale_rule: bool) -> None:
        """Create the node with ``value``, or apply Pulsar's revalidation rules to an existing one.

        ``stale_rule``: a node with ``value`` from another session is an earlier
        incarnation of ours (acquire) -- or a live twin to yield to (revalidation).
        """
        for _attempt in range(8):
            try:
                session = self.store.session_id
                await self._create(value)
                self._value, self._version = value, 0
                self.session_id, self.epoch, self._suspect = session, None, False
                return
            except NodeExistsError:
                pass
            node = await self.store.get_or_none(self.path)
            if node is None:
                continue  # vanished meanwhile: create again
            if await self._adopt_or_clear(node, value, stale_rule):
                return
        raise LockBusyError(f"Could not take the lock on {self.path}: it keeps changing", self.path)

    async def _create(self, value: bytes) -> None:
        check = await self._guard() if self._guard is not None else None
        if check is None:
            await self.store.create(self.path, value, ephemeral=True, make_parents=True)
            return
        await self.store.ensure_path(parent_path(self.path))
        try:
            await self.store.multi([check, CreateOp(self.path, value, ephemeral=True)])
        except (BadVersionError, NoNodeError) as exc:
            if getattr(exc, "op_index", 0) == 1:
                raise
            raise LockBusyError(
                f"Not creating {self.path}: its guard no longer holds ({exc})", self.path
            ) from exc

    async def _adopt_or_clear(self, node: Node, value: bytes, stale_rule: bool) -> bool:
        """True if ``node`` is ours to keep; False after deleting a stale one; LockBusy otherwise."""
        stat = node.stat
        if not stat.is_ephemeral:
            raise LockBusyError(f"Path {self.path} is already created as non-ephemeral", self.path)
        mine = self.store.owns(stat)
        if node.data == value and mine:
            self._value, self._version = value, stat.version
            self.session_id, self.epoch, self._suspect = stat.ephemeral_owner, stat.czxid, False
            return True
        if not mine and (node.data != value or not stale_rule):
            raise LockBusyError(
                f"Resource at {self.path} is already locked by session 0x{stat.ephemeral_owner or 0:x}",
                self.path,
                owner_session=stat.ephemeral_owner,
            )
        # Same value from an earlier session of ours (it may be expiring), or our own node with an
        # old value: delete it and create ours.
        logger.info("Deleting %s lock node at %s", "stale" if not mine else "outdated", self.path)
        try:
            await self.store.delete(self.path, version=stat.version)
        except (NoNodeError, BadVersionError):
            pass
        return False

    # ------------------------------------------------------------------ revalidation
    async def _start_watching(self) -> None:
        if self._watch is None:
            self._remove_listener = self.store.add_session_listener(self._on_session)
            self._watch = self.store.watch_data(self.path, self._on_node)
            await self._watch.start()

    def _on_node(self, node: Node | None) -> None:
        if self._state is not LockState.HELD:
            return
        # A different value written by our own session is our update in flight: not a loss.
        if node is None or not self.store.owns(node.stat):
            self._suspect = True
            self._schedule_revalidation("node deleted or taken by another session")
        elif self.epoch is None or node.stat.czxid != self.epoch:
            self.epoch, self.session_id = node.stat.czxid, node.stat.ephemeral_owner

    def _on_session(self, event: SessionEvent) -> None:
        if self._state is LockState.HELD and event.state is SessionState.CONNECTED and event.new_session:
            self._schedule_revalidation("session re-established")

    def _schedule_revalidation(self, why: str) -> None:
        if self._revalidating is None or self._revalidating.done():
            self._revalidating = asyncio.create_task(self._revalidate(why), name=f"revalidate {self.path}")

    async def _revalidate(self, why: str) -> None:
        async with self._mutex:
            if self._state is not LockState.HELD or not self.store.connected:
                return
            logger.info("Lock on %s was invalidated (%s): revalidating", self.path, why)
            try:
                await self._take(self._value, stale_rule=False)
            except LockBusyError as exc:
                logger.warning("Lost lock on %s: %s", self.path, exc)
                self._finish(f"taken by another session: {exc}")
                if self._on_lost is not None:
                    self._on_lost(self, self.lost_reason or "")
                return
            except MetadataStoreError as exc:
                # Connectivity trouble: keep assuming we hold it; the next reconnection retries.
                logger.warning(
                    "Could not revalidate lock on %s (%s); retrying on reconnection", self.path, exc
                )
                return
        logger.info("Revalidated lock on %s", self.path)
        if self._on_reacquired is not None:
            self._on_reacquired(self)

    def _finish(self, reason: str) -> None:
        self._state = LockState.RELEASED
        self.lost_reason = self.lost_reason or reason
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        if self._remove_listener is not None:
            self._remove_listener()
            self._remove_listener = None
        if self._revalidating is not None and self._revalidating is not asyncio.current_task():
            self._revalidating.cancel()
        self.lost.set()

    def __repr__(self) -> str:
        return f"EphemeralLock({self.path!r}, {self._state.value}, version={self._version})"
