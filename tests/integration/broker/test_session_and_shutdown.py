"""Session loss and graceful shutdown, on in-process brokers (where Pulsar users saw bundles
stuck after a restart, and stopping brokers re-register and receive new bundles).

* a broker whose metadata session expires stops leading at once, then re-registers and
  re-acquires the bundles nobody else took; its topics' stats are kept;
* a broker that stops gracefully releases its bundles (topics closed) and deregisters at
  once -- the others can take them immediately, no session timeout to wait for -- and takes
  no new bundle while stopping;
* unloading a namespace and deleting a bundle.
"""

from __future__ import annotations

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.broker.data.synthetic import SyntheticClients
from brokerlb.broker.data.topics import TopicStats
from brokerlb.errors import RemoteBrokerError
from brokerlb.ownership import BundleState
from brokerlb.testing import eventually
from brokerlb.testing.clusters import InProcessCluster

from .helpers import (
    assert_answers_match_owners,
    lookup_data,
    lookups_converge_to_owners,
    new_namespace,
    owners_snapshot,
    topics_of,
)

pytestmark = pytest.mark.asyncio(loop_scope="package")


async def test_session_expiry_stops_leading_then_the_broker_recovers() -> None:
    cluster = await InProcessCluster(2).start()
    try:
        leader = next(s for s in cluster.services if s.is_leader)
        ns = new_namespace("expiry")
        async with AsyncAdminClient(leader.url) as admin:
            await admin.create_namespace(ns, num_bundles=4)
        await lookup_data(leader.url, topics_of(ns, 40))
        assert any(b.startswith(ns) for b in leader.channel.owned())
        leader.store.expire_session()  # the server expires it: ephemerals gone, LOST then CONNECTED
        assert not leader.is_leader, "leadership ends at once"
        await eventually(
            lambda: (
                leader.registry.is_registered
                and leader.broker_id in cluster.services[1].registry.available_brokers()
            ),
            timeout=10,
            message="re-registered",
        )

        # the records of its ended session are orphans: the leader reassigns them (to either broker),
        # each to a live broker's session now
        async def reassigned() -> bool:
            snap = await owners_snapshot(cluster.services[1].store, ns)
            sessions = cluster.services[1].registry.sessions()
            owned = [r for r in snap.records.values() if r.state is BundleState.OWNED]
            return len(owned) == 4 and all(r.dst_session == sessions.get(r.dst or "") for r in owned)

        await eventually(reassigned, timeout=30, message="every bundle owned again, by live sessions")
        await eventually(lambda: any(s.is_leader for s in cluster.services), timeout=10, message="a leader")
        answers = await lookup_data(cluster.urls[1], topics_of(ns, 40))
        snap = await owners_snapshot(cluster.services[1].store, ns, require_all_owned=True)
        assert_answers_match_owners(answers, snap, ns)
    finally:
        await cluster.stop()


async def test_graceful_stop_releases_bundles_at_once_and_deregisters() -> None:
    # a long session: anything left behind would stay for 30 s and fail the test
    cluster = await InProcessCluster(3, {"metadataStoreSessionTimeoutMillis": 30000}).start()
    try:
        ns = new_namespace("stop")
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(ns, num_bundles=6)
        topics = topics_of(ns, 60)
        clients = SyntheticClients(cluster.services, lookup_url=cluster.urls[0])
        await clients.add_many({t: TopicStats(msg_rate_in=5) for t in topics})
        stopping = next(
            s
            for s in cluster.services
            if not s.is_leader and any(b.startswith(ns) for b in s.channel.owned())
        )
        mine = [b for b in stopping.channel.owned() if b.startswith(ns)]
        await stopping.stop()
        store = next(s for s in cluster.services if s.started).store
        snap = await owners_snapshot(store, ns)
        still = [b for b in mine if b in snap.owners and snap.owners[b] == stopping.broker_id]
        assert not still, "released before the process exits (the clients may have moved them already)"
        survivor = next(s for s in cluster.services if s.started)
        assert stopping.broker_id not in survivor.registry.available_brokers()
        # the clients of the closed topics reconnected to the others
        await eventually(
            lambda: all(b not in (None, stopping.broker_id) for b in clients.placement().values()),
            timeout=15,
            message="clients moved to the other brokers",
        )
        await clients.close()
        await lookups_converge_to_owners(survivor.url, topics, store, ns)  # its view follows the store
        await owners_snapshot(store, ns, require_all_owned=True)
    finally:
        await cluster.stop()


async def test_unload_namespace_and_delete_bundle() -> None:
    cluster = await InProcessCluster(2).start()
    try:
        ns = new_namespace("nsops")
        async with AsyncAdminClient(cluster.urls[1]) as admin:
            await admin.create_namespace(ns, num_bundles=4)
            topics = topics_of(ns, 40)
            await lookup_data(cluster.urls[1], topics)
            store = cluster.services[0].store
            assert len((await owners_snapshot(store, ns)).owners) == 4
            await admin.unload_namespace(ns)
            assert (await owners_snapshot(store, ns)).owners == {}
            # a bundle with topics is not deleted without force (409), then is
            clients = SyntheticClients(cluster.services)
            await clients.add(topics[0], TopicStats(msg_rate_in=1))
            snap = await owners_snapshot(store, ns)
            bundle = next(iter(snap.owners)).rpartition("/")[2]
            with pytest.raises(RemoteBrokerError) as busy:
                await admin.delete_bundle(ns, bundle)
            assert busy.value.status == 409 and "non empty" in busy.value.reason
            await clients.close()
            await admin.delete_bundle(ns, bundle, force=True)
            assert f"{ns}/{bundle}" not in (await owners_snapshot(store, ns)).owners
    finally:
        await cluster.stop()
