"""The broker registry: ``/loadbalance/brokers/{brokerId}`` ephemerals and membership events.

A broker *registers* by creating its ephemeral node holding its load report
(LocalBrokerData JSON -- the registry is data-agnostic: bytes, a JSON-able dict,
or any object with ``to_json()``). Pulsar's rules apply (:mod:`.lock`): a second
registration of the same id from another session is **refused**
(:class:`~brokerlb.errors.LockBusyError`), unless the stored value is identical
(an earlier incarnation of the same broker, replaced as Pulsar does). With
``wait_for_stale=seconds`` the broker instead waits for the other session's node
to expire -- what a restarted broker needs when its old session is still alive.

The node vanishes when the broker's session ends. After a session LOST the
registry re-registers by itself in the new session and says so
(``REREGISTERED``); if meanwhile another session took the id, it reports
``REGISTRATION_LOST``.

Every broker (leader or not) mirrors the membership with a watch-fed cache:
:meth:`BrokerRegistry.available_brokers` is a memory read, and listeners hear
``JOINED`` / ``UPDATED`` / ``LEFT``.

A node whose data is not a JSON object (empty, not JSON, a list, ...) is **unreadable**:
it is logged once per version of its data (WARNING, naming the path and why) and left
out of :meth:`~BrokerRegistry.available_brokers` until a readable report replaces it -- one
bad node must not stop refreshes, placements or shedding.

A broker's node is read through two decoded records, each made once per version of the node and
the same object until the broker writes again: :meth:`~BrokerRegistry.broker`
(:class:`~brokerlb.coordination.records.RegisteredBroker`: its URLs, listeners, draining) and
:meth:`~BrokerRegistry.report` (its ``LocalBrokerData``, decoded when first asked for: only
readers of load need it). Nothing else reads a registration's JSON.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from brokerlb.coordination.cache import TreeCache
from brokerlb.coordination.lock import EphemeralLock
from brokerlb.coordination.paths import BROKERS_ROOT, validate_broker_id
from brokerlb.coordination.records import RegisteredBroker, decode_json, encode_json
from brokerlb.coordination.store import MetadataStore, Node
from brokerlb.errors import (
    BrokerLBError,
    BrokerNotFoundError,
    CorruptMetadataError,
    InvalidInputError,
    LockBusyError,
    OperationTimeoutError,
)
from brokerlb.model import LocalBrokerData

__all__ = ["BrokerRegistry", "RegistryEvent", "RegistryEventKind"]

logger = logging.getLogger(__name__)


class RegistryEventKind(enum.Enum):
    #: Another (or this) broker appeared in the registry.
    JOINED = "joined"
    #: A broker rewrote its data (load report).
    UPDATED = "updated"
    #: A broker's node vanished (shut down, crashed, session expired).
    LEFT = "left"
    #: This broker registered.
    REGISTERED = "registered"
    #: This broker's node had vanished (session LOST) and was created again.
    REREGISTERED = "reregistered"
    #: This broker's id is now held by another session: it is no longer registered.
    REGISTRATION_LOST = "registration-lost"


@dataclass(frozen=True, slots=True)
class RegistryEvent:
    kind: RegistryEventKind
    broker_id: str
    data: bytes | None = None
    reason: str = ""


class BrokerRegistry:
    """Register this broker and follow the others, on ``root`` (``/loadbalance/brokers``)."""

    def __init__(self, store: MetadataStore, *, root: str = BROKERS_ROOT) -> None:
        self.store = store
        self.root = root
        self._cache = TreeCache(store, root, is_leaf=lambda _path, depth: depth == 1, max_depth=1)
        self._cache.add_listener(self._on_leaf)
        self._lock: EphemeralLock | None = None
        self._broker_id: str | None = None
        self._listeners: list[Callable[[RegistryEvent], None]] = []
        self._changed = asyncio.Event()
        self._known: set[str] = set()
        #: broker id -> its node's JSON object; unreadable nodes are absent
        self._reports: dict[str, dict[str, Any]] = {}
        self._brokers: dict[str, RegisteredBroker] = {}
        #: broker id -> (node mzxid, its load report or None when unreadable), decoded when asked for
        self._loads: dict[str, tuple[int, LocalBrokerData | None]] = {}
        #: path of an unreadable node -> the data version already logged
        self._bad: dict[str, int] = {}
        #: bumped at every change of a broker node (joined, rewritten, left)
        self.version = 0

    # ------------------------------------------------------------------ life cycle
    async def start(self) -> BrokerRegistry:
        """Start following the membership (returns once the current members are loaded)."""
        await self.store.ensure_path(self.root)
        await self._cache.start()
        return self

    async def close(self, *, unregister: bool = True) -> None:
        if unregister:
            await self.unregister()
        self._cache.close()

    # ------------------------------------------------------------------ this broker
    @property
    def broker_id(self) -> str | None:
        """The id this registry registered, if any."""
        return self._broker_id

    @property
    def is_registered(self) -> bool:
        return self._lock is not None and self._lock.held

    async def register(self, broker_id: str, data: Any, *, wait_for_stale: float = 0.0) -> None:
        """Create ``/loadbalance/brokers/{broker_id}`` holding ``data``.

        Raises :class:`LockBusyError` when another session holds the id (after
        waiting up to ``wait_for_stale`` seconds for it to vanish).
        """
        validate_broker_id(broker_id)
        if self._lock is not None and self._lock.held:
            if broker_id != self._broker_id:
                raise LockBusyError(
                    f"This registry already registered {self._broker_id}", self._path(broker_id)
                )
            await self.update(data)
            return
        lock = EphemeralLock(
            self.store,
            self._path(broker_id),
            encode_json(data),
            on_lost=self._on_registration_lost,
            on_reacquired=self._on_reregistered,
        )
        clock = self.store.clock
        deadline = clock.monotonic() + wait_for_stale
        while True:
            try:
                await lock.acquire()
                break
            except LockBusyError as exc:
                remaining = deadline - clock.monotonic()
                if remaining <= 0:
                    raise LockBusyError(
                        f"Broker {broker_id} is already registered by another session "
                        f"(0x{exc.owner_session or 0:x}); refusing a second registration",
                        lock.path,
                        owner_session=exc.owner_session,
                    ) from exc
                logger.warning(
                    "Broker node %s exists from session 0x%x; waiting up to %.1f s for it to expire",
                    lock.path,
                    exc.owner_session or 0,
                    remaining,
                )
                await self._wait_absent(lock.path, remaining)
        self._lock, self._broker_id = lock, broker_id
        logger.info("Registered broker %s at %s", broker_id, lock.path)
        self._emit(RegistryEvent(RegistryEventKind.REGISTERED, broker_id, lock.value))

    async def update(self, data: Any) -> None:
        """Rewrite this broker's data (e.g. a new load report)."""
        if self._lock is None or not self._lock.held:
            raise BrokerNotFoundError("This broker is not registered; call register() first")
        await self._lock.update(encode_json(data))

    async def unregister(self) -> None:
        """Delete this broker's node (graceful shutdown). Idempotent."""
        lock, self._lock = self._lock, None
        if lock is not None:
            await lock.release()
            logger.info("Unregistered broker %s", self._broker_id)

    # ------------------------------------------------------------------ membership
    def available_brokers(self) -> list[str]:
        """Ids of the registered brokers whose node is readable, sorted (a memory read)."""
        return sorted(self._reports)

    def broker_node(self, broker_id: str) -> Node | None:
        """The broker's node (data and stat) from the cache, or ``None``."""
        return self._cache.get(self._path(broker_id))

    def broker(self, broker_id: str) -> RegisteredBroker | None:
        """The broker's registration decoded (its URLs and listeners), or ``None`` (absent, unreadable)."""
        return self._brokers.get(broker_id)

    def registered_session(self) -> int | None:
        """The session this broker's own registration belongs to while it holds it (``None``: not
        registered) -- known from its write, without waiting for the watch."""
        lock = self._lock
        if lock is None or not lock.held:
            return None
        if lock.session_id is not None and lock.session_id != self.store.session_id:
            return None  # a node of an earlier session: re-registration under way
        return self.store.session_id

    def sessions(self) -> dict[str, int]:
        """Registered broker id -> the metadata session its registration belongs to (the node's
        ephemeral owner): the live incarnation of each broker (a memory read)."""
        out: dict[str, int] = {}
        for broker in self._reports:
            node = self._cache.get(self._path(broker))
            if node is not None and node.stat.ephemeral_owner is not None:
                out[broker] = node.stat.ephemeral_owner
        return out

    async def read_session(self, broker_id: str) -> int | None:
        """The session the broker's registration belongs to, read from the store now (``None``:
        not registered)."""
        stat = await self.store.exists(self._path(broker_id))
        return None if stat is None else stat.ephemeral_owner

    def report(self, broker_id: str) -> LocalBrokerData | None:
        """The broker's load report (``LocalBrokerData``), or ``None`` (absent, or not a readable
        report: logged once per version of the node). Decoded once per version of the node: the
        same object until the broker writes again (the leader's refresh reuses what it folded)."""
        node = self._cache.get(self._path(broker_id))
        value = self._reports.get(broker_id)
        if node is None or value is None:
            return None
        cached = self._loads.get(broker_id)
        if cached is None or cached[0] != node.stat.mzxid:
            cached = (node.stat.mzxid, _load_report(broker_id, value, self._path(broker_id)))
            self._loads[broker_id] = cached
        return cached[1]

    def add_listener(self, listener: Callable[[RegistryEvent], None]) -> Callable[[], None]:
        """``listener(RegistryEvent)`` on every membership and registration change; returns a remover."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    async def wait_for(self, predicate: Callable[[list[str]], bool], timeout: float = 10.0) -> list[str]:
        """Wait until ``predicate(available_brokers())`` holds."""

        async def wait() -> list[str]:
            while not predicate(self.available_brokers()):
                self._changed.clear()
                await self._changed.wait()
            return self.available_brokers()

        try:
            return await self.store.clock.wait_for(wait(), timeout)
        except TimeoutError:
            raise OperationTimeoutError(
                f"broker membership did not reach the expected state within {timeout} s "
                f"(now {self.available_brokers()})"
            ) from None

    # ------------------------------------------------------------------ internals
    def _path(self, broker_id: str) -> str:
        return f"{self.root}/{validate_broker_id(broker_id)}"

    async def _wait_absent(self, path: str, timeout: float) -> None:
        watch = self.store.watch_data(path, lambda _node: None)
        try:
            await watch.start()
            await watch.wait_delivered(lambda node: node is None, timeout=timeout)
        except OperationTimeoutError:
            pass
        finally:
            watch.cancel()

    def _on_leaf(self, path: str, node: Node | None) -> None:
        broker_id = path.rsplit("/", 1)[1]
        if node is None:
            event = RegistryEvent(RegistryEventKind.LEFT, broker_id)
        elif broker_id in self._known:
            event = RegistryEvent(RegistryEventKind.UPDATED, broker_id, node.data)
        else:
            event = RegistryEvent(RegistryEventKind.JOINED, broker_id, node.data)
        self.version += 1
        if node is None:
            self._known.discard(broker_id)
            self._reports.pop(broker_id, None)
            self._brokers.pop(broker_id, None)
            self._loads.pop(broker_id, None)
            self._bad.pop(path, None)
        else:
            self._known.add(broker_id)
            self._decode(path, broker_id, node)
        self._changed.set()
        self._emit(event)

    def _decode(self, path: str, broker_id: str, node: Node) -> None:
        try:
            report = decode_json(node.data, path)
            if not isinstance(report, dict):
                raise CorruptMetadataError(f"expected a JSON object, found {type(report).__name__}", path)
        except CorruptMetadataError as exc:
            self._brokers.pop(broker_id, None)
            if self._reports.pop(broker_id, None) is not None or node.stat.version != self._bad.get(path):
                logger.warning("Skipping the unreadable broker node %s (broker %s): %s", path, broker_id, exc)
            self._bad[path] = node.stat.version
            return
        self._bad.pop(path, None)
        self._reports[broker_id] = report
        try:
            self._brokers[broker_id] = RegisteredBroker.from_json(report)
        except InvalidInputError as exc:
            logger.warning("Broker %s registered unreadable URLs: %s", broker_id, exc)
            self._brokers.pop(broker_id, None)

    def _on_registration_lost(self, lock: EphemeralLock, reason: str) -> None:
        logger.error("Broker %s lost its registration: %s", self._broker_id, reason)
        self._emit(RegistryEvent(RegistryEventKind.REGISTRATION_LOST, self._broker_id or "", None, reason))

    def _on_reregistered(self, lock: EphemeralLock) -> None:
        logger.warning("Broker %s re-registered after its node vanished (session lost)", self._broker_id)
        self._emit(RegistryEvent(RegistryEventKind.REREGISTERED, self._broker_id or "", lock.value))

    def _emit(self, event: RegistryEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                logger.exception("Registry listener failed on %s", event)


def _load_report(broker_id: str, value: dict[str, Any], path: str) -> LocalBrokerData | None:
    """A registration's JSON as a load report, or ``None`` (logged) when it is not a readable
    ``LocalBrokerData``."""
    try:
        return LocalBrokerData.from_json(value, path)
    except (ValueError, RecursionError, BrokerLBError) as exc:
        logger.warning("Ignoring the unreadable load report of %s: %s", broker_id, exc)
        return None
