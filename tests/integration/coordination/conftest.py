"""Backends for the coordination contract suite: every test runs on memory and on a real ZooKeeper."""

from __future__ import annotations

import uuid

import pytest

from brokerlb.coordination import MemoryMetadataStore, MemoryServer, MetadataStore


class MemoryBackend:
    """Stores share one fresh in-process server; expiry is fault injection."""

    name = "memory"
    session_timeout = 0.5

    def __init__(self) -> None:
        self.server = MemoryServer(f"contract-{uuid.uuid4().hex[:8]}")
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

    async def close(self) -> None:
        for store in self._stores:
            await store.close()


class ZooKeeperBackend:
    """Stores are kazoo sessions on the shared test server, chrooted to a fresh node per test."""

    name = "zookeeper"
    session_timeout = 2.0

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
