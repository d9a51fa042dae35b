"""``brokerlb standalone --data-dir``: a stopped (or killed) standalone started again on its
directory has its tenants, namespaces, policies, topics, messages and subscriptions, and consumers
go on from their positions (official client)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.testing.official_client import quiet_logger
from brokerlb.testing.standalone_process import StandaloneProcess

pulsar = pytest.importorskip("pulsar")

GUARD_MS = 30_000  # receive timeout: only guards against hanging
TOPIC = "persistent://acme/app/orders"


def produce(url: str, start: int, count: int) -> None:
    client = pulsar.Client(url, logger=quiet_logger())
    try:
        producer = client.create_producer(TOPIC, batching_enabled=False)
        for i in range(start, start + count):
            producer.send(f"m{i}".encode())  # returns once the broker's receipt came: committed
    finally:
        client.close()


def consume(url: str, count: int, *, until: set[str] | None = None) -> list[str]:
    """Receive and acknowledge ``count`` messages -- or, with ``until``, as many as it takes to have
    seen all of those (at most 50 more: a crash may redeliver what was acknowledged before it)."""
    client = pulsar.Client(url, logger=quiet_logger())
    try:
        consumer = client.subscribe(TOPIC, "sub", consumer_type=pulsar.ConsumerType.Shared)
        got: list[str] = []
        missing = set(until or ())
        while len(got) < count or (missing and len(got) < count + 50):
            message = consumer.receive(GUARD_MS)
            got.append(message.data().decode())
            missing.discard(got[-1])
            consumer.acknowledge(message)
        consumer.close()  # flushes the acknowledgements
        return got
    finally:
        client.close()


async def prepare(standalone: StandaloneProcess) -> None:
    async with AsyncAdminClient(standalone.urls[0]) as admin:
        await admin.create_tenant("acme", allowed_clusters=["standalone"])
        await admin.create_namespace("acme/app", num_bundles=8)
    await asyncio.to_thread(consume, standalone.binary_urls[0], 0)  # the subscription exists
    await asyncio.to_thread(produce, standalone.binary_urls[0], 0, 50)
    assert await asyncio.to_thread(consume, standalone.binary_urls[0], 20) == [f"m{i}" for i in range(20)]


async def everything_is_back(standalone: StandaloneProcess) -> dict[str, Any]:
    async with AsyncAdminClient(standalone.urls[0]) as admin:
        assert "acme" in await admin.get_tenants()
        assert "acme/app" in await admin.get_namespaces("acme")
        assert (await admin.get_bundles("acme/app"))["numBundles"] == 8
    return {}


@pytest.mark.parametrize("how", ["stop", "kill"])
async def test_a_restarted_standalone_keeps_everything(tmp_path: Any, how: str) -> None:
    data = tmp_path / "data"
    first = await StandaloneProcess(2, data_dir=data).start()
    try:
        await prepare(first)
    finally:
        if how == "kill":
            await first.kill()
        await first.stop()
    second = await StandaloneProcess(2, data_dir=data).start()
    try:
        await everything_is_back(second)
        rest = [f"m{i}" for i in range(20, 50)]
        if how == "stop":  # a clean stop persisted the cursor: the consumer goes on from its position
            assert await asyncio.to_thread(consume, second.binary_urls[0], 30) == rest
        else:  # a crash may redeliver acknowledgements not yet persisted (at least once), loses nothing
            got = await asyncio.to_thread(consume, second.binary_urls[0], 30, until=set(rest))
            assert set(rest) <= set(got) <= {f"m{i}" for i in range(50)}
        await asyncio.to_thread(produce, second.binary_urls[0], 50, 5)
        assert await asyncio.to_thread(consume, second.binary_urls[0], 5) == [f"m{i}" for i in range(50, 55)]
    finally:
        await second.stop()
