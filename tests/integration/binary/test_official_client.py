"""Apache Pulsar's official client (pulsar-client 3.13, C++ core) against three brokerlb brokers.

Every test runs with both service URLs (``pulsar://``: binary lookup; ``http://``: HTTP lookup,
then the binary protocol). Blocking client calls run in threads (:func:`off_loop`).
"""

from __future__ import annotations

import collections
from typing import Any

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.errors import RemoteBrokerError
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.official_client import quiet_logger

from .conftest import off_loop, pulsar, service_urls

pytestmark = pytest.mark.asyncio(loop_scope="module")

GUARD_MS = 30_000  # receive timeout: only guards against hanging


def receive_all(consumer: Any, count: int, ack: bool = True) -> list[Any]:
    got = []
    for _ in range(count):
        message = consumer.receive(GUARD_MS)
        got.append(message)
        if ack:
            consumer.acknowledge(message)
    return got


def payloads(messages: list[Any]) -> list[str]:
    return [m.data().decode() for m in messages]


@pytest.mark.parametrize("domain", ["persistent", "non-persistent"])
@pytest.mark.parametrize("batching", [False, True])
async def test_produce_and_consume(client: Any, namespace: str, domain: str, batching: bool) -> None:
    topic = f"{domain}://{namespace}/basic-{batching}"

    def run() -> tuple[list[str], list[dict[str, str]], list[str]]:
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic, batching_enabled=batching, batching_max_messages=10)
        for i in range(30):
            producer.send_async(f"m{i}".encode(), None, properties={"i": str(i)}, partition_key=f"k{i % 4}")
        producer.flush()
        got = receive_all(consumer, 30)
        return payloads(got), [m.properties() for m in got], [m.partition_key() for m in got]

    data, props, keys = await off_loop(run)
    assert data == [f"m{i}" for i in range(30)]  # one producer, one consumer: in order
    assert props == [{"i": str(i)} for i in range(30)]
    assert keys == [f"k{i % 4}" for i in range(30)]


async def test_a_durable_subscription_keeps_what_was_published_while_its_consumer_was_away(
    client: Any, namespace: str
) -> None:
    topic = f"persistent://{namespace}/retained"

    def run() -> list[str]:
        client.subscribe(topic, "audit").close()
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(5):
            producer.send(f"m{i}".encode())
        return payloads(receive_all(client.subscribe(topic, "audit"), 5))

    assert await off_loop(run) == [f"m{i}" for i in range(5)]


async def test_each_subscription_type(client: Any, namespace: str) -> None:
    topic = f"persistent://{namespace}/types"

    def run() -> dict[str, Any]:
        ct = pulsar.ConsumerType
        exclusive = client.subscribe(topic, "ex", consumer_type=ct.Exclusive)
        with pytest.raises(pulsar.ConsumerBusy):
            client.subscribe(topic, "ex", consumer_type=ct.Exclusive)
        shared = [
            client.subscribe(topic, "sh", consumer_type=ct.Shared, receiver_queue_size=5) for _ in range(2)
        ]
        failover = [client.subscribe(topic, "fo", consumer_type=ct.Failover, consumer_name=n) for n in "ab"]
        keyed = [client.subscribe(topic, "ks", consumer_type=ct.KeyShared) for _ in range(3)]
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(60):
            producer.send(f"m{i}".encode(), partition_key=f"key-{i % 6}")
        out: dict[str, Any] = {"exclusive": payloads(receive_all(exclusive, 60))}
        shared_got: list[list[str]] = [[], []]
        for _ in range(60):  # the two Shared consumers share the 60 messages
            for i, c in enumerate(shared):
                try:
                    m = c.receive(200 if sum(map(len, shared_got)) < 60 else 1)
                except pulsar.Timeout:
                    continue
                shared_got[i].append(m.data().decode())
                c.acknowledge(m)
            if sum(map(len, shared_got)) == 60:
                break
        out["shared"] = shared_got
        out["failover"] = payloads(receive_all(failover[0], 60))  # "a" sorts first: the active one
        keyed_got: dict[str, set[int]] = collections.defaultdict(set)
        total = 0
        while total < 60:
            for i, c in enumerate(keyed):
                try:
                    m = c.receive(200)
                except pulsar.Timeout:
                    continue
                keyed_got[m.partition_key()].add(i)
                c.acknowledge(m)
                total += 1
        out["keyed"] = keyed_got
        return out

    got = await off_loop(run)
    assert got["exclusive"] == [f"m{i}" for i in range(60)]
    assert sorted(got["shared"][0] + got["shared"][1], key=lambda p: int(p[1:])) == [
        f"m{i}" for i in range(60)
    ]
    assert all(got["shared"])  # both consumers got some
    assert got["failover"] == [f"m{i}" for i in range(60)]
    assert len(got["keyed"]) == 6 and all(len(owners) == 1 for owners in got["keyed"].values())


async def test_negative_acks_and_ack_timeouts_redeliver_with_a_redelivery_count(
    client: Any, namespace: str
) -> None:
    topic = f"persistent://{namespace}/redeliver"

    def run() -> tuple[list[int], list[int]]:
        nacking = client.subscribe(
            topic, "nack", consumer_type=pulsar.ConsumerType.Shared, negative_ack_redelivery_delay_ms=100
        )
        timing_out = client.subscribe(
            topic, "timeout", consumer_type=pulsar.ConsumerType.Shared, unacked_messages_timeout_ms=10_000
        )
        producer = client.create_producer(topic, batching_enabled=False)
        producer.send(b"once")
        counts = []
        for _ in range(3):
            message = nacking.receive(GUARD_MS)
            counts.append(message.redelivery_count())
            nacking.negative_acknowledge(message)
        nacking.acknowledge(nacking.receive(GUARD_MS))
        first = timing_out.receive(GUARD_MS)  # not acknowledged: the client's ack timeout redelivers it
        again = timing_out.receive(GUARD_MS)
        timing_out.acknowledge(again)
        return counts, [first.redelivery_count(), again.redelivery_count()]

    nacks, timeouts = await off_loop(run)
    assert nacks == [0, 1, 2]
    assert timeouts == [0, 1]


async def test_a_reader_from_earliest_and_from_a_message_id(client: Any, namespace: str) -> None:
    topic = f"persistent://{namespace}/readable"

    def run() -> tuple[list[str], list[str], bool]:
        client.subscribe(topic, "keeps-them").close()  # a durable subscription retains the messages
        producer = client.create_producer(topic, batching_enabled=False)
        ids = [producer.send(f"m{i}".encode()) for i in range(6)]
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        from_start = [reader.read_next(GUARD_MS).data().decode() for _ in range(6)]
        more = reader.has_message_available()
        after = client.create_reader(topic, ids[2])  # exclusive of the start id
        return from_start, [after.read_next(GUARD_MS).data().decode() for _ in range(3)], more

    from_start, after, more = await off_loop(run)
    assert from_start == [f"m{i}" for i in range(6)] and not more
    assert after == ["m3", "m4", "m5"]


async def test_a_partitioned_topic_spreads_over_brokers(
    cluster: InProcessCluster, client: Any, namespace: str
) -> None:
    topic = f"persistent://{namespace}/parted"
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_partitioned_topic(topic, 8)

    def run() -> tuple[collections.Counter[str], list[str]]:
        consumer = client.subscribe(topic, "all", consumer_type=pulsar.ConsumerType.Shared)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(80):
            producer.send(f"m{i}".encode(), partition_key=f"k{i}")
        got = receive_all(consumer, 80)
        return collections.Counter(m.topic_name() for m in got), payloads(got)

    by_partition, data = await off_loop(run)
    assert sorted(data) == sorted(f"m{i}" for i in range(80))
    assert len(by_partition) > 1
    owners = {s.broker_id for s in cluster.services for name in s.data_path.topics if name.startswith(topic)}
    assert len(owners) > 1  # the partitions live on more than one broker


async def test_a_producer_to_a_missing_namespace_gets_a_clear_error(cluster: InProcessCluster) -> None:
    """Over ``pulsar://`` the client reports TopicNotFound with the broker's reason; over ``http://``
    the C++ client turns every HTTP error of a lookup into ConnectError (as against Pulsar), so the
    reason is the lookup's 404 body."""
    topic = "persistent://public/no-such-namespace/t"
    client = await off_loop(
        pulsar.Client, service_urls(cluster)["pulsar"], operation_timeout_seconds=30, logger=quiet_logger()
    )

    def run() -> BaseException:
        with pytest.raises(pulsar.PulsarException) as error:
            client.create_producer(topic)
        return error.value

    try:
        error = await off_loop(run)
    finally:
        await off_loop(client.close)
    assert isinstance(error, pulsar.TopicNotFound)
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        with pytest.raises(RemoteBrokerError) as http:
            await admin.lookup_topic(topic)
    assert http.value.status == 404 and "public/no-such-namespace" in str(http.value)


async def test_producer_names_are_unique_per_topic(client: Any, namespace: str) -> None:
    topic = f"persistent://{namespace}/named"

    def run() -> str:
        client.create_producer(topic, producer_name="only-one")
        with pytest.raises(pulsar.PulsarException) as error:
            client.create_producer(topic, producer_name="only-one")
        return str(error.value)

    assert "ProducerBusy" in await off_loop(run)


async def test_seek_moves_a_durable_subscription_back(client: Any, namespace: str) -> None:
    topic = f"persistent://{namespace}/seekable"

    def run() -> list[str]:
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic, batching_enabled=False)
        ids = [producer.send(f"m{i}".encode()) for i in range(5)]
        receive_all(consumer, 5)
        consumer.seek(ids[1])  # the client's default: start after the given id
        return payloads(receive_all(consumer, 3, ack=True))

    assert await off_loop(run) == ["m2", "m3", "m4"]
