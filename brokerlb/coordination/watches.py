"""Persistent watches built on the store's one-shot watches.

A ZooKeeper watch fires once, and is dropped when the connection drops. These
classes keep a value up to date regardless: each change (or reconnection) makes
them re-read the node and re-arm the watch, then call the callback with the
**current** value if it differs from the last one delivered. Intermediate values
may be skipped (coalesced); the final value is never missed. Callbacks run on
the event loop and must not block.

>>> async def demo():
...     from brokerlb.coordination import open_store
...     seen = []
...     async with open_store("memory:watch-doc") as store:
...         w = await store.watch_data("/x", lambda n: seen.append(n and n.data)).start()
...         await store.create("/x", b"1")
...         await w.wait_delivered(lambda n: n is not None)
...         w.cancel()
...     return seen
>>> import asyncio; asyncio.run(demo())
[None, b'1']
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from brokerlb.errors import (
    MetadataStoreError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
    StoreClosedError,
)

if TYPE_CHECKING:
    from brokerlb.coordination.store import MetadataStore, Node, SessionEvent, WatchEvent

__all__ = ["DataWatch", "ChildrenWatch"]

logger = logging.getLogger(__name__)

V = TypeVar("V")
_UNSET = object()


class _PersistentWatch(Generic[V]):
    """Re-read, re-arm, deliver on change. Subclasses implement :meth:`_read` and :meth:`_key`."""

    def __init__(self, store: MetadataStore, path: str, callback: Callable[[V], None]) -> None:
        self.store = store
        self.path = path
        self._callback = callback
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._first: asyncio.Future[None] | None = None
        self._delivered = asyncio.Event()
        self._last_key: object = _UNSET
        self._last_value: V | None = None
        self._cancelled = False
        self._remove_listener: Callable[[], None] | None = None

    @property
    def value(self) -> V | None:
        """The last value delivered (``None`` before the first delivery)."""
        return self._last_value

    async def start(self) -> _PersistentWatch[V]:
        """Start watching; returns once the first value has been delivered."""
        if self._task is None:
            self._first = asyncio.get_running_loop().create_future()
            self._remove_listener = self.store.add_session_listener(self._on_session)
            self._task = asyncio.create_task(self._run(), name=f"watch {self.path}")
        assert self._first is not None
        await asyncio.shield(self._first)
        return self

    def cancel(self) -> None:
        """Stop watching; no callback runs after this returns."""
        self._cancelled = True
        if self._remove_listener is not None:
            self._remove_listener()
            self._remove_listener = None
        if self._task is not None:
            self._task.cancel()
        if self._first is not None and not self._first.done():
            self._first.cancel()

    async def wait_delivered(self, predicate: Callable[[V | None], bool], timeout: float = 10.0) -> V | None:
        """Wait until the last delivered value satisfies ``predicate``, up to ``timeout`` s on the store's clock."""

        async def wait() -> V | None:
            while not (self._last_key is not _UNSET and predicate(self._last_value)):
                self._delivered.clear()
                await self._delivered.wait()
            return self._last_value

        try:
            return await self.store.clock.wait_for(wait(), timeout)
        except TimeoutError:
            raise OperationTimeoutError(
                f"watch on {self.path} did not see the expected value within {timeout} s "
                f"(last: {self._last_value!r})",
                self.path,
            ) from None

    # ------------------------------------------------------------------ internals
    def _on_event(self, event: WatchEvent) -> None:
        self._wake.set()

    def _on_session(self, event: SessionEvent) -> None:
        from brokerlb.coordination.store import SessionState

        if event.state is SessionState.CONNECTED:
            self._wake.set()

    async def _read(self) -> V:
        raise NotImplementedError

    def _key(self, value: V) -> object:
        raise NotImplementedError

    async def _run(self) -> None:
        retry_wait = min(1.0, self.store.session_timeout / 2)
        while not self._cancelled:
            self._wake.clear()
            try:
                value = await self._read()
            except StoreClosedError:
                return
            except MetadataStoreError as exc:
                if not (exc.retriable or isinstance(exc, SessionExpiredError)):
                    logger.error("Watch on %s stopped: %s", self.path, exc)
                    return
                logger.debug("Watch on %s: %s; re-reading after reconnection", self.path, exc)
                with contextlib.suppress(TimeoutError):
                    await self.store.clock.wait_for(self._wake.wait(), retry_wait)
                continue
            self._deliver(value)
            await self._wake.wait()

    def _deliver(self, value: V) -> None:
        key = self._key(value)
        if key == self._last_key:
            return
        self._last_key = key
        self._last_value = value
        try:
            self._callback(value)
        except Exception:
            logger.exception("Watch callback for %s failed", self.path)
        self._delivered.set()
        if self._first is not None and not self._first.done():
            self._first.set_result(None)


class DataWatch(_PersistentWatch["Node | None"]):
    """``callback(Node | None)``: the node's data and stat, ``None`` while it does not exist."""

    async def _read(self) -> Node | None:
        while True:
            try:
                return await self.store.get(self.path, watch=self._on_event)
            except NoNodeError:
                if await self.store.exists(self.path, watch=self._on_event) is None:
                    return None
                # created between the two reads: read it again

    def _key(self, value: Node | None) -> object:
        return None if value is None else (value.stat.czxid, value.stat.mzxid, value.stat.version)


class ChildrenWatch(_PersistentWatch["list[str] | None"]):
    """``callback(children | None)``: sorted child names, ``None`` while the node does not exist."""

    async def _read(self) -> list[str] | None:
        while True:
            try:
                return sorted(await self.store.children(self.path, watch=self._on_event))
            except NoNodeError:
                if await self.store.exists(self.path, watch=self._on_event) is None:
                    return None

    def _key(self, value: list[str] | None) -> object:
        return None if value is None else tuple(value)
