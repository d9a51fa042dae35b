"""Backends for the coordination contract suite: every test runs on memory and on a real ZooKeeper.

The embedded store runs on a :class:`~brokerlb.clock.ManualClock`: sessions, leases and
heartbeats move only when a test moves the clock, so its variant is exact and never
sleeps. ZooKeeper's variant runs on real time. ``await backend.until(condition)`` is
the one way a test waits: on memory it steps the clock from timer to timer until the
condition holds; on ZooKeeper it polls the condition (the timeout only guards against
hanging).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from brokerlb.clock import SYSTEM_CLOCK, ManualClock
from brokerlb.coordination import MemoryMetadataStore, MemoryServer, MetadataStore
from brokerlb.coordination.store import WatchEvent
from brokerlb.testing.waiting import eventually

#: Where the embedded store's manual clock starts (an ordinary epoch time, not 0).
CLOCK_START_MS = 1_700_000_000_000

Condition = Callable[[], Any | Awaitable[Any]]


class MemoryBackend:
    """Stores share one fresh in-process server; expiry is fault injection."""

    name = "memory"
    session_timeout = 0.5

    def __init__(self) -> None:
        self.clock = ManualClock(CLOCK_START_MS)
        self.server = MemoryServer(f"contract-{uuid.uuid4().hex[:8]}", clock=self.clock)
        self.url = f"memory:{self.server.name}"
        self._stores: list[MetadataStore] = []

    async def new_store(self, session_timeout: float | None = None, start: bool = True) -> MetadataStore:
        store = MemoryMetadataStore(
            self.server, session_timeout=session_timeout or self.session_timeout, operation_timeout=10.0
        )
        self._stores.append(store)
        if start:
            await store.start()
        return store

    async def expire(self, store: MetadataStore) -> None:
        assert isinstance(store, MemoryMetadataStore)
        store.expire_session()

    async def until(self, condition: Condition, message: str = "condition", timeout: float = 10.0) -> Any:
        """Step the clock from timer to timer (at most ``timeout`` s of clock time) until ``condition()``."""
        return await self.clock.run_until(condition, within=timeout, message=message)

    def starve_loop(self, seconds: float) -> None:
        """Time passes while the event loop runs nothing (a GC pause, a blocking call): the clock
        jumps; the timers due meanwhile fire, and the tasks they wake run only afterwards."""
        self.clock.advance(seconds)

    async def close(self) -> None:
        for store in self._stores:
            await store.close()


class ZooKeeperBackend:
    """Stores are kazoo sessions on the shared test server, chrooted to a fresh node per test."""

    name = "zookeeper"
    session_timeout = 2.0
    clock = SYSTEM_CLOCK

    def __init__(self, zk_server) -> None:
        self.zk = zk_server
        self.chroot = f"/contract-{uuid.uuid4().hex[:8]}"
        self.url = f"zk:{zk_server.hosts}{self.chroot}"
        self._stores: list[MetadataStore] = []

    async def setup(self) -> None:
        from brokerlb.coordination.zookeeper import ZooKeeperMetadataStore

        root = ZooKeeperMetadataStore(self.zk.hosts, session_timeout=self.session_timeout)
        async with root:
            await root.ensure_path(self.chroot)

    async def new_store(self, session_timeout: float | None = None, start: bool = True) -> MetadataStore:
        from brokerlb.coordination.zookeeper import ZooKeeperMetadataStore

        store = ZooKeeperMetadataStore(
            f"{self.zk.hosts}{self.chroot}",
            session_timeout=session_timeout or self.session_timeout,
            operation_timeout=10.0,
        )
        self._stores.append(store)
        if start:
            await store.start()
        return store

    async def expire(self, store: MetadataStore) -> None:
        await store.force_session_expiry()  # type: ignore[attr-defined]

    async def until(self, condition: Condition, message: str = "condition", timeout: float = 30.0) -> Any:
        """Poll ``condition()`` until it holds (the timeout only guards against hanging)."""
        return await eventually(condition, timeout=timeout, message=message)

    def starve_loop(self, seconds: float) -> None:
        """Block the event loop for ``seconds`` (the fault itself, not a wait; kazoo's threads keep
        the session alive meanwhile)."""
        time.sleep(seconds)

    async def close(self) -> None:
        for store in self._stores:
            await store.close()


@pytest.fixture(params=["memory", pytest.param("zookeeper", marks=pytest.mark.zookeeper)])
async def backend(request):
    if request.param == "memory":
        b = MemoryBackend()
    else:
        b = ZooKeeperBackend(request.getfixturevalue("zk_server"))
        await b.setup()
    try:
        yield b
    finally:
        await b.close()


@pytest.fixture
async def store(backend):
    return await backend.new_store()


@pytest.fixture
async def other(backend):
    """A second session on the same backend (another broker)."""
    return await backend.new_store()


async def events_delivered(backend, watcher: MetadataStore, writer: MetadataStore) -> None:
    """Every watch event ``watcher`` is owed for what ``writer`` has done so far has been delivered.

    Both stores deliver one session's events in order (ZooKeeper sends them in zxid order on
    one connection; kazoo and the embedded store hand them to the loop in that order), so
    once an event caused *after* now has arrived, every earlier one has: no sleep needed to
    show that an event did *not* happen.
    """
    marker: list[WatchEvent] = []
    path = f"/events-delivered-{uuid.uuid4().hex[:8]}"
    assert await watcher.exists(path, watch=marker.append) is None
    await writer.create(path, b"")
    await backend.until(lambda: marker, message="the marker event")
    await writer.delete(path)
