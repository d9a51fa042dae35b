"""Regression for Apache Pulsar #24057: the broker registry never recovers from a session expiry.

Pulsar's report: the extensible load manager's broker registry did not re-register the broker after
its metadata session expired (or reconnected): the broker's registration node stayed gone, so the
broker was never again a candidate for bundles, and clients of bundles it owned could not produce.

Here, on a real ZooKeeper with broker processes: a broker is frozen (SIGSTOP) past its session
timeout, so ZooKeeper expires its session and deletes its registration; after SIGCONT it registers
again under its new session (another broker's view of the active brokers lists it again, and its
registration node belongs to a live session), and it takes bundles again: a transfer to it
succeeds and lookups of the bundle's topics name it.
"""

from __future__ import annotations

import os
import signal
import uuid

import httpx
import pytest

from brokerlb.coordination import open_store
from brokerlb.coordination.paths import broker_path
from brokerlb.testing.clusters import ProcessCluster
from brokerlb.testing.waiting import eventually

pytestmark = [pytest.mark.zookeeper, pytest.mark.slow]


async def test_pulsar_24057_a_broker_registers_again_after_its_session_expired(zk_server) -> None:
    store_url = f"zk:{zk_server.hosts}/registry-{uuid.uuid4().hex[:8]}"
    root = open_store(f"zk:{zk_server.hosts}", session_timeout=10.0)
    await root.start()
    await root.ensure_path(store_url.split(zk_server.hosts, 1)[1])
    await root.close()
    cluster = await ProcessCluster(store_url, 3, {"metadataStoreSessionTimeoutMillis": 3000}).start()
    store = open_store(store_url, session_timeout=10.0)
    await store.start()
    frozen_id, frozen_url = cluster.broker_ids[2], cluster.urls[2]
    path = broker_path(frozen_id)
    try:
        before = await store.get(path)
        async with httpx.AsyncClient(timeout=30, follow_redirects=True) as client:

            async def active() -> list[str]:
                answer = await client.get(f"{cluster.urls[0]}/admin/v2/brokers/e2e")
                return answer.json() if answer.status_code == 200 else []

            assert frozen_id in await active()
            os.kill(cluster.processes[2].pid, signal.SIGSTOP)
            try:
                await eventually(
                    lambda: _absent(store, path), timeout=60, interval=0.1, message="its registration expired"
                )
                await eventually(
                    lambda: _unlisted(active, frozen_id), timeout=60, message="no longer listed as active"
                )
            finally:
                os.kill(cluster.processes[2].pid, signal.SIGCONT)
            # registered again, by a new session
            node = await eventually(lambda: store.get_or_none(path), timeout=60, message="registered again")
            assert node.stat.ephemeral_owner != before.stat.ephemeral_owner
            await eventually(lambda: _listed(active, frozen_id), timeout=60, message="listed as active again")
            # and it takes bundles again
            namespace = f"public/registry-{uuid.uuid4().hex[:6]}"
            assert (await client.put(f"{cluster.urls[0]}/admin/v2/namespaces/{namespace}")).status_code == 204
            lookup = f"{cluster.urls[0]}/lookup/v2/topic/persistent/{namespace}/t"
            owner = (await client.get(lookup)).json()["httpUrl"]
            bundles = (await client.get(f"{cluster.urls[0]}/admin/v2/namespaces/{namespace}/bundles")).json()
            bundle = _bundle_of_topic(f"persistent://{namespace}/t", bundles["boundaries"])
            if owner != frozen_url:
                moved = await client.put(
                    f"{owner}/admin/v2/namespaces/{namespace}/{bundle}/unload",
                    params={"destinationBroker": frozen_id},
                )
                assert moved.status_code == 204, moved.text

            async def owned_by_it() -> bool:
                answer = await client.get(lookup)
                return answer.status_code == 200 and answer.json()["httpUrl"] == frozen_url

            await eventually(
                owned_by_it, timeout=60, interval=0.1, message="the recovered broker owns the bundle"
            )
    finally:
        await store.close()
        await cluster.stop()


async def _absent(store, path: str) -> bool:
    return await store.get_or_none(path) is None


async def _unlisted(active, broker_id: str) -> bool:
    return broker_id not in await active()


async def _listed(active, broker_id: str) -> bool:
    return broker_id in await active()


def _bundle_of_topic(topic: str, boundaries: list[str]) -> str:
    from brokerlb.ring import NamespaceBundles

    bundles = NamespaceBundles.from_boundaries(topic.split("://", 1)[1].rsplit("/", 1)[0], boundaries)
    return bundles.find_bundle(topic).range
