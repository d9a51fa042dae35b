"""A merge under the official client's traffic keeps every producer served.

Seen from outside: the balancer merged two cold bundles that sat on one broker, and their
producers got no more receipts and no CLOSE_PRODUCER -- "Send timeout due to queueing delay"
every 30 s, thousands of sends failed, topic stats read msgRateIn 0. A broker that stops serving
a bundle must close its producers and consumers so that the client looks the topic up again and
reconnects to the merged bundle's owner. Here two adjacent bundles are put on one broker, a
producer and a Shared consumer run on a topic of each, and the two bundles are merged: every
producer keeps getting receipts after the merge, no send fails, and nothing acknowledged is lost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from brokerlb.admin import AsyncAdminClient
from brokerlb.ring import NamespaceBundles
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.official_client import ConsumerLoad, ProducerLoad, delivery_report, quiet_logger
from brokerlb.testing.waiting import eventually

from .conftest import BINARY, off_loop, pulsar, service_urls

pytestmark = pytest.mark.asyncio(loop_scope="function")

GUARD = 60.0
NAMESPACE = "public/merge-traffic"


@pytest_asyncio.fixture(loop_scope="function")
async def fresh_cluster() -> AsyncIterator[InProcessCluster]:
    c = await InProcessCluster(3, BINARY).start()
    try:
        yield c
    finally:
        await c.stop()


async def test_producers_of_two_merged_bundles_keep_getting_receipts(fresh_cluster: InProcessCluster) -> None:
    cluster = fresh_cluster
    ring = NamespaceBundles.create(NAMESPACE, 4)
    first, second = ring.bundles[0], ring.bundles[1]
    names = [f"persistent://{NAMESPACE}/t{i}" for i in range(200)]
    topics = [next(t for t in names if ring.find_bundle(t) == b) for b in (first, second)]
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(NAMESPACE, num_bundles=4)
        # both bundles on one broker, as the balancer merges cold neighbours there
        owner = (await admin.lookup_topic(topics[0]))["httpUrl"].rstrip("/")
        broker = next(s.broker_id for s in cluster.services if s.url.rstrip("/") == owner)
        second_owner = (await admin.lookup_topic(topics[1]))["httpUrl"].rstrip("/")
        if second_owner != owner:
            await admin.unload_bundle(NAMESPACE, second.range, destination_broker=broker)
    client = await off_loop(
        pulsar.Client, service_urls(cluster)["pulsar"], operation_timeout_seconds=60, logger=quiet_logger()
    )
    consumers = [
        ConsumerLoad(client, t, "audit", consumer_options={"consumer_type": pulsar.ConsumerType.Shared})
        for t in topics
    ]
    producers = [ProducerLoad(client, t, f"m{i}", rate=200) for i, t in enumerate(topics)]
    try:
        for load in (*consumers, *producers):
            load.start()
            await off_loop(load.started.wait, GUARD)
            assert load.failure is None
        await eventually(lambda: all(len(p.acked) >= 100 for p in producers), GUARD, message="acks before")
        async with AsyncAdminClient(cluster.urls[1]) as admin:
            merged = await admin.merge_bundles(NAMESPACE, [first.range, second.range])
        assert merged["bundle"] == f"{first.range.split('_')[0]}_{second.range.split('_')[1]}"
        before = [len(p.acked) for p in producers]
        # every producer keeps getting receipts from the merged bundle's owner
        await eventually(
            lambda: all(len(p.acked) >= n + 300 for p, n in zip(producers, before, strict=True)),
            GUARD,
            message="acks after the merge on both topics",
        )
    finally:
        for producer in producers:
            producer.finish()
        for producer in producers:
            await off_loop(producer.join, GUARD)
    for producer, consumer in zip(producers, consumers, strict=True):
        await eventually(
            lambda p=producer, c=consumer: p.acked <= c.snapshot().keys(), GUARD, message="consumer caught up"
        )
    for consumer in consumers:
        consumer.finish()
        await off_loop(consumer.join, GUARD)
    await off_loop(client.close)
    for producer, consumer in zip(producers, consumers, strict=True):
        assert producer.failure is None and consumer.failure is None
        assert not producer.errors, producer.errors[:5]  # no send timed out
        report = delivery_report(producer.acked, consumer.received, producer.sent)
        assert report.ok, report
