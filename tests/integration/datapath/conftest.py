"""A shared in-process cluster of 3 brokers with the WebSocket data path on, and per-test namespaces."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest_asyncio

from brokerlb.admin import AsyncAdminClient
from brokerlb.testing.clusters import InProcessCluster

DATA_PATH = {"webSocketServiceEnabled": True, "statsUpdateFrequencyInSecs": 2}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster() -> AsyncIterator[InProcessCluster]:
    c = await InProcessCluster(3, DATA_PATH).start()
    try:
        yield c
    finally:
        await c.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def namespace(cluster: InProcessCluster) -> AsyncIterator[str]:
    name = f"public/dp-{uuid.uuid4().hex[:8]}"
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(name, num_bundles=4)
    yield name
