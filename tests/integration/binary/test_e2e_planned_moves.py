"""End to end on a real ZooKeeper with three ``brokerlb broker`` processes: the official client's
producers and consumers at skewed rates, the leader shedding (each shed is a transfer), and at least
100 planned moves by the operator (unloads and transfers of random bundles). Every message acknowledged
to a producer is received by every durable subscription; duplicates are counted and printed, losses
must be zero.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import tempfile
from typing import Any

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.errors import BrokerLBError
from brokerlb.testing.clusters import ProcessCluster
from brokerlb.testing.official_client import ConsumerLoad, ProducerLoad, delivery_report, quiet_logger
from brokerlb.testing.waiting import eventually

from .conftest import off_loop, process_service_url, pulsar, zk_process_cluster

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.asyncio(loop_scope="function")]

TOPICS = 8
#: messages/s per topic: skewed, the first topics carry most of the traffic
RATES = [160, 80, 40, 30, 20, 15, 10, 5]
SUBSCRIPTIONS = ("audit", "billing")
PLANNED_MOVES = 100
GUARD = 120.0

OVERRIDES = {
    "metadataStoreSessionTimeoutMillis": 10000,
    "statsUpdateFrequencyInSecs": 3,
    "loadBalancerReportUpdateMinIntervalMillis": 500,
    "loadBalancerHostUsageCheckIntervalMinutes": 0.01,
    "loadBalancerSheddingIntervalMinutes": 0.05,
    "loadBalancerSheddingGracePeriodMinutes": 0.1,
    "loadBalancerLoadSheddingStrategy": "UniformLoadShedder",
    "minUnloadMessage": 10,
    "minUnloadMessageThroughput": 500,
}


async def zk_cluster(zk_server: Any) -> ProcessCluster:
    return await zk_process_cluster(zk_server, OVERRIDES, "binary-e2e")


async def planned_moves(cluster: ProcessCluster, namespace: str, count: int, seed: int) -> dict[str, int]:
    """``count`` unloads and transfers of random bundles of the namespace, one after another."""
    rng = random.Random(seed)
    done = {"unload": 0, "transfer": 0, "refused": 0}
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        while done["unload"] + done["transfer"] < count:
            bundles = (await admin.get_bundles(namespace))["boundaries"]
            ranges = [f"{a}_{b}" for a, b in zip(bundles, bundles[1:], strict=False)]
            bundle = rng.choice(ranges)
            transfer = rng.random() < 0.5
            destination = rng.choice(cluster.broker_ids) if transfer else None
            try:
                await admin.unload_bundle(namespace, bundle, destination_broker=destination)
                done["transfer" if transfer else "unload"] += 1
            except BrokerLBError:  # e.g. the destination already owns it, or the leader's shedding moved it
                done["refused"] += 1
    return done


async def test_a_hundred_planned_moves_under_skewed_traffic_lose_nothing(
    zk_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = await zk_cluster(zk_server)
    try:
        await _run(cluster, capsys)
    except BaseException:
        keep_logs(cluster)  # a failure before the traffic ended: the cluster still runs
        raise
    finally:
        await cluster.stop()  # idempotent: also after a failure before the traffic ended


def keep_logs(cluster: ProcessCluster) -> None:
    """Copy the brokers' logs where they outlive the cluster (its stop deletes them)."""
    kept = tempfile.mkdtemp(prefix="brokerlb-e2e-logs-")
    copied = 0
    for i in range(len(cluster.urls)):
        if cluster.log_path(i).exists():
            shutil.copy(cluster.log_path(i), kept)
            copied += 1
    if copied:
        print(f"broker logs kept in {kept}")
    else:
        os.rmdir(kept)


async def _run(cluster: ProcessCluster, capsys: pytest.CaptureFixture[str]) -> None:
    namespace = "public/e2e-moves"
    clients: list[Any] = []
    producers: list[ProducerLoad] = []
    consumers: list[ConsumerLoad] = []
    try:
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(namespace, num_bundles=8)
        service_url = process_service_url(cluster)
        for _ in range(2):  # producers and consumers on separate clients (connections)
            clients.append(
                await off_loop(
                    pulsar.Client, service_url, operation_timeout_seconds=120, logger=quiet_logger()
                )
            )
        topics = [f"persistent://{namespace}/t{i}" for i in range(TOPICS)]
        for topic in topics:
            for subscription in SUBSCRIPTIONS:
                consumer = ConsumerLoad(
                    clients[1],
                    topic,
                    subscription,
                    consumer_options={"consumer_type": pulsar.ConsumerType.Shared},
                )
                consumer.start()
                consumers.append(consumer)
        for consumer in consumers:
            await off_loop(consumer.started.wait, GUARD)
            assert consumer.failure is None, consumer.failure
        for i, (topic, rate) in enumerate(zip(topics, RATES, strict=True)):
            producer = ProducerLoad(
                clients[0], topic, f"t{i}", rate=rate, batching=i % 2 == 1, key=lambda n: f"k{n % 16}"
            )
            producer.start()
            producers.append(producer)
        for producer in producers:
            await off_loop(producer.started.wait, GUARD)
            assert producer.failure is None, producer.failure
        await eventually(lambda: all(len(p.acked) >= 20 for p in producers), GUARD, message="traffic flowing")

        moves = await asyncio.wait_for(planned_moves(cluster, namespace, PLANNED_MOVES, seed=14), 600)
    finally:
        for producer in producers:
            producer.finish()
        for producer in producers:
            await off_loop(producer.join, GUARD)
    try:
        by_topic = {f"persistent://{namespace}/t{i}": p for i, p in enumerate(producers)}
        try:
            await eventually(
                lambda: all(by_topic[c.topic].acked <= c.snapshot().keys() for c in consumers),
                GUARD,
                message="every subscription received every acknowledged message",
            )
        except AssertionError:
            for c in consumers:
                lost = sorted(
                    by_topic[c.topic].acked - c.snapshot().keys(), key=lambda p: int(p.split("-")[1])
                )
                if lost:
                    print(
                        f"{c.topic} {c.subscription}: {len(lost)} lost, e.g. {lost[:5]} of {len(c.received)}"
                    )
            keep_logs(cluster)
            raise
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
    acked = sum(len(p.acked) for p in producers)
    duplicates = sum(r.duplicates for r in reports)
    with capsys.disabled():
        print(
            f"\n{moves['unload']} unloads + {moves['transfer']} transfers ({moves['refused']} refused), "
            f"{acked} messages acknowledged to producers, {sum(r.received for r in reports)} received by "
            f"{len(consumers)} subscriptions, {duplicates} duplicates, "
            f"{sum(len(r.lost) for r in reports)} lost"
        )
    assert moves["unload"] + moves["transfer"] >= PLANNED_MOVES
    assert all(p.failure is None and not p.errors for p in producers), [p.errors[:3] for p in producers]
    assert all(c.failure is None for c in consumers)
    assert all(r.ok for r in reports), [r for r in reports if not r.ok]
