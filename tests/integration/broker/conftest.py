"""Clusters for the end-to-end suite: every test runs on the embedded store (brokers in this process)
and on a real ZooKeeper (brokers as separate ``brokerlb broker`` processes).

The cluster is shared by the tests of this package (each test uses its own namespace); tests
that kill brokers build their own. Everything is checked over real HTTP and by reading the
metadata store with a client of its own.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from brokerlb.coordination import MetadataStore, open_store
from brokerlb.testing.clusters import InProcessCluster, ProcessCluster

BACKENDS = [
    pytest.param("memory", id="memory"),
    pytest.param("zookeeper", id="zookeeper", marks=[pytest.mark.zookeeper, pytest.mark.slow]),
]


async def make_cluster(
    backend: str, request: pytest.FixtureRequest, brokers: int = 3, overrides: dict[str, Any] | None = None
) -> InProcessCluster | ProcessCluster:
    if backend == "memory":
        return await InProcessCluster(brokers, overrides).start()
    zk = request.getfixturevalue("zk_server")
    chroot = f"/e2e-{uuid.uuid4().hex[:10]}"
    root = open_store(zk.url, session_timeout=10.0)
    await root.start()
    try:
        await root.ensure_path(chroot)
    finally:
        await root.close()
    return await ProcessCluster(f"zk:{zk.hosts}{chroot}", brokers, overrides).start()


@pytest_asyncio.fixture(scope="package", loop_scope="package", params=BACKENDS)
async def cluster(request: pytest.FixtureRequest) -> AsyncIterator[InProcessCluster | ProcessCluster]:
    c = await make_cluster(request.param, request)
    try:
        yield c
    finally:
        await c.stop()


@pytest_asyncio.fixture(scope="package", loop_scope="package")
async def store(cluster: InProcessCluster | ProcessCluster) -> AsyncIterator[MetadataStore]:
    """A metadata-store client of the test's own (not one of the brokers')."""
    s = open_store(cluster.store_url, session_timeout=10.0)
    await s.start()
    try:
        yield s
    finally:
        await s.close()
