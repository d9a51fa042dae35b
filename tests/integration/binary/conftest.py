"""Three in-process brokers serving Pulsar's binary protocol, per-test namespaces, official clients.

The official client (``pulsar-client``, C++ core) blocks in its calls and runs its own threads, so
every call into it goes through ``asyncio.to_thread`` (:func:`off_loop`): the brokers' event loop
keeps running while the client waits.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import pytest
import pytest_asyncio

from brokerlb.admin import AsyncAdminClient
from brokerlb.testing.clusters import InProcessCluster, ProcessCluster, zookeeper_process_cluster
from brokerlb.testing.official_client import quiet_logger

pulsar = pytest.importorskip("pulsar")

T = TypeVar("T")

BINARY = {"statsUpdateFrequencyInSecs": 2}


async def off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking official-client call in a thread (the brokers' loop keeps serving)."""
    return await asyncio.to_thread(fn, *args, **kwargs)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster() -> AsyncIterator[InProcessCluster]:
    c = await InProcessCluster(3, BINARY).start()
    try:
        yield c
    finally:
        await c.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def namespace(cluster: InProcessCluster) -> AsyncIterator[str]:
    name = f"public/bin-{uuid.uuid4().hex[:8]}"
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(name, num_bundles=4)
    yield name


async def zk_process_cluster(zk_server: Any, overrides: dict[str, Any], prefix: str) -> ProcessCluster:
    """Three ``brokerlb broker`` processes on the test ZooKeeper, in a chroot of their own."""
    return await zookeeper_process_cluster(zk_server, 3, overrides, prefix=prefix)


def process_service_url(cluster: ProcessCluster) -> str:
    """``pulsar://`` naming every broker process (the client tries the next when one is down)."""
    return "pulsar://" + ",".join(u.removeprefix("pulsar://") for u in cluster.binary_urls)


def service_urls(cluster: InProcessCluster) -> dict[str, str]:
    """The two ways to name the cluster: ``pulsar://`` (binary lookup) and ``http://`` (HTTP lookup),
    each listing every broker (as Pulsar users list theirs): the client tries the next when one is down."""
    binary = [s.identity.pulsar_service_url.removeprefix("pulsar://") for s in cluster.services]
    web = [s.url.removeprefix("http://") for s in cluster.services]
    return {"pulsar": "pulsar://" + ",".join(binary), "http": "http://" + ",".join(web)}


@pytest_asyncio.fixture(loop_scope="module", params=["pulsar", "http"])
async def client(request: pytest.FixtureRequest, cluster: InProcessCluster) -> AsyncIterator[Any]:
    c = await off_loop(
        pulsar.Client,
        service_urls(cluster)[request.param],
        operation_timeout_seconds=30,
        logger=quiet_logger(),
    )
    try:
        yield c
    finally:
        await off_loop(c.close)
