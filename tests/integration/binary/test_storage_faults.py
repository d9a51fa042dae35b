"""The storage tier failing under traffic: PostgreSQL restarted while the official client's producers
and a durable subscription run on two brokers. Producers see a pause (their topics close and they
re-send), never a lost acknowledged message; the brokers recover without a restart."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.official_client import ConsumerLoad, ProducerLoad, delivery_report, quiet_logger
from brokerlb.testing.waiting import eventually

from .conftest import off_loop, pulsar, service_urls

pytestmark = [pytest.mark.postgresql, pytest.mark.asyncio(loop_scope="function")]

GUARD = 120.0


async def test_postgresql_restarted_under_traffic_loses_nothing(pg_server: Any, capsys: Any) -> None:
    url = pg_server.new_database_url()
    cluster = await InProcessCluster(2, {"brokerlbStorageUrl": url, "statsUpdateFrequencyInSecs": 2}).start()
    namespace = "public/pg-faults"
    client = None
    producers: list[ProducerLoad] = []
    consumers: list[ConsumerLoad] = []
    try:
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(namespace, num_bundles=2)
        client = await off_loop(
            pulsar.Client,
            service_urls(cluster)["pulsar"],
            operation_timeout_seconds=120,
            logger=quiet_logger(),
        )
        topics = [f"persistent://{namespace}/t{i}" for i in range(2)]
        for topic in topics:
            consumer = ConsumerLoad(
                client, topic, "durable", consumer_options={"consumer_type": pulsar.ConsumerType.Shared}
            )
            consumer.start()
            consumers.append(consumer)
            await off_loop(consumer.started.wait, GUARD)
        for i, topic in enumerate(topics):
            producer = ProducerLoad(client, topic, f"t{i}", rate=100, batching=i == 1)
            producer.start()
            producers.append(producer)
            await off_loop(producer.started.wait, GUARD)
        await eventually(lambda: all(len(p.acked) >= 100 for p in producers), GUARD, message="traffic")
        await asyncio.to_thread(pg_server.restart)  # the brokers' loop keeps serving meanwhile
        before = sum(len(p.acked) for p in producers)
        await eventually(
            lambda: (
                all(len(p.acked) >= 100 for p in producers)
                and sum(len(p.acked) for p in producers) >= before + 300
            ),
            GUARD,
            message="traffic resumed after PostgreSQL came back",
        )
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
            message="every acknowledged message received",
        )
    finally:
        for consumer in consumers:
            consumer.finish()
        for consumer in consumers:
            await off_loop(consumer.join, GUARD)
        if client is not None:
            await off_loop(client.close)
        await cluster.stop()
    reports = [
        delivery_report(by_topic[c.topic].acked, c.received, by_topic[c.topic].sent) for c in consumers
    ]
    with capsys.disabled():
        print(
            f"\nPostgreSQL restarted under traffic: {sum(len(p.acked) for p in producers)} acknowledged, "
            f"{sum(r.duplicates for r in reports)} duplicates, {sum(len(r.lost) for r in reports)} lost, "
            f"topics closed by storage failures: {sum(s.data_path.ledger_failures for s in cluster.services)}"
        )
    assert all(r.ok for r in reports), [r for r in reports if not r.ok]
