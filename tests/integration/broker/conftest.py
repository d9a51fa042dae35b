"""Clusters for the end-to-end suite: every test runs on the embedded store (brokers in this process)
and on a real ZooKeeper (brokers as separate ``brokerlb broker`` processes).

The cluster is shared by the tests of this package (each test uses its own namespace); tests
that kill brokers build their own. Everything is checked over real HTTP and by reading the
metadata store with a client of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from brokerlb.coordination import MetadataStore, open_store
from brokerlb.testing.clusters import InProcessCluster, ProcessCluster, zookeeper_process_cluster

BACKENDS = [
    pytest.param("memory", id="memory"),
    pytest.param("zookeeper", id="zookeeper", marks=[pytest.mark.zookeeper, pytest.mark.slow]),
]


async def make_cluster(
    backend: str, request: pytest.FixtureRequest, brokers: int = 3, overrides: dict[str, Any] | None = None
) -> InProcessCluster | ProcessCluster:
    if backend == "memory":
        return await InProcessCluster(brokers, overrides).start()
    return await zookeeper_process_cluster(
        request.getfixturevalue("zk_server"), brokers, overrides, prefix="e2e"
    )


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
