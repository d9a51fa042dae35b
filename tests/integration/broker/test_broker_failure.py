"""Killing brokers: their bundles are owned by the others after the session timeout; a new leader takes over.

Each backend gets its own 3-broker cluster with 2 s sessions: in-process brokers crashed on the
embedded store, and ``brokerlb broker`` processes SIGKILLed on ZooKeeper.
"""

from __future__ import annotations

import time

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.coordination import open_store
from brokerlb.testing import eventually
from brokerlb.testing.clusters import ProcessCluster

from .conftest import BACKENDS, make_cluster
from .helpers import lookup_data, lookups_converge_to_owners, new_namespace, owners_snapshot, topics_of

pytestmark = pytest.mark.asyncio(loop_scope="package")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_killed_brokers_bundles_move_and_a_new_leader_takes_over(backend, request) -> None:
    cluster = await make_cluster(backend, request, overrides={"metadataStoreSessionTimeoutMillis": 2000})
    store = open_store(cluster.store_url, session_timeout=10.0)
    await store.start()
    try:
        ns = new_namespace("kill")
        topics = topics_of(ns, 300)
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(ns, num_bundles=6)
            leader = (await admin.get_leader_broker())["brokerId"]
        await lookup_data(cluster.urls[0], topics)
        snap = await owners_snapshot(store, ns, require_all_owned=True)
        victim = next(b for b in cluster.broker_ids if b != leader and b in snap.owners.values())
        victim_index = cluster.broker_ids.index(victim)
        survivor = next(u for i, u in enumerate(cluster.urls) if i != victim_index)

        killed_at = time.monotonic()
        await cluster.kill(victim_index)
        snap = await owners_snapshot(store, ns)
        assert victim in snap.owners.values(), "a crash releases nothing"

        async def victim_gone(url: str = survivor) -> bool:
            s = await owners_snapshot(store, ns)
            async with AsyncAdminClient(url) as admin:
                active = await admin.get_active_brokers()
            return victim not in active and victim not in s.owners.values()

        await eventually(
            victim_gone, timeout=cluster.session_timeout + 10, message="the victim's session expired"
        )
        assert time.monotonic() - killed_at >= cluster.session_timeout * 0.5
        await lookups_converge_to_owners(survivor, topics, store, ns)  # the survivor's view follows the store
        snap = await owners_snapshot(store, ns, require_all_owned=True)
        assert set(snap.owners.values()) <= set(cluster.broker_ids) - {victim}

        # now the leader dies: the last broker leads and still places new bundles
        leader_index = cluster.broker_ids.index(leader)
        last = next(i for i in range(len(cluster.urls)) if i not in (victim_index, leader_index))
        await cluster.kill(leader_index)

        async def new_leader() -> bool:
            async with AsyncAdminClient(cluster.urls[last]) as admin:
                try:
                    return (await admin.get_leader_broker())["brokerId"] == cluster.broker_ids[last]
                except Exception:
                    return False

        await eventually(new_leader, timeout=cluster.session_timeout + 10, message="a new leader")
        ns2 = new_namespace("after")
        async with AsyncAdminClient(cluster.urls[last]) as admin:
            await admin.create_namespace(ns2, num_bundles=3)
        answers = await lookup_data(cluster.urls[last], topics_of(ns2, 30))
        assert {a["httpUrl"] for a in answers.values()} == {cluster.urls[last]}
        assert await victim_gone(cluster.urls[last])
    finally:
        await store.close()
        await cluster.stop()
    if isinstance(cluster, ProcessCluster):  # SIGTERM: a graceful stop exits with 0
        codes = cluster.returncodes()
        assert [codes[i] for i in range(len(codes)) if i not in (victim_index, leader_index)] == [0], codes
