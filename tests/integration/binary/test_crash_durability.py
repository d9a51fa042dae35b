"""Crashes lose nothing acknowledged: three ``brokerlb broker`` processes on a real ZooKeeper and a
shared storage tier (the embedded SQLite directory), the official client's producers and durable
subscriptions, and faults -- SIGKILL of the owner of busy topics mid-stream, of the source of a
transfer while it runs, of the destination of a transfer, and a SIGSTOP of the owner past its
session while its producers keep sending (another broker takes the bundle and fences its range in
storage; resumed, the frozen broker can commit nothing and closes its clients). Ledgers roll over
every 50 entries, so faults land during rollovers too. Every message acknowledged to a producer is
received by every durable subscription after the clients reconnect (duplicates counted; losses
must be zero) -- so no receipt of the frozen broker acknowledged a message that is not stored.

A killed broker is restarted in place (its ports, so its id), as a supervisor does: the clients'
service URL names the three brokers' addresses, as Pulsar users list theirs, and stays valid. (With
fresh brokers on new ports instead, a run whose faults killed all three first brokers left the
clients nowhere to send their lookups: no producer made progress although every bundle was served.)
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

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
#: the faults, one after another on one cluster (a fresh broker joins after each SIGKILL)
FAULTS = ("owner", "freeze", "owner")
GUARD = 60.0
OVERRIDES = {
    "metadataStoreSessionTimeoutMillis": 5000,
    "statsUpdateFrequencyInSecs": 2,
    "managedLedgerMaxEntriesPerLedger": 50,
    "managedLedgerMinLedgerRolloverTimeMinutes": 0,
}


async def owner_index(cluster: ProcessCluster, topic: str) -> int:
    """The living broker that owns ``topic``: a killed owner is named until its session ends and
    the bundle is reassigned (a SIGSTOP of its PID then fails: ProcessLookupError)."""

    async def living_owner() -> tuple[int] | None:
        alive = await living(cluster)
        try:
            async with AsyncAdminClient(cluster.urls[alive[-1]], timeout=5) as admin:
                answer = await admin.lookup_topic(topic)
        except BrokerLBError:
            return None
        url = answer["httpUrl"].rstrip("/")
        index = next(i for i, u in enumerate(cluster.urls) if u.rstrip("/") == url)
        return (index,) if index in alive else None

    (index,) = await eventually(living_owner, GUARD, interval=0.2, message=f"a living owner of {topic}")
    return index


async def taken_from(cluster: ProcessCluster, frozen: int, topic: str) -> bool:
    """Whether a broker other than ``frozen`` now owns ``topic`` (asked of a broker that is not frozen)."""
    asked = next(i for i in await living(cluster) if i != frozen)
    try:
        async with AsyncAdminClient(cluster.urls[asked], timeout=5) as admin:
            answer = await admin.lookup_topic(topic)
    except BrokerLBError:
        return False
    return answer["httpUrl"].rstrip("/") != cluster.urls[frozen].rstrip("/")


async def living(cluster: ProcessCluster) -> list[int]:
    return [i for i, code in enumerate(cluster.returncodes()) if code is None]


async def fault(cluster: ProcessCluster, kind: str, topic: str, namespace: str, rng: random.Random) -> str:
    """One fault of ``kind``; a killed broker is then restarted in place, so three are alive again.
    Returns what was done (for the test's log)."""
    owner = await owner_index(cluster, topic)
    if kind == "freeze":
        pid = cluster.processes[owner].pid
        os.kill(pid, signal.SIGSTOP)
        try:  # frozen past its session: another broker takes the bundle
            await eventually(lambda: taken_from(cluster, owner, topic), GUARD, message="bundle taken over")
        finally:
            os.kill(pid, signal.SIGCONT)
        return f"froze broker {owner} past its session"
    if kind == "owner":
        killed = owner
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
            killed = owner if kind == "transfer-source" else destination
            await cluster.kill(killed)
            try:
                await move
            except BrokerLBError:
                pass  # the move could not finish: the broker it needed died
    await cluster.restart(killed)
    return f"killed broker {killed} (owner {owner}), restarted it"


@pytest_asyncio.fixture
async def cluster(zk_server: Any) -> AsyncIterator[ProcessCluster]:
    c = await zookeeper_process_cluster(zk_server, 3, OVERRIDES, prefix="crash")
    try:
        yield c
    finally:
        await c.stop()  # by PID, whatever happened in the test (idempotent)


@pytest.mark.timeout(900)
async def test_sigkills_lose_no_acknowledged_message(cluster: ProcessCluster, capsys: Any) -> None:
    await run_faults(cluster, FAULTS, capsys)


@pytest.mark.timeout(900)
async def test_sigkills_inside_transfers_keep_every_acknowledged_message_in_storage(
    cluster: ProcessCluster, capsys: Any
) -> None:
    """SIGKILL of a transfer's source while it runs, then of a transfer's destination, then of an owner.
    A killed broker's bundles (and a dead destination's, whatever state the record was in) are served
    again once the leader sees its session end (the clean-up reassigns them at once; a killed leader is
    replaced first), the producers' clients look their topics up again and make progress, and every
    acknowledged message is received by every durable subscription."""
    await run_faults(cluster, ("transfer-source", "transfer-destination", "owner"), capsys)


async def run_faults(cluster: ProcessCluster, faults: tuple[str, ...], capsys: Any) -> None:
    started = time.monotonic()

    def log(what: str) -> None:
        with capsys.disabled():
            print(f"[{time.monotonic() - started:6.1f} s] {what}", flush=True)

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
        for n, kind in enumerate(faults):
            before = sum(len(p.acked) for p in producers)
            await eventually(
                lambda b=before: sum(len(p.acked) for p in producers) >= b + 200, GUARD, message="traffic"
            )
            log(f"fault {n}: {kind} ({sum(len(p.acked) for p in producers)} acknowledged)")
            done = await fault(cluster, kind, topics[n % TOPICS], namespace, rng)
            log(f"fault {n} done: {done}")
        after = sum(len(p.acked) for p in producers)
        await eventually(
            lambda: sum(len(p.acked) for p in producers) >= after + 200, GUARD, message="recovered"
        )
    except BaseException:
        keep_logs(cluster)
        for topic in topics:  # where the cluster says the topics are now
            for i in await living(cluster):
                try:
                    async with AsyncAdminClient(cluster.urls[i], timeout=5) as admin:
                        log(
                            f"{topic} looked up at {cluster.broker_ids[i]}: {await admin.lookup_topic(topic)}"
                        )
                except BrokerLBError as exc:
                    log(f"{topic} looked up at {cluster.broker_ids[i]}: {exc}")
        log(f"acknowledged per topic: {[len(p.acked) for p in producers]}")
        raise
    finally:
        for producer in producers:
            producer.finish()
        for producer in producers:
            await off_loop(producer.join, GUARD)
    by_topic = {p.topic: p for p in producers}
    stored: dict[str, set[str]] = {}
    try:
        try:
            await eventually(
                lambda: all(by_topic[c.topic].acked <= c.snapshot().keys() for c in consumers),
                2 * GUARD,
                message="every subscription received every acknowledged message",
            )
        except AssertionError:
            keep_logs(cluster)  # the asserts below say what is missing, and whether storage has it
        stored = await stored_payloads(cluster, topics)  # what the storage tier holds now
    finally:
        for consumer in consumers:
            consumer.finish()
        for consumer in consumers:
            await off_loop(consumer.join, GUARD)
        for client in clients:
            await off_loop(client.close)
        await cluster.stop()
    missing = {c.topic: by_topic[c.topic].acked - c.snapshot().keys() for c in consumers}
    not_stored = {topic: sorted(m - stored.get(topic, set())) for topic, m in missing.items()}
    reports = [
        delivery_report(by_topic[c.topic].acked, c.received, by_topic[c.topic].sent) for c in consumers
    ]
    with capsys.disabled():
        print(
            f"\n{len(faults)} faults ({', '.join(faults)}), {sum(len(p.acked) for p in producers)} acknowledged, "
            f"{sum(r.received for r in reports)} received, {sum(r.duplicates for r in reports)} duplicates, "
            f"not received {sum(len(m) for m in missing.values())}, of which not in storage either "
            f"{sum(len(m) for m in not_stored.values())}"
        )
    # acknowledged means durable: every acknowledged message was received or is in the storage tier
    assert not any(not_stored.values()), {t: m[:5] for t, m in not_stored.items() if m}
    assert all(r.ok for r in reports), [r for r in reports if not r.ok]


async def stored_payloads(cluster: ProcessCluster, topics: list[str]) -> dict[str, set[str]]:
    """Every message payload the cluster's storage tier holds, per topic (batches unpacked)."""
    from brokerlb.messaging.frames import read_payload, unpack_batch
    from brokerlb.naming import TopicName
    from brokerlb.storage import open_storage

    engine = open_storage(cluster.overrides["brokerlbStorageUrl"])
    await engine.start()
    out: dict[str, set[str]] = {}
    try:
        for topic in topics:
            payloads = out.setdefault(topic, set())
            for info in await engine.ledgers_of(TopicName.parse(topic).persistence_name):
                for entry in await engine.read(info.ledger_id, 0, info.entries - 1):
                    metadata, payload = read_payload(entry.payload)
                    payloads.update(p.decode() for _, p in unpack_batch(metadata, payload))
    finally:
        await engine.close()
    return out
