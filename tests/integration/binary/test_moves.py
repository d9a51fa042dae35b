"""Bundles move under the official client's traffic: unload, transfer, split, a leader change (the leader
stops gracefully), a crashed broker. Planned moves lose nothing acknowledged to a producer; a crash
loses only what the crashed broker alone held, and the clients go on with the new owner."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio

from brokerlb.admin import AsyncAdminClient
from brokerlb.ownership import BundleState
from brokerlb.ownership.events import Write
from brokerlb.ring import NamespaceBundle, topic_hash
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.official_client import ConsumerLoad, ProducerLoad, delivery_report, quiet_logger
from brokerlb.testing.waiting import eventually

from .conftest import BINARY, off_loop, pulsar, service_urls

pytestmark = pytest.mark.asyncio(loop_scope="function")

GUARD = 60.0


@pytest_asyncio.fixture(loop_scope="function")
async def fresh_cluster() -> AsyncIterator[InProcessCluster]:
    c = await InProcessCluster(3, BINARY).start()
    try:
        yield c
    finally:
        await c.stop()


async def owner_of(cluster: InProcessCluster, topic: str) -> tuple[Any, str]:
    """``(service, bundle range)`` of the topic's owner (asked of a broker that is up)."""
    alive = next(s for s in cluster.services if s.started)
    async with AsyncAdminClient(alive.url) as admin:
        url = (await admin.lookup_topic(topic))["httpUrl"]
        bundle = await admin.topic_bundle_range(topic)
    return next(s for s in cluster.services if s.url == url), bundle


async def traffic_through(
    cluster: InProcessCluster,
    namespace: str,
    move: Callable[[str], Awaitable[None]],
    *,
    batching: bool = False,
    lossless: bool = True,
) -> tuple[ProducerLoad, ConsumerLoad]:
    """Start a producer and a Shared consumer on one topic, run ``move(topic)`` while they run, then
    stop the producer and wait for the consumer to catch up with everything acknowledged (with
    ``lossless=False``, a crash: until it received 100 messages published after the move -- the
    crashed broker's subscription state is gone, so the new owner's subscription starts when the
    consumer comes back)."""
    topic = f"persistent://{namespace}/moving"
    client = await off_loop(
        pulsar.Client, service_urls(cluster)["pulsar"], operation_timeout_seconds=60, logger=quiet_logger()
    )
    consumer = ConsumerLoad(
        client, topic, "audit", consumer_options={"consumer_type": pulsar.ConsumerType.Shared}
    )
    consumer.start()
    await off_loop(consumer.started.wait, GUARD)
    producer = ProducerLoad(client, topic, "m", rate=300, batching=batching)
    producer.start()
    try:
        await off_loop(producer.started.wait, GUARD)
        assert producer.failure is None and consumer.failure is None
        await eventually(lambda: len(producer.acked) >= 100, GUARD, message="acks before the move")
        await move(topic)
        before = set(producer.acked)
        await eventually(
            lambda: len(producer.acked) >= len(before) + 200, GUARD, message="acks after the move"
        )
        if not lossless:
            await eventually(
                lambda: len(consumer.snapshot().keys() - before) >= 100,
                GUARD,
                message="deliveries after the move",
            )
    finally:
        producer.finish()
        await off_loop(producer.join, GUARD)
    if lossless:
        await eventually(
            lambda: producer.acked <= consumer.snapshot().keys(), GUARD, message="consumer caught up"
        )
    consumer.finish()
    await off_loop(consumer.join, GUARD)
    await off_loop(client.close)
    return producer, consumer


def assert_nothing_lost(producer: ProducerLoad, consumer: ConsumerLoad) -> None:
    report = delivery_report(producer.acked, consumer.received, producer.sent)
    assert producer.failure is None and consumer.failure is None
    assert not producer.errors, producer.errors[:5]
    assert report.ok, report


def opened_from_storage(owner: Any, topic: str) -> bool:
    """The new owner opened the topic's managed ledger from storage and goes on after the former
    owner's entries (a move carries no data)."""
    served = owner.data_path.served(topic)
    if served is None or served.ledger is None:
        return False
    *before, current = list(served.ledger.ledgers)
    # the former owner's ledgers precede it (or were trimmed once consumed: the current one starts
    # where they ended)
    return not current.closed and (current.base > 0 or any(info.entries for info in before))


@pytest.mark.parametrize("batching", [False, True])
async def test_unload_loses_nothing(
    fresh_cluster: InProcessCluster, namespace_in: Any, batching: bool
) -> None:
    namespace = await namespace_in(fresh_cluster)

    async def unload(topic: str) -> None:
        owner, bundle = await owner_of(fresh_cluster, topic)
        async with AsyncAdminClient(owner.url) as admin:
            await admin.unload_bundle(namespace, bundle)

    assert_nothing_lost(*await traffic_through(fresh_cluster, namespace, unload, batching=batching))


async def test_transfer_loses_nothing_and_clients_follow_the_new_owner(
    fresh_cluster: InProcessCluster, namespace_in: Any
) -> None:
    namespace = await namespace_in(fresh_cluster)
    moved_to: list[str] = []

    async def transfer(topic: str) -> None:
        owner, bundle = await owner_of(fresh_cluster, topic)
        destination = next(s for s in fresh_cluster.services if s is not owner)
        async with AsyncAdminClient(owner.url) as admin:
            await admin.unload_bundle(namespace, bundle, destination_broker=destination.broker_id)
        moved_to.append(destination.broker_id)

    producer, consumer = await traffic_through(fresh_cluster, namespace, transfer)
    assert_nothing_lost(producer, consumer)
    owner, _ = await owner_of(fresh_cluster, f"persistent://{namespace}/moving")
    assert owner.broker_id == moved_to[0]
    assert opened_from_storage(owner, f"persistent://{namespace}/moving")


async def test_a_lookup_while_a_transfer_is_in_flight_lands_on_the_destination(
    fresh_cluster: InProcessCluster, namespace_in: Any
) -> None:
    """A transfer is one record going Releasing → Assigning(destination) → Owned: there is no moment
    in which the bundle has no owner and a lookup could place it elsewhere (once, a lookup between
    the old release and the old take was placed afresh and the topic opened without its messages).
    A lookup at the leader just before the destination takes the bundle waits for the move to
    settle and answers the destination; no placement runs, and the topic loses nothing."""
    namespace = await namespace_in(fresh_cluster)
    leader = next(s for s in fresh_cluster.services if s.is_leader)
    placed: list[Any] = []
    leader.load_manager.add_placement_listener(placed.append)
    looked_up: list[str] = []
    moved_to: list[str] = []

    async def transfer_with_a_lookup_in_between(topic: str) -> None:
        owner, bundle = await owner_of(fresh_cluster, topic)
        full = f"{namespace}/{bundle}"
        destination = next(s for s in fresh_cluster.services if s is not owner)
        execute = destination.actions.execute

        async def lookup_then_take(instruction: Any) -> None:
            record = getattr(instruction, "record", None)
            taking = (
                isinstance(instruction, Write)
                and instruction.bundle == full
                and record is not None
                and record.state is BundleState.OWNED
                and record.dst == destination.broker_id
            )
            if not taking:
                return await execute(instruction)
            destination.actions.execute = execute  # once
            assert leader.channel.owner(full).in_flight
            lookup = asyncio.ensure_future(leader.lookup.resolve(NamespaceBundle.parse(full)))
            # the leader's lookup waits for the move to settle
            await eventually(lambda: full in leader.channel._waiters, GUARD, message="lookup waits")
            await execute(instruction)
            looked_up.append((await lookup).broker)
            return None

        destination.actions.execute = lookup_then_take
        placed.clear()
        async with AsyncAdminClient(owner.url) as admin:
            await admin.unload_bundle(namespace, bundle, destination_broker=destination.broker_id)
        moved_to.append(destination.broker_id)
        assert looked_up == [destination.broker_id]
        assert placed == []

    producer, consumer = await traffic_through(fresh_cluster, namespace, transfer_with_a_lookup_in_between)
    assert_nothing_lost(producer, consumer)
    owner, _ = await owner_of(fresh_cluster, f"persistent://{namespace}/moving")
    assert owner.broker_id == moved_to[0]
    assert opened_from_storage(owner, f"persistent://{namespace}/moving")


async def test_split_keeps_each_topics_state_with_its_child(
    fresh_cluster: InProcessCluster, namespace_in: Any
) -> None:
    namespace = await namespace_in(fresh_cluster)

    async def split(topic: str) -> None:
        owner, bundle = await owner_of(fresh_cluster, topic)
        async with AsyncAdminClient(owner.url) as admin:
            await admin.split_bundle(namespace, bundle, unload=True)

    assert_nothing_lost(*await traffic_through(fresh_cluster, namespace, split))


async def test_the_leader_stopping_moves_its_bundles_without_loss(
    fresh_cluster: InProcessCluster, namespace_in: Any
) -> None:
    namespace = await namespace_in(fresh_cluster)

    async def leader_leaves(topic: str) -> None:
        owner, _ = await owner_of(fresh_cluster, topic)
        if not owner.is_leader:  # make the topic's owner the leader, so both the leader and the topic move
            leader = next(s for s in fresh_cluster.services if s.is_leader)
            async with AsyncAdminClient(leader.url) as admin:
                bundle = await admin.topic_bundle_range(topic)
                await admin.unload_bundle(namespace, bundle, destination_broker=leader.broker_id)
            owner = leader
        await owner.stop()  # graceful: bundles handed over, then a new leader is elected
        await eventually(lambda: any(s.started and s.is_leader for s in fresh_cluster.services), GUARD)

    assert_nothing_lost(*await traffic_through(fresh_cluster, namespace, leader_leaves))


async def test_a_crashed_owner_loses_only_what_it_held_and_clients_reconnect(
    fresh_cluster: InProcessCluster, namespace_in: Any
) -> None:
    namespace = await namespace_in(fresh_cluster)
    crashed: list[str] = []

    async def crash(topic: str) -> None:
        owner, _ = await owner_of(fresh_cluster, topic)
        crashed.append(owner.broker_id)
        await owner.kill()

    producer, consumer = await traffic_through(fresh_cluster, namespace, crash, lossless=False)
    assert producer.failure is None and consumer.failure is None and not producer.errors
    owner, _ = await owner_of(fresh_cluster, f"persistent://{namespace}/moving")
    assert owner.broker_id != crashed[0]
    report = delivery_report(producer.acked, consumer.received, producer.sent)
    assert not report.unexpected  # whatever was lost was held by the crashed broker only


@pytest.fixture
def namespace_in() -> Callable[[InProcessCluster], Awaitable[str]]:
    async def create(cluster: InProcessCluster) -> str:
        name = "public/moves"
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(name, num_bundles=4)
        return name

    return create


async def test_a_merge_keeps_each_parts_topics_on_the_merged_bundles_broker(
    fresh_cluster: InProcessCluster, namespace_in: Any
) -> None:
    """A durable subscription whose consumer is away keeps its backlog through a merge of its
    topic's bundle with the neighbour: the parts go to one broker, which serves the merged bundle and
    opens the topic from storage."""
    namespace = await namespace_in(fresh_cluster)
    topic = f"persistent://{namespace}/merged"
    client = await off_loop(
        pulsar.Client,
        service_urls(fresh_cluster)["pulsar"],
        operation_timeout_seconds=60,
        logger=quiet_logger(),
    )

    def publish_while_away() -> None:
        client.subscribe(topic, "away").close()
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(20):
            producer.send(f"m{i}".encode())
        producer.close()

    def receive(count: int) -> list[str]:
        consumer = client.subscribe(topic, "away")
        got = []
        for _ in range(count):
            message = consumer.receive(int(GUARD * 1000))
            got.append(message.data().decode())
            consumer.acknowledge(message)
        consumer.close()
        return got

    try:
        await off_loop(publish_while_away)
        _, bundle = await owner_of(fresh_cluster, topic)
        async with AsyncAdminClient(fresh_cluster.urls[0]) as admin:
            ranges = (await admin.get_bundles(namespace))["boundaries"]
            lower = ranges.index(bundle.split("_")[0])
            pair = [
                f"{ranges[i]}_{ranges[i + 1]}"
                for i in ((lower, lower + 1) if lower + 2 < len(ranges) else (lower - 1, lower))
            ]
            merged = await admin.merge_bundles(namespace, pair)
        assert merged["bundle"] == f"{pair[0].split('_')[0]}_{pair[1].split('_')[1]}"
        assert await off_loop(receive, 20) == [f"m{i}" for i in range(20)]
    finally:
        await off_loop(client.close)


async def test_a_merge_of_two_bundles_on_one_broker_keeps_their_producers_served(
    fresh_cluster: InProcessCluster, namespace_in: Any
) -> None:
    """Issue 26, item 1: after a merge of two cold bundles that sat on one broker, their producers got
    no receipt and no CLOSE_PRODUCER (send timeouts, every 30 s). Now the merge moves the parts to
    one broker and commits parts, merged bundle and ring in one transaction; the broker serves the
    merged bundle before it stops serving the parts, so each producer is either served on or told to
    reconnect -- with the official client's default send timeout (30 s), every send is acknowledged
    and the durable subscription receives them all."""
    namespace = await namespace_in(fresh_cluster)
    async with AsyncAdminClient(fresh_cluster.urls[0]) as admin:
        ranges = (await admin.get_bundles(namespace))["boundaries"]
    pair = [f"{ranges[0]}_{ranges[1]}", f"{ranges[1]}_{ranges[2]}"]
    # a topic in each part
    parts = [NamespaceBundle.parse(f"{namespace}/{p}") for p in pair]
    topics = []
    for part in parts:
        topics.append(
            next(
                f"persistent://{namespace}/t-{i}"
                for i in range(10_000)
                if part.lower <= topic_hash(f"persistent://{namespace}/t-{i}") < part.upper
            )
        )
    client = await off_loop(
        pulsar.Client,
        service_urls(fresh_cluster)["pulsar"],
        operation_timeout_seconds=60,
        logger=quiet_logger(),
    )
    consumers = [ConsumerLoad(client, t, "audit") for t in topics]
    for c in consumers:
        c.start()
        await off_loop(c.started.wait, GUARD)
    # the official client's default send timeout: a stalled producer fails its sends
    producers = [
        ProducerLoad(client, t, f"p{i}", rate=100, producer_options={"send_timeout_millis": 30_000})
        for i, t in enumerate(topics)
    ]
    try:
        for p in producers:
            p.start()
            await off_loop(p.started.wait, GUARD)
            assert p.failure is None
        # both parts on one broker first (a transfer of one to the other's owner)
        first, _ = await owner_of(fresh_cluster, topics[0])
        second, _ = await owner_of(fresh_cluster, topics[1])
        if second is not first:
            async with AsyncAdminClient(fresh_cluster.urls[0]) as admin:
                await admin.unload_bundle(namespace, pair[1], destination_broker=first.broker_id)
        await eventually(lambda: all(len(p.acked) >= 100 for p in producers), GUARD, message="acks before")
        async with AsyncAdminClient(fresh_cluster.urls[0]) as admin:
            merged = await admin.merge_bundles(namespace, pair)
        assert merged["bundle"] == f"{ranges[0]}_{ranges[2]}"
        before = [set(p.acked) for p in producers]
        await eventually(
            lambda: all(len(p.acked) >= len(b) + 300 for p, b in zip(producers, before, strict=True)),
            GUARD,
            message="acks after the merge",
        )
    finally:
        for p in producers:
            p.finish()
        for p in producers:
            await off_loop(p.join, GUARD)
    for p, c in zip(producers, consumers, strict=True):
        assert p.failure is None and not p.errors, p.errors[:5]
        assert p.outstanding == 0
        await eventually(lambda p=p, c=c: p.acked <= c.snapshot().keys(), GUARD, message="consumer caught up")
        c.finish()
        await off_loop(c.join, GUARD)
        assert_nothing_lost(p, c)
    await off_loop(client.close)
