"""The client library against real brokers: sends always end, producers and consumers follow moves."""

from __future__ import annotations

import asyncio

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.client import Client, PartitionedConsumer, PartitionedProducer
from brokerlb.errors import (
    ClientClosedError,
    ProducerQueueIsFullError,
    RemoteBrokerError,
    SendTimeoutError,
)
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.waiting import eventually

from .helpers import bundle_of, owner_url, service_at

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_send_receive_and_acknowledge(cluster: InProcessCluster, namespace: str) -> None:
    topic = f"persistent://{namespace}/basic"
    async with Client(cluster.urls[1]) as client:
        consumer = await client.subscribe(topic, "s", subscription_type="Shared")
        producer = await client.create_producer(topic)
        message_id = await producer.send(b"hello", key="k", properties={"p": "1"})
        message = await consumer.receive(timeout=30)
        assert (message.message_id, message.data, message.key, message.properties) == (
            message_id,
            b"hello",
            "k",
            {"p": "1"},
        )
        assert await consumer.acknowledge(message)
        assert (producer.sent, producer.acked, producer.failed, consumer.received) == (1, 1, 0, 1)
    with pytest.raises(ClientClosedError):
        await consumer.receive(timeout=1)
    with pytest.raises(ClientClosedError):
        await producer.send(b"late")


#: Sends in flight at most: the sender waits for the acknowledgement of the one this far back.
IN_FLIGHT = 20


async def _keep_sending(producer: object, stop: asyncio.Event, futures: list[asyncio.Future[str]]) -> None:
    """Send until ``stop``, paced by acknowledgements (flow control, not a timer)."""
    i = 0
    while not stop.is_set():
        receipt = await producer.send_async(f"m{i}".encode())  # type: ignore[attr-defined]
        futures.append(receipt.future)
        i += 1
        if len(futures) >= IN_FLIGHT:
            await asyncio.wait({futures[-IN_FLIGHT]})  # across a move: until it is re-sent and acknowledged


async def _more_received(received: list[bytes], count: int) -> None:
    """``count`` more distinct messages received (a redelivery after a move is not a new one)."""
    mark = len(set(received))
    await eventually(lambda: len(set(received)) >= mark + count, timeout=60, message=f"{count} more received")


async def test_producer_and_consumer_follow_a_transfer_without_a_lookup_and_an_unload_with_one(
    cluster: InProcessCluster, namespace: str
) -> None:
    topic = f"persistent://{namespace}/follow"
    async with Client(cluster.urls[0]) as client, AsyncAdminClient(cluster.urls[0]) as admin:
        consumer = await client.subscribe(topic, "s", subscription_type="Failover")
        producer = await client.create_producer(topic)
        stop, futures = asyncio.Event(), []
        sender = asyncio.create_task(_keep_sending(producer, stop, futures))
        received: list[bytes] = []

        async def receive() -> None:
            while True:
                m = await consumer.receive()
                received.append(m.data)
                await consumer.acknowledge(m)

        receiver = asyncio.create_task(receive())
        await _more_received(received, 150)
        owner = service_at(cluster, await owner_url(cluster, topic))
        bundle_range = bundle_of(owner, topic).rsplit("/", 1)[1]
        destination = next(s for s in cluster.services if s is not owner)
        lookups_before = producer.stats.lookups
        await admin.unload_bundle(namespace, bundle_range, destination_broker=destination.broker_id)
        await eventually(
            lambda: producer.stats.reconnects == 1 and consumer.stats.reconnects == 1, message="first move"
        )
        assert producer.stats.direct_reconnects == 1 and producer.stats.lookups == lookups_before
        assert producer.stats.closes == {"TopicTransferred": 1} and consumer.stats.closes == {
            "TopicTransferred": 1
        }
        await _more_received(received, 150)
        await admin.unload_bundle(namespace, bundle_range)
        await eventually(
            lambda: producer.stats.reconnects == 2 and consumer.stats.reconnects == 2, message="second move"
        )
        assert producer.stats.lookups == lookups_before + 1
        assert producer.stats.closes["TopicUnloaded"] == 1
        await _more_received(received, 150)
        stop.set()
        await sender
        results = await asyncio.gather(*futures, return_exceptions=True)
        receiver.cancel()
        errors = [r for r in results if isinstance(r, BaseException)]
        assert not errors, errors[:3]
        assert producer.sent == producer.acked == len(futures) >= 450
        # at most once to consumers (non-persistent): what the producer published on the new owner before
        # the consumer re-subscribed there is dropped -- a few per move, far from all
        assert len(set(received)) > 0.7 * len(futures)


async def test_sends_that_are_never_acknowledged_time_out(cluster: InProcessCluster, namespace: str) -> None:
    topic = f"persistent://{namespace}/fenced"
    async with Client(cluster.urls[0]) as client:
        producer = await client.create_producer(topic, send_timeout=0.3)
        await producer.send(b"before")
        owner = service_at(cluster, await owner_url(cluster, topic))
        owner.topics.fence_bundle(bundle_of(owner, topic))  # publishes are now ignored: no ack comes
        with pytest.raises(SendTimeoutError, match="within given timeout"):
            await producer.send(b"lost?")
        assert (producer.sent, producer.acked, producer.failed) == (2, 1, 1)


async def test_a_full_queue_fails_fast_unless_blocking_and_close_fails_what_is_pending(
    cluster: InProcessCluster, namespace: str
) -> None:
    topic = f"persistent://{namespace}/queue"
    async with Client(cluster.urls[0]) as client:
        owner = service_at(cluster, await owner_url(cluster, topic))
        producer = await client.create_producer(topic, max_pending_messages=2, block_if_queue_full=False)
        owner.topics.fence_bundle(bundle_of(owner, topic))
        first = await producer.send_async(b"1")
        second = await producer.send_async(b"2")
        with pytest.raises(ProducerQueueIsFullError):
            await producer.send_async(b"3")
        await producer.close()
        for receipt in (first, second):
            with pytest.raises(ClientClosedError):
                await receipt.future
        assert (producer.sent, producer.acked, producer.failed) == (2, 0, 2)


async def test_permanent_errors_end_the_creation(cluster: InProcessCluster, namespace: str) -> None:
    async with Client(cluster.urls[0], operation_timeout=30) as client:
        with pytest.raises(RemoteBrokerError) as unknown:
            await client.create_producer("persistent://public/not-there/t")
        assert unknown.value.status == 404
        topic = f"persistent://{namespace}/exclusive"
        await client.subscribe(topic, "x", subscription_type="Exclusive")
        with pytest.raises(RemoteBrokerError) as busy:
            await client.subscribe(topic, "x", subscription_type="Exclusive")
        assert busy.value.status == 409


async def test_a_partitioned_topic_is_produced_to_and_consumed_from_its_partitions(
    cluster: InProcessCluster, namespace: str
) -> None:
    topic = f"persistent://{namespace}/parted"
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_partitioned_topic(topic, 3)
    async with Client(cluster.urls[1]) as client:
        consumer = await client.subscribe(topic, "all", subscription_type="Shared")
        producer = await client.create_producer(topic)
        assert isinstance(producer, PartitionedProducer) and isinstance(consumer, PartitionedConsumer)
        for i in range(30):
            await producer.send(f"m{i}".encode(), key=f"k{i % 6}")
        got = [await consumer.receive(timeout=30) for _ in range(30)]
        for message in got:
            assert await consumer.acknowledge(message)
    assert sorted(m.data for m in got) == sorted(f"m{i}".encode() for i in range(30))
    by_key: dict[str | None, set[str]] = {}
    for message in got:
        by_key.setdefault(message.key, set()).add(message.topic)
    assert all(len(partitions) == 1 for partitions in by_key.values())  # a key stays on its partition
    assert {t for ts in by_key.values() for t in ts} <= {f"{topic}-partition-{i}" for i in range(3)}
    assert len({t for ts in by_key.values() for t in ts}) > 1
