"""Topic stats, subscriptions and deletion over real traffic (WebSocket producers and consumers)."""

from __future__ import annotations

import asyncio

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.client import Client
from brokerlb.errors import RemoteBrokerError
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.waiting import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _send_steadily(producer: object, stop: asyncio.Event) -> None:
    while not stop.is_set():
        await producer.send(b"x" * 100)  # type: ignore[attr-defined]
        await asyncio.sleep(0.01)


async def test_stats_show_traffic_publishers_and_subscriptions(
    cluster: InProcessCluster, namespace: str
) -> None:
    topic = f"persistent://{namespace}/stats"
    async with Client(cluster.urls[0]) as client, AsyncAdminClient(cluster.urls[2]) as admin:
        await client.subscribe(topic, "sub-shared", subscription_type="Shared", consumer_name="c1")
        await client.subscribe(topic, "sub-failover", subscription_type="Failover", consumer_name="c2")
        producer = await client.create_producer(topic)
        stop = asyncio.Event()
        sender = asyncio.create_task(_send_steadily(producer, stop))
        try:

            async def flowing() -> dict | None:
                stats = await admin.get_topic_stats(topic)
                return stats if stats["msgRateIn"] > 0 and stats["msgRateOut"] > 0 else None

            stats = await eventually(flowing, timeout=20, message="rates in the topic stats")
            assert len(stats["publishers"]) == 1
            assert sorted(stats["subscriptions"]) == ["sub-failover", "sub-shared"]
            failover = stats["subscriptions"]["sub-failover"]
            assert failover["type"] == "Failover" and failover["activeConsumerName"] == "c2"
            assert [c["consumerName"] for c in stats["subscriptions"]["sub-shared"]["consumers"]] == ["c1"]
            # Pulsar's sizes count each message's metadata and checksum with its 100-byte payload
            assert 100 < stats["averageMsgSize"] < 200
            assert stats["ownerBroker"] in cluster.broker_ids
            assert await admin.get_subscriptions(topic) == ["sub-failover", "sub-shared"]
            assert topic in await admin.get_topics(namespace)
            with pytest.raises(RemoteBrokerError) as busy:
                await admin.delete_topic(topic)
            assert busy.value.status == 412 and "active producers/subscriptions" in busy.value.reason
        finally:
            stop.set()
            await sender
        await admin.delete_topic(topic, force=True)

        async def forgotten() -> bool:
            try:
                await admin.get_topic_stats(topic)
            except RemoteBrokerError as exc:
                return exc.status == 404
            return False

        await eventually(forgotten, timeout=10, message="the deleted topic is gone")


async def test_partitioned_stats_sum_the_partitions(cluster: InProcessCluster, namespace: str) -> None:
    topic = f"persistent://{namespace}/parted"
    async with Client(cluster.urls[1]) as client, AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_partitioned_topic(topic, 2)
        partitions = [f"{topic}-partition-{i}" for i in range(2)]
        for partition in partitions:
            await client.subscribe(partition, "s", subscription_type="Shared")
        producers = [await client.create_producer(partition) for partition in partitions]
        stop = asyncio.Event()
        senders = [asyncio.create_task(_send_steadily(p, stop)) for p in producers]
        try:

            async def both_flowing() -> dict | None:
                stats = await admin.get_partitioned_stats(topic)
                parts = stats["partitions"]
                return (
                    stats if all(parts[f"{topic}-partition-{i}"]["msgRateIn"] > 0 for i in range(2)) else None
                )

            stats = await eventually(both_flowing, timeout=20, message="both partitions' rates")
            parts = stats["partitions"]
            assert stats["metadata"] == {"partitions": 2}
            assert stats["msgRateIn"] == pytest.approx(sum(p["msgRateIn"] for p in parts.values()))
            assert len(stats["publishers"]) == 1  # merged by position, as Pulsar does
            assert list(stats["subscriptions"]) == ["s"]
            assert len(stats["subscriptions"]["s"]["consumers"]) == 2
        finally:
            stop.set()
            await asyncio.gather(*senders)
        assert await admin.get_subscriptions(topic) == ["s"]


async def test_stats_show_the_backlog_of_a_durable_subscription_that_does_not_acknowledge(
    cluster: InProcessCluster, namespace: str
) -> None:
    topic = f"persistent://{namespace}/backlog"
    async with Client(cluster.urls[1]) as client, AsyncAdminClient(cluster.urls[0]) as admin:
        consumer = await client.subscribe(
            topic, "slow", subscription_type="Exclusive", consumer_name="slow-1"
        )
        producer = await client.create_producer(topic)
        for i in range(5):
            await producer.send(f"m{i}".encode())
        first = await consumer.receive(timeout=10)
        await consumer.acknowledge(first)

        async def backlog() -> dict | None:
            stats = await admin.get_topic_stats(topic)
            sub = stats["subscriptions"].get("slow")
            return stats if sub is not None and sub["msgBacklog"] == 4 else None

        stats = await eventually(backlog, timeout=20, message="4 messages not acknowledged")
        sub = stats["subscriptions"]["slow"]
        assert sub["isDurable"] is True and sub["type"] == "Exclusive"
        assert sub["consumers"][0]["consumerName"] == "slow-1"
        assert stats["backlogSize"] > 0
        assert stats["publishers"][0].get("producerName")
