"""A former owner that comes back after its session ended never re-creates ownership of a bundle.

The deterministic reproduction of issue 31, on a real ZooKeeper with two broker processes: broker A
owns ``0x00000000_0xffffffff`` and splits it; A is frozen past its session; B takes the child
``0x00000000_0x7fffffff`` and splits it again (the ring is now ``0x00000000, 0x3fffffff,
0x7fffffff, 0xffffffff``); A resumes. With ephemeral ownership nodes, A re-created a node for
``0x00000000_0x7fffffff`` under its new session -- a bundle that no longer exists, overlapping B's
two children -- and held it; a producer attached to A before the freeze got no receipt, no error and
no CLOSE_PRODUCER (its sends were silently dropped).

With one ownership record per bundle, naming the session of its owner, A's old records are not its
own any more: it serves nothing until the leader gives it something, writes nothing for a bundle
that is Deleted, and closes its producers the moment it cannot confirm its session -- they look the
topic up again and their sends are acknowledged by B.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from typing import Any

import httpx
import pytest

from brokerlb.coordination import OwnershipTable, open_store
from brokerlb.naming import TopicName
from brokerlb.ownership import BundleState
from brokerlb.ring import topic_hash
from brokerlb.testing.clusters import ProcessCluster
from brokerlb.testing.official_client import ProducerLoad, quiet_logger
from brokerlb.testing.waiting import eventually

pytestmark = [pytest.mark.zookeeper, pytest.mark.slow, pytest.mark.asyncio(loop_scope="function")]

SESSION_MS = 3000
FULL = "0x00000000_0xffffffff"
LEFT, RIGHT = "0x00000000_0x7fffffff", "0x7fffffff_0xffffffff"
QUARTERS = ("0x00000000_0x3fffffff", "0x3fffffff_0x7fffffff")
S = BundleState


def topic_in(namespace: str, lower: int, upper: int) -> str:
    for i in range(10_000):
        name = f"persistent://{namespace}/t-{i}"
        if lower <= topic_hash(name) < upper:
            return name
    raise AssertionError("no topic in the range")


async def lookup(client: httpx.AsyncClient, url: str, topic: str, **params: Any) -> httpx.Response:
    return await client.get(f"{url}/lookup/v2/topic/{TopicName.parse(topic).lookup_name}", params=params)


async def test_a_former_owner_back_after_its_session_never_owns_a_split_bundle_again(zk_server) -> None:
    cluster = await ProcessCluster(
        f"zk:{zk_server.hosts}/frozen-split-{uuid.uuid4().hex[:8]}",
        2,
        {"metadataStoreSessionTimeoutMillis": SESSION_MS, "loadBalancerSheddingEnabled": False},
    ).start()
    namespace = f"public/frozen-{uuid.uuid4().hex[:6]}"
    a_url, b_url = cluster.urls
    a_id, b_id = cluster.broker_ids
    frozen = cluster.processes[0]
    topic = topic_in(namespace, 0, 0x3FFFFFFF)
    store = open_store(cluster.store_url, session_timeout=10.0)
    await store.start()
    table = await OwnershipTable(store).start()
    client_lib = __import__("pulsar")
    producer: ProducerLoad | None = None
    pulsar_client = None
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            created = await client.put(
                f"{a_url}/admin/v2/namespaces/{namespace}", json={"bundles": {"numBundles": 1}}
            )
            assert created.status_code == 204, created.text
            # A takes the full bundle (an authoritative lookup at A: A is the candidate) and splits it
            taken = await lookup(client, a_url, topic, authoritative="true")
            assert taken.status_code == 200 and taken.json()["httpUrl"] == a_url, taken.text
            split = await client.put(
                f"{a_url}/admin/v2/namespaces/{namespace}/{FULL}/split",
                params={"splitAlgorithmName": "range_equally_divide"},
            )
            assert split.status_code == 204, split.text

            # a producer attached to A, sending all along
            pulsar_client = client_lib.Client(
                (await lookup(client, a_url, topic)).json()["brokerUrl"], logger=quiet_logger()
            )
            producer = ProducerLoad(pulsar_client, topic, "p", rate=200)
            producer.start()
            await asyncio.to_thread(producer.started.wait, 30)
            assert producer.failure is None, producer.failure
            await eventually(lambda: len(producer.acked) >= 20, timeout=30, message="A acknowledges sends")

            os.kill(frozen.pid, signal.SIGSTOP)
            frozen_at = time.monotonic()
            try:
                # the leader (B) reassigns A's bundles once A's session ended: B owns both halves
                async def b_owns(rng: str) -> bool:
                    stored = table.get(f"{namespace}/{rng}")
                    return stored is not None and stored.record.state is S.OWNED and stored.record.dst == b_id

                for rng in (LEFT, RIGHT):
                    await eventually(
                        lambda rng=rng: b_owns(rng), timeout=60, interval=0.1, message=f"B owns {rng}"
                    )
                # B splits the left half again
                again = await client.put(
                    f"{b_url}/admin/v2/namespaces/{namespace}/{LEFT}/split",
                    params={"splitAlgorithmName": "range_equally_divide"},
                )
                assert again.status_code == 204, again.text
                # frozen well past its session (the freeze ends no sooner than twice the session)
                remaining = 2 * SESSION_MS / 1000 - (time.monotonic() - frozen_at)
                if remaining > 0:
                    await asyncio.sleep(remaining)  # the fault's length, not a synchronisation
            finally:
                os.kill(frozen.pid, signal.SIGCONT)

            # every send is acknowledged in the end: A closed its producer, which looked the topic up
            # again and re-sent to B (a silently dropped send would never be acknowledged)
            producer.finish()
            await asyncio.to_thread(producer.join, 120)
            assert not producer.is_alive() and producer.failure is None, producer.failure
            assert producer.outstanding == 0 and not producer.errors, (
                producer.outstanding,
                producer.errors[:3],
            )

            # A is back, under a new session: registered again
            async def a_registered() -> bool:
                brokers = (await client.get(f"{b_url}/admin/v2/brokers/e2e")).json()
                return a_id in brokers

            await eventually(a_registered, timeout=60, interval=0.2, message="A registered again")
            # the records: the left half Deleted (split by B), its halves Owned by B, A owns nothing
            await eventually(
                lambda: all(
                    (s := table.get(f"{namespace}/{q}")) is not None and s.record.state is S.OWNED
                    for q in QUARTERS
                ),
                timeout=30,
                message="B's split committed",
            )
            records = {r.bundle.rpartition("/")[2]: r.record for r in table if r.bundle.startswith(namespace)}
            assert records[FULL].state is S.DELETED
            assert records[LEFT].state is S.DELETED
            assert {q: records[q].dst for q in QUARTERS} == {q: b_id for q in QUARTERS}
            assert not [r for r in records.values() if r.holder()[0] == a_id], records
            # and A believes it owns nothing of them
            owned = (await client.get(f"{a_url}/admin/v2/brokers/e2e/{a_id}/ownedNamespaces")).json()
            assert not [b for b in owned if b.startswith(namespace)], owned
            bundles = (await client.get(f"{a_url}/admin/v2/namespaces/{namespace}/bundles")).json()
            assert bundles["boundaries"] == ["0x00000000", "0x3fffffff", "0x7fffffff", "0xffffffff"]
    except BaseException:
        for i in range(2):
            print(f"--- broker {i}\n{cluster.log_tail(i, 200)}")
        raise
    finally:
        if producer is not None:
            producer.finish()
        if pulsar_client is not None:
            pulsar_client.close()
        table.close()
        await store.close()
        await cluster.stop()
