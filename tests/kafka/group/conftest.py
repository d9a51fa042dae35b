"""Store services for the group-protocol tests: the embedded store and a real ZooKeeper."""

from __future__ import annotations

import uuid

import pytest

from brokerlb.coordination import MemoryMetadataStore, MemoryServer


class MemoryService:
    name = "memory"

    def __init__(self) -> None:
        self.server = MemoryServer(f"group-{uuid.uuid4().hex[:8]}")
        self.stores = []

    async def new_store(self, session_timeout: float = 1.0):
        store = MemoryMetadataStore(self.server, session_timeout=session_timeout, operation_timeout=10.0)
        self.stores.append(store)
        await store.start()
        return store

    async def close(self) -> None:
        for store in self.stores:
            await store.close()


class ZooKeeperService:
    name = "zookeeper"

    def __init__(self, zk_server) -> None:
        self.zk = zk_server
        self.chroot = f"/group-{uuid.uuid4().hex[:8]}"
        self.stores = []

    async def setup(self) -> None:
        from brokerlb.coordination.zookeeper import ZooKeeperMetadataStore

        async with ZooKeeperMetadataStore(self.zk.hosts, session_timeout=2.0) as root:
            await root.ensure_path(self.chroot)

    async def new_store(self, session_timeout: float = 2.0):
        from brokerlb.coordination.zookeeper import ZooKeeperMetadataStore

        store = ZooKeeperMetadataStore(
            f"{self.zk.hosts}{self.chroot}", session_timeout=session_timeout, operation_timeout=10.0
        )
        self.stores.append(store)
        await store.start()
        return store

    async def close(self) -> None:
        for store in self.stores:
            await store.close()


@pytest.fixture(params=["memory", pytest.param("zookeeper", marks=pytest.mark.zookeeper)])
async def service(request):
    if request.param == "memory":
        svc = MemoryService()
    else:
        svc = ZooKeeperService(request.getfixturevalue("zk_server"))
        await svc.setup()
    try:
        yield svc
    finally:
        await svc.close()


@pytest.fixture
async def memory_service():
    svc = MemoryService()
    try:
        yield svc
    finally:
        await svc.close()
