"""The broker side of the data path over real WebSockets: Pulsar's frames, refusals, closes, stats."""

from __future__ import annotations

import asyncio
import base64
import collections
import json

import pytest
import websockets

from brokerlb.admin import AsyncAdminClient
from brokerlb.messaging import consumer_path, decode_message_id, producer_path
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.waiting import eventually

from .helpers import bundle_of, closed_with, connect, owner_url, recv_json, service_at

pytestmark = pytest.mark.asyncio(loop_scope="module")


def send_frame(i: int, **extra: object) -> str:
    return json.dumps(
        {"payload": base64.b64encode(f"m{i:03d}".encode()).decode(), "context": str(i), **extra}
    )


async def test_produce_and_consume_with_pulsars_frames(cluster: InProcessCluster, namespace: str) -> None:
    topic = f"persistent://{namespace}/frames"
    url = await owner_url(cluster, topic)
    consumer = await connect(url, consumer_path(topic, "audit"))
    producer = await connect(url, producer_path(topic))
    await producer.send(send_frame(1, properties={"a": "1"}, key="k1"))
    ack = await recv_json(producer)
    assert set(ack) == {"result", "messageId", "context"} and ack["result"] == "ok" and ack["context"] == "1"
    message = await recv_json(consumer)
    assert set(message) == {"messageId", "payload", "properties", "publishTime", "key", "redeliveryCount"}
    assert (
        message["messageId"],
        base64.b64decode(message["payload"]),
        message["properties"],
        message["key"],
    ) == (ack["messageId"], b"m001", {"a": "1"}, "k1")
    ledger, entry, partition = decode_message_id(message["messageId"])
    assert (entry, partition) == (0, -1) and ledger > 0
    await consumer.send(json.dumps({"messageId": message["messageId"]}))
    for ws in (producer, consumer):
        await ws.close()


async def test_bad_frames_get_pulsars_error_results(cluster: InProcessCluster, namespace: str) -> None:
    topic = f"persistent://{namespace}/bad-frames"
    producer = await connect(await owner_url(cluster, topic), producer_path(topic))
    await producer.send("{not json")
    assert (await recv_json(producer))["result"] == "send-error:3"
    await producer.send(json.dumps({"payload": "@@@", "context": "c9"}))
    answer = await recv_json(producer)
    assert answer["result"] == "send-error:7" and answer["context"] == "c9" and "Base64" in answer["errorMsg"]
    await producer.send(send_frame(2))  # the connection is still good
    assert (await recv_json(producer))["result"] == "ok"
    await producer.close()


async def test_a_broker_refuses_a_topic_it_does_not_own(cluster: InProcessCluster, namespace: str) -> None:
    topic = f"persistent://{namespace}/elsewhere"
    # nobody owns the bundle yet (no lookup happened): look it up again
    ws = await connect(cluster.urls[0], producer_path(topic))
    code, reason = await closed_with(ws)
    assert code == 4002 and reason["reason"] == "ServiceNotReady" and reason["lookup"] is True
    # another broker owns it: go there (a client that followed a stale lookup answer)
    owner = await owner_url(cluster, topic)
    other = next(u for u in cluster.urls if u != owner)
    await eventually(
        lambda: (
            service_at(cluster, other).channel.owner(bundle_of(service_at(cluster, owner), topic)).broker
            is not None
        ),
        message="the other broker knows the owner",
    )
    ws = await connect(other, producer_path(topic))
    code, reason = await closed_with(ws)
    assert code == 4003 and reason["reason"] == "TopicRedirected" and reason["httpUrl"] == owner


async def test_permanent_errors_are_http_answers_to_the_upgrade(
    cluster: InProcessCluster, namespace: str
) -> None:
    url = cluster.urls[0]
    with pytest.raises(websockets.InvalidStatus) as unknown:
        await connect(url, producer_path("persistent://public/no-such-namespace/t"))
    assert unknown.value.response.status_code == 404
    assert "does not exist" in json.loads(unknown.value.response.body)["reason"]
    with pytest.raises(websockets.InvalidStatus) as bad:
        await connect(url, f"{consumer_path(f'persistent://{namespace}/t', 's')}?subscriptionType=Fancy")
    assert bad.value.response.status_code == 400
    topic = f"persistent://{namespace}/exclusive"
    owner = await owner_url(cluster, topic)
    first = await connect(owner, consumer_path(topic, "only", subscriptionType="Exclusive"))
    with pytest.raises(websockets.InvalidStatus) as busy:
        await connect(owner, consumer_path(topic, "only", subscriptionType="Exclusive"))
    assert busy.value.response.status_code == 409
    assert json.loads(busy.value.response.body)["reason"] == "Exclusive consumer is already connected"
    await first.close()


async def test_the_service_can_be_turned_off() -> None:
    cluster = await InProcessCluster(1, {"webSocketServiceEnabled": False}).start()  # standalone turns it on
    try:
        with pytest.raises(websockets.InvalidStatus) as off:
            await connect(cluster.urls[0], producer_path("persistent://public/default/t"))
        assert off.value.response.status_code == 404
        assert "webSocketServiceEnabled" in json.loads(off.value.response.body)["reason"]
    finally:
        await cluster.stop()


async def test_subscription_types_dispatch_through_the_dispatchers(
    cluster: InProcessCluster, namespace: str
) -> None:
    topic = f"persistent://{namespace}/types"
    url = await owner_url(cluster, topic)
    shared = [await connect(url, consumer_path(topic, "sh", subscriptionType="Shared")) for _ in range(2)]
    failover = [
        await connect(url, consumer_path(topic, "fo", subscriptionType="Failover", consumerName=n))
        for n in ("a", "b")
    ]
    keyed = [await connect(url, consumer_path(topic, "ks", subscriptionType="Key_Shared")) for _ in range(3)]
    producer = await connect(url, producer_path(topic))
    for i in range(60):
        await producer.send(send_frame(i, key=f"key-{i % 6}"))
    for _ in range(60):
        await recv_json(producer)

    async def drain(ws: object) -> list[dict[str, object]]:
        got = []
        try:
            while True:
                got.append(json.loads(await asyncio.wait_for(ws.recv(), 0.3)))  # type: ignore[attr-defined]
        except TimeoutError:
            return got

    shared_got = [await drain(ws) for ws in shared]
    assert [len(g) for g in shared_got] == [30, 30]  # round robin
    failover_got = [await drain(ws) for ws in failover]
    assert [len(g) for g in failover_got] == [60, 0]  # one active consumer
    keyed_got = [await drain(ws) for ws in keyed]
    assert sum(len(g) for g in keyed_got) == 60
    owners = collections.defaultdict(set)
    for i, got in enumerate(keyed_got):
        for m in got:
            owners[m["key"]].add(i)
    assert all(len(o) == 1 for o in owners.values())  # each key on one consumer
    for ws in [*shared, *failover, *keyed, producer]:
        await ws.close()


async def test_unload_closes_with_lookup_and_transfer_names_the_new_owner(
    cluster: InProcessCluster, namespace: str
) -> None:
    topic = f"persistent://{namespace}/moving"
    owner = await owner_url(cluster, topic)
    service = service_at(cluster, owner)
    bundle_range = bundle_of(service, topic).rsplit("/", 1)[1]
    producer = await connect(owner, producer_path(topic))
    consumer = await connect(owner, consumer_path(topic, "s"))
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.unload_bundle(namespace, bundle_range)
        for ws in (producer, consumer):
            assert await closed_with(ws) == (4000, {"reason": "TopicUnloaded", "lookup": True})

        owner = await owner_url(cluster, topic)  # the lookup places the bundle again
        producer = await connect(owner, producer_path(topic))
        consumer = await connect(owner, consumer_path(topic, "s"))
        destination = next(b for b in cluster.services if b.url != owner)
        await admin.unload_bundle(namespace, bundle_range, destination_broker=destination.broker_id)
        for ws in (producer, consumer):
            code, reason = await closed_with(ws)
            assert code == 4001 and reason["reason"] == "TopicTransferred"
            assert reason["httpUrl"] == destination.url
            assert reason["brokerUrl"] == destination.identity.pulsar_service_url
        # PIP-307: the close came after the destination took the bundle: connect there, no lookup
        moved = await connect(destination.url, producer_path(topic))
        await moved.send(send_frame(7))
        assert (await recv_json(moved))["result"] == "ok"
        await moved.close()


async def test_topic_rates_reach_the_load_report_and_broker_stats(
    cluster: InProcessCluster, namespace: str
) -> None:
    topic = f"persistent://{namespace}/measured"
    url = await owner_url(cluster, topic)
    service = service_at(cluster, url)
    consumer = await connect(url, consumer_path(topic, "s"))
    producer = await connect(url, producer_path(topic))

    async def ack_consumer() -> None:
        while True:
            m = json.loads(await consumer.recv())
            await consumer.send(json.dumps({"messageId": m["messageId"]}))

    stop = asyncio.Event()

    async def produce() -> None:  # 4-byte payloads, paced by the acks, until the rates are checked
        i = 0
        while not stop.is_set():
            await producer.send(send_frame(i % 1000))
            await recv_json(producer)
            i += 1

    acking = asyncio.create_task(ack_consumer())
    producing = asyncio.create_task(produce())
    bundle = bundle_of(service, topic)
    await eventually(
        lambda: (service.topics.stats_of(topic) or _ZERO).msg_rate_out > 0,
        timeout=30,
        message="the data path pushed the topic's rates",
    )
    report = service.reporter.refresh()
    stats = report.last_stats[bundle]
    assert stats.msg_rate_in > 0 and stats.msg_rate_out > 0
    # bytes are Pulsar's: checksum, metadata and payload of each message, counted alike in and out. The
    # metadata's varints (sequence id, publish time) make messages differ by a byte, and the in and out
    # windows hold different messages: the averages agree within a byte (payload alone would be 4)
    assert stats.msg_throughput_in > 4 * stats.msg_rate_in
    assert (
        abs(stats.msg_throughput_in / stats.msg_rate_in - stats.msg_throughput_out / stats.msg_rate_out) < 1.0
    )
    assert (stats.producer_count, stats.consumer_count, stats.topics) == (1, 1, 1)
    async with AsyncAdminClient(url) as admin:
        topics = await admin.get_topics_stats()
    ns_stats = topics[namespace][bundle.rsplit("/", 1)[1]]["persistent"][topic]
    assert ns_stats["msgRateIn"] > 0 and ns_stats["producerCount"] == 1
    stop.set()
    await producing
    acking.cancel()
    for ws in (producer, consumer):
        await ws.close()
    # its durable subscription outlives the consumer: the topic stays served (with nothing to deliver)
    served = service.data_path.served(topic)
    assert served is not None and served.topic.subscriptions["s"].durable


class _Zero:
    msg_rate_in = 0.0


_ZERO = _Zero()
