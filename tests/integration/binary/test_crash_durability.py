"""Crashes lose nothing acknowledged: three ``brokerlb broker`` processes on a real ZooKeeper and a
shared storage tier (the embedded SQLite directory, or a real PostgreSQL), the official client's
producers and durable subscriptions, and SIGKILLs -- of the owner of busy topics mid-stream, of
the source of a transfer while it runs, of the destination of a transfer. Ledgers roll over every
50 entries, so kills land during rollovers too. Every message acknowledged to a producer is
received by every durable subscription after the clients reconnect (duplicates counted; losses
must be zero).
"""

from __future__ import annotations

import asyncio
import os
import random
from typing import Any

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.errors import BrokerLBError
from brokerlb.testing.clusters import ProcessCluster, zookeeper_process_cluster
from brokerlb.testing.official_client import ConsumerLoad, ProducerLoad, delivery_report, quiet_logger
from brokerlb.testing.waiting import eventually

from .conftest import off_loop, process_service_url, pulsar
from .test_e2e_planned_moves import keep_logs

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.asyncio(loop_scope="function")]

TOPICS = 4
RATE = 100  # messages/s per topic
#: the faults, one after another on one cluster (a fresh broker joins after each)
FAULTS = ("owner", "transfer-source", "transfer-destination", "owner")
GUARD = 60.0
OVERRIDES = {
    "metadataStoreSessionTimeoutMillis": 5000,
    "statsUpdateFrequencyInSecs": 2,
    "managedLedgerMaxEntriesPerLedger": 50,
    "managedLedgerMinLedgerRolloverTimeMinutes": 0,
}


async def owner_index(cluster: ProcessCluster, topic: str) -> int:
    alive = await living(cluster)
    async with AsyncAdminClient(cluster.urls[alive[-1]]) as admin:
        answer = await admin.lookup_topic(topic)
    url = answer["httpUrl"].rstrip("/")
    return next(i for i, u in enumerate(cluster.urls) if u.rstrip("/") == url)


async def living(cluster: ProcessCluster) -> list[int]:
    return [i for i, code in enumerate(cluster.returncodes()) if code is None]


async def fault(cluster: ProcessCluster, kind: str, topic: str, namespace: str, rng: random.Random) -> None:
    """One fault of ``kind``; then a fresh broker joins, so three are alive again."""
    owner = await owner_index(cluster, topic)
    if kind == "owner":
        await cluster.kill(owner)
    else:
        others = [i for i in await living(cluster) if i != owner]
        destination = rng.choice(others)
        async with AsyncAdminClient(cluster.urls[owner]) as admin:
            bundle = (await admin.topic_bundle_range(topic)).strip('"')
            move = asyncio.ensure_future(
                admin.unload_bundle(namespace, bundle, destination_broker=cluster.broker_ids[destination])
            )
            await asyncio.sleep(rng.uniform(0.0, 0.05))  # the fault lands somewhere inside the move
            await cluster.kill(owner if kind == "transfer-source" else destination)
            try:
                await move
            except BrokerLBError:
                pass  # the move could not finish: the broker it needed died
    await cluster.add_broker()


async def test_sigkills_lose_no_acknowledged_message(zk_server: Any, capsys: Any) -> None:
    cluster = await zookeeper_process_cluster(zk_server, 3, OVERRIDES, prefix="crash")
    namespace = "public/crash"
    clients: list[Any] = []
    producers: list[ProducerLoad] = []
    consumers: list[ConsumerLoad] = []
    rng = random.Random(int(os.environ.get("BROKERLB_CRASH_SEED", "25")))
    try:
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(namespace, num_bundles=4)
        topics = [f"persistent://{namespace}/t{i}" for i in range(TOPICS)]
        for _ in range(2):
            clients.append(
                await off_loop(
                    pulsar.Client,
                    process_service_url(cluster),
                    operation_timeout_seconds=120,
                    logger=quiet_logger(),
                )
            )
        for topic in topics:
            consumer = ConsumerLoad(
                clients[1], topic, "durable", consumer_options={"consumer_type": pulsar.ConsumerType.Shared}
            )
            consumer.start()
            consumers.append(consumer)
        for consumer in consumers:
            await off_loop(consumer.started.wait, GUARD)
            assert consumer.failure is None, consumer.failure
        for i, topic in enumerate(topics):
            producer = ProducerLoad(clients[0], topic, f"t{i}", rate=RATE, batching=i % 2 == 1)
            producer.start()
            producers.append(producer)
        for producer in producers:
            await off_loop(producer.started.wait, GUARD)
            assert producer.failure is None, producer.failure
        for n, kind in enumerate(FAULTS):
            before = sum(len(p.acked) for p in producers)
            await eventually(
                lambda b=before: sum(len(p.acked) for p in producers) >= b + 200, GUARD, message="traffic"
            )
            await fault(cluster, kind, topics[n % TOPICS], namespace, rng)
        after = sum(len(p.acked) for p in producers)
        await eventually(
            lambda: sum(len(p.acked) for p in producers) >= after + 200, GUARD, message="recovered"
        )
    except BaseException:
        keep_logs(cluster)
        raise
    finally:
        for producer in producers:
            producer.finish()
        for producer in producers:
            await off_loop(producer.join, GUARD)
    try:
        by_topic = {p.topic: p for p in producers}
        await eventually(
            lambda: all(by_topic[c.topic].acked <= c.snapshot().keys() for c in consumers),
            GUARD,
            message="every subscription received every acknowledged message",
        )
    finally:
        for consumer in consumers:
            consumer.finish()
        for consumer in consumers:
            await off_loop(consumer.join, GUARD)
        for client in clients:
            await off_loop(client.close)
        await cluster.stop()
    reports = [
        delivery_report(by_topic[c.topic].acked, c.received, by_topic[c.topic].sent) for c in consumers
    ]
    with capsys.disabled():
        print(
            f"\n{len(FAULTS)} SIGKILLs ({', '.join(FAULTS)}), {sum(len(p.acked) for p in producers)} acknowledged, "
            f"{sum(r.received for r in reports)} received, {sum(r.duplicates for r in reports)} duplicates, "
            f"{sum(len(r.lost) for r in reports)} lost"
        )
    assert all(r.ok for r in reports), [r for r in reports if not r.ok]
