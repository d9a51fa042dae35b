"""Bundle ownership: ``/namespace/{tenant}/{ns}/{range}`` ephemerals holding NamespaceEphemeralData.

Pulsar's ``OwnershipCache``, split in its two halves:

* :class:`OwnershipManager` -- this broker's ownerships. **Acquire** = create the
  ephemeral ownership node with this broker's URLs (Pulsar's ResourceLock rules,
  :mod:`.lock`); if another session owns the bundle, the answer names the current
  owner (that is how lookups find owners) instead of failing. **Disable** sets
  ``disabled=true`` while the bundle unloads (lookups then answer "is being
  unloaded"); **release** deletes the node. Ownership dies with the session; after
  a session LOST the manager re-creates the nodes that nobody else took
  (``REACQUIRED``) and reports the others ``LOST`` -- the broker must then close
  those bundles' topics.
* :class:`OwnershipCache` -- every broker's ownership, mirrored by watches on
  ``/namespace``, so owner lookups are memory reads
  (:meth:`OwnershipCache.get_owner`); :meth:`OwnershipCache.lookup_owner` falls
  back to a store read on a miss.

Single owner per bundle is the store's guarantee: one node per path, created by
one session.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from brokerlb.coordination.cache import TreeCache
from brokerlb.coordination.lock import EphemeralLock
from brokerlb.coordination.paths import (
    OWNERSHIP_ROOT,
    bundle_of_ownership_path,
    is_range_segment,
    ownership_path,
)
from brokerlb.coordination.records import NamespaceEphemeralData
from brokerlb.coordination.store import MetadataStore, Node, Op
from brokerlb.errors import (
    BadVersionError,
    ConnectionLossError,
    CorruptMetadataError,
    InvalidBundleRangeError,
    LockBusyError,
    MetadataStoreError,
    NoNodeError,
    OperationTimeoutError,
    OwnershipError,
)
from brokerlb.naming import NamespaceName
from brokerlb.ring.bundles import NamespaceBundle

__all__ = [
    "OwnerInfo",
    "AcquireResult",
    "OwnershipEvent",
    "OwnershipEventKind",
    "OwnershipCache",
    "OwnershipManager",
    "bundle_name",
]

logger = logging.getLogger(__name__)


def bundle_name(bundle: NamespaceBundle | str) -> str:
    """The canonical bundle name ``tenant/ns/0x…_0x…`` (validated)."""
    return str(bundle if isinstance(bundle, NamespaceBundle) else NamespaceBundle.parse(bundle))


@dataclass(frozen=True, slots=True)
class OwnerInfo:
    """Who owns a bundle, as stored in its ownership node."""

    bundle: str
    data: NamespaceEphemeralData
    #: Session id that created the node.
    session_id: int | None
    version: int

    @property
    def broker_id(self) -> str | None:
        return self.data.broker_id

    @property
    def disabled(self) -> bool:
        return self.data.disabled


@dataclass(frozen=True, slots=True)
class AcquireResult:
    """Answer to :meth:`OwnershipManager.try_acquire`: who owns the bundle now."""

    bundle: str
    owner: NamespaceEphemeralData
    #: This broker owns the bundle (it just took it, or already had it).
    acquired: bool
    owner_session: int | None


class OwnershipEventKind(enum.Enum):
    ACQUIRED = "acquired"
    DISABLED = "disabled"
    RELEASED = "released"
    #: The node vanished (session LOST) and another session took the bundle: stop serving it.
    LOST = "lost"
    #: The node vanished (session LOST) and was created again in the new session.
    REACQUIRED = "reacquired"


@dataclass(frozen=True, slots=True)
class OwnershipEvent:
    kind: OwnershipEventKind
    bundle: str
    reason: str = ""


# --------------------------------------------------------------------------- everyone's ownership


def _is_ownership_leaf(path: str, depth: int) -> bool:
    return depth >= 3 and is_range_segment(path.rsplit("/", 1)[1])


class OwnershipCache:
    """All brokers' bundle ownership, kept by watches on ``/namespace``."""

    def __init__(self, store: MetadataStore, *, root: str = OWNERSHIP_ROOT) -> None:
        self.store = store
        self.root = root
        self._tree = TreeCache(store, root, is_leaf=_is_ownership_leaf, max_depth=4)
        self._tree.add_listener(self._on_leaf)
        self._owners: dict[str, OwnerInfo] = {}
        self._listeners: list[Callable[[str, OwnerInfo | None], None]] = []

    async def start(self) -> OwnershipCache:
        """Start mirroring; returns once the current ownership has been loaded."""
        await self.store.ensure_path(self.root)
        await self._tree.start()
        return self

    def close(self) -> None:
        self._tree.close()
        self._owners.clear()

    async def settled(self) -> None:
        await self._tree.settled()

    # ------------------------------------------------------------------ reading
    def get_owner(self, bundle: NamespaceBundle | str) -> OwnerInfo | None:
        """The owner from memory (``None``: unowned, or not seen yet)."""
        return self._owners.get(bundle_name(bundle))

    async def lookup_owner(self, bundle: NamespaceBundle | str) -> OwnerInfo | None:
        """The owner from memory, else read from the store."""
        name = bundle_name(bundle)
        cached = self._owners.get(name)
        if cached is not None:
            return cached
        return await self.read_owner(name)

    async def read_owner(self, bundle: NamespaceBundle | str) -> OwnerInfo | None:
        """The owner as the store has it now (the cache may be a notification behind)."""
        name = bundle_name(bundle)
        path = ownership_path(name)
        node = await self.store.get_or_none(path)
        return None if node is None else _owner_info(name, node, path)

    def owners(self) -> dict[str, OwnerInfo]:
        """Every owned bundle → its owner (a copy)."""
        return dict(self._owners)

    def owned_by(self, broker_id: str) -> list[str]:
        return sorted(b for b, info in self._owners.items() if info.broker_id == broker_id)

    def namespace_owners(self, namespace: NamespaceName | str) -> dict[str, OwnerInfo]:
        prefix = f"{NamespaceName.parse(namespace)}/"
        return {
            b: info
            for b, info in self._owners.items()
            if b.startswith(prefix) and "/" not in b[len(prefix) :]
        }

    def add_listener(self, listener: Callable[[str, OwnerInfo | None], None]) -> Callable[[], None]:
        """``listener(bundle, OwnerInfo | None)`` whenever a bundle's owner changes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _on_leaf(self, path: str, node: Node | None) -> None:
        try:
            name = str(bundle_of_ownership_path(path))
        except (InvalidBundleRangeError, ValueError) as exc:
            logger.error("Ignoring unexpected node under %s: %s (%s)", self.root, path, exc)
            return
        info: OwnerInfo | None = None
        if node is not None:
            try:
                info = _owner_info(name, node, path)
            except CorruptMetadataError as exc:
                logger.error("Ignoring unreadable ownership node: %s", exc)
                return
            self._owners[name] = info
        else:
            self._owners.pop(name, None)
        for listener in list(self._listeners):
            try:
                listener(name, info)
            except Exception:
                logger.exception("Ownership listener failed for %s", name)


def _owner_info(name: str, node: Node, path: str) -> OwnerInfo:
    return OwnerInfo(
        name, NamespaceEphemeralData.from_bytes(node.data, path), node.stat.ephemeral_owner, node.stat.version
    )


# --------------------------------------------------------------------------- this broker's ownership


class OwnershipManager:
    """The bundles this broker owns, as ephemeral nodes holding ``self_data``."""

    def __init__(
        self,
        store: MetadataStore,
        self_data: NamespaceEphemeralData,
        *,
        ring_guard: Callable[[str], Awaitable[Op | None]] | None = None,
    ) -> None:
        if self_data.disabled:
            raise OwnershipError("self_data must describe the broker enabled (disabled=false)")
        self.store = store
        self.self_data = self_data
        #: ``ring_guard(bundle)``: the store check a bundle's acquisition is conditional on (the
        #: namespace's bundles unchanged since the bundle was found in them:
        #: :meth:`~brokerlb.coordination.BundleMetadata.ring_guard`); raises when it is not in them
        self._ring_guard = ring_guard
        self._enabled = self_data.to_bytes()
        self._disabled = self_data.with_disabled(True).to_bytes()
        self._locks: dict[str, EphemeralLock] = {}
        self._inflight: dict[str, asyncio.Future[AcquireResult]] = {}
        #: releases in progress: an acquisition of the same bundle waits for them (one generation of
        #: ownership ends before the next begins, else the old release deletes the node the new
        #: acquisition adopted)
        self._releasing: dict[str, asyncio.Future[None]] = {}
        self._listeners: list[Callable[[OwnershipEvent], None]] = []

    # ------------------------------------------------------------------ views
    def is_owned(self, bundle: NamespaceBundle | str) -> bool:
        """Held by this broker and not disabled (unloading)."""
        lock = self._lock_of(bundle)
        return lock is not None and lock.held and lock.value == self._enabled

    def serving(self, bundle: NamespaceBundle | str) -> bool:
        """Owned and enabled, by a node of the current session, *and* the session known alive now.

        The condition for accepting a publish or answering "I own it": a process that cannot confirm
        its session (frozen past it, cut off from the store longer than the session timeout) may
        have lost the bundle to another broker before any notification reaches it.
        """
        lock = self._lock_of(bundle)
        return (
            lock is not None
            and lock.current
            and lock.value == self._enabled
            and self.store.session_known_alive()
        )

    def session_confirmed(self) -> bool:
        """The store's session is known alive now (:meth:`MetadataStore.session_known_alive`)."""
        return self.store.session_known_alive()

    def epoch_of(self, bundle: NamespaceBundle | str) -> tuple[int | None, int | None]:
        """``(session id, epoch)`` of the ownership node held for ``bundle`` (the epoch is the node's
        creation transaction id; ``None`` until known)."""
        lock = self._locks.get(bundle_name(bundle))
        return (None, None) if lock is None else (lock.session_id, lock.epoch)

    def is_disabled(self, bundle: NamespaceBundle | str) -> bool:
        lock = self._locks.get(bundle_name(bundle))
        return lock is not None and lock.held and lock.value == self._disabled

    def owned_bundles(self) -> list[str]:
        """Bundles this broker holds (including disabled ones), sorted."""
        return sorted(b for b, lock in self._locks.items() if lock.held)

    def add_listener(self, listener: Callable[[OwnershipEvent], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    # ------------------------------------------------------------------ operations
    async def try_acquire(self, bundle: NamespaceBundle | str, *, guarded: bool = True) -> AcquireResult:
        """Own ``bundle`` if nobody does; otherwise report who does.

        ``guarded``: the creation of the ownership node is conditional on the ring guard (children
        of a split being committed are taken unguarded: they are not in the ring yet).
        """
        name = bundle_name(bundle)
        releasing = self._releasing.get(name)
        if releasing is not None:
            await asyncio.shield(releasing)
        lock = self._locks.get(name)
        if lock is not None and lock.held:
            return AcquireResult(
                name, self.self_data.with_disabled(lock.value == self._disabled), True, self.store.session_id
            )
        pending = self._inflight.get(name)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[AcquireResult] = asyncio.get_running_loop().create_future()
        self._inflight[name] = future
        try:
            result = await self._acquire(name, guarded)
            future.set_result(result)
            return result
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: awaiting callers get it, no "never retrieved" warning
            raise
        finally:
            del self._inflight[name]

    async def acquire_many(
        self, bundles: Iterable[NamespaceBundle | str], concurrency: int = 64, *, guarded: bool = True
    ) -> list[AcquireResult]:
        """:meth:`try_acquire` for each bundle, ``concurrency`` at a time; results in input order."""
        gate = asyncio.Semaphore(concurrency)

        async def one(b: NamespaceBundle | str) -> AcquireResult:
            async with gate:
                return await self.try_acquire(b, guarded=guarded)

        return list(await asyncio.gather(*(one(b) for b in bundles)))

    async def disable(self, bundle: NamespaceBundle | str) -> None:
        """Mark an owned bundle ``disabled`` (unloading): lookups stop sending clients here."""
        name = bundle_name(bundle)
        lock = self._owned_lock(name)
        await lock.update(self._disabled)
        self._emit(OwnershipEvent(OwnershipEventKind.DISABLED, name, "unloading"))

    async def release(self, bundle: NamespaceBundle | str) -> None:
        """Give the bundle up: delete its ownership node. No error if not owned."""
        name = bundle_name(bundle)
        lock = self._locks.pop(name, None)
        if lock is None:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._releasing[name] = done
        try:
            await lock.release()
        except MetadataStoreError:
            # not released (the store did not answer): the bundle is still ours, disabled or not,
            # and stays in the books so that a retry or the ownership watchdog releases it
            if lock.held and name not in self._locks:
                self._locks[name] = lock
            raise
        finally:
            if self._releasing.get(name) is done:
                del self._releasing[name]
            done.set_result(None)
        logger.info("Released ownership of %s", name)
        self._emit(OwnershipEvent(OwnershipEventKind.RELEASED, name))

    async def delete_unheld(self, bundle: NamespaceBundle | str) -> bool:
        """Delete ``bundle``'s ownership node if this session created it but this broker does not
        hold it (not in the books, not being taken or released): an acquisition the store did not
        answer (the connection dropped after ZooKeeper applied the create) leaves such a node. Only
        this session could ever delete it, and until then every lookup names this broker, which
        does not serve the bundle. ``True`` if a node was deleted."""
        name = bundle_name(bundle)
        if name in self._locks or name in self._inflight or name in self._releasing:
            return False
        path = ownership_path(name)
        node = await self.store.get_or_none(path)
        if node is None or not self.store.owns(node.stat):
            return False
        try:
            await self.store.delete(path, version=node.stat.version)
        except (NoNodeError, BadVersionError):
            return False  # gone or rewritten meanwhile: not the node looked at
        logger.warning("Deleted the ownership node of %s: this session created it but never held it", name)
        return True

    async def release_all(self) -> None:
        await asyncio.gather(*(self.release(b) for b in list(self._locks)))

    async def close(self, *, release: bool = True) -> None:
        """Release every bundle (graceful shutdown), or just forget them (``release=False``)."""
        if release:
            await self.release_all()
        for lock in self._locks.values():
            lock.abandon()
        self._locks.clear()

    # ------------------------------------------------------------------ internals
    def _lock_of(self, bundle: NamespaceBundle | str) -> EphemeralLock | None:
        """The lock of ``bundle`` if held here. A name found as it is is canonical already (the keys
        are), so the per-publish check skips parsing it; any other name is validated first."""
        if isinstance(bundle, str):
            lock = self._locks.get(bundle)
            if lock is not None:
                return lock
        return self._locks.get(bundle_name(bundle))

    def _owned_lock(self, name: str) -> EphemeralLock:
        lock = self._locks.get(name)
        if lock is None or not lock.held:
            raise OwnershipError(f"Bundle {name} is not owned by this broker")
        return lock

    async def _acquire(self, name: str, guarded: bool = True) -> AcquireResult:
        path = ownership_path(name)
        ring_guard = self._ring_guard if guarded else None
        unanswered = False
        for _attempt in range(4):
            lock = EphemeralLock(
                self.store,
                path,
                self._enabled,
                on_lost=self._on_lost,
                on_reacquired=self._on_reacquired,
                guard=(lambda: ring_guard(name)) if ring_guard is not None else None,
            )
            try:
                await lock.acquire()
            except LockBusyError:
                node = await self.store.get_or_none(path)
                if node is None:
                    continue  # the owner just left: try again
                owner = _owner_info(name, node, path)
                return AcquireResult(name, owner.data, False, owner.session_id)
            except (ConnectionLossError, OperationTimeoutError):
                # not answered: the create may have been applied all the same. Once the session is
                # back, try once more -- the lock adopts a node of this session, takes a free path,
                # or names the owner. (If the store stays away, the ownership watchdog deletes a
                # node left behind: delete_unheld.)
                if unanswered:
                    raise
                unanswered = True
                await self.store.wait_connected(timeout=self.store.session_timeout)
                continue
            self._locks[name] = lock
            logger.info("Acquired ownership of %s", name)
            self._emit(OwnershipEvent(OwnershipEventKind.ACQUIRED, name))
            return AcquireResult(name, self.self_data, True, self.store.session_id)
        raise LockBusyError(f"Ownership of {name} keeps changing hands; try again", path)

    def _bundle_of(self, lock: EphemeralLock) -> str:
        return str(bundle_of_ownership_path(lock.path))

    def _on_lost(self, lock: EphemeralLock, reason: str) -> None:
        name = self._bundle_of(lock)
        if self._locks.get(name) is lock:
            del self._locks[name]
        logger.warning("Lost ownership of %s: %s", name, reason)
        self._emit(OwnershipEvent(OwnershipEventKind.LOST, name, reason))

    def _on_reacquired(self, lock: EphemeralLock) -> None:
        name = self._bundle_of(lock)
        self._emit(OwnershipEvent(OwnershipEventKind.REACQUIRED, name, "ownership node re-created"))

    def _emit(self, event: OwnershipEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                logger.exception("Ownership listener failed on %s", event)
