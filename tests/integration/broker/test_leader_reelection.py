"""A leader that loses its lease inside its session, and is elected again, keeps its load data.

The finding: a leader paused for less than its session timeout (2-2.5 s of a 3 s session) lost its
lease, was re-elected, and started again with empty in-memory load data. Here the leader broker's
connection to the store drops (its lease ends at once, its session and leader node stay alive), then
comes back: the same broker leads again with a new epoch and its Leader -- load data, bundle
histories, strategy state, refresh count -- is the one it had, and its cycles go on from there.
"""

from __future__ import annotations

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.broker.data.synthetic import SyntheticClients
from brokerlb.broker.data.topics import TopicStats
from brokerlb.testing import eventually
from brokerlb.testing.clusters import InProcessCluster

from .helpers import new_namespace, topics_of

pytestmark = pytest.mark.asyncio(loop_scope="package")

FAST = {
    "loadBalancerReportUpdateMinIntervalMillis": 100,
    "loadBalancerHostUsageCheckIntervalMinutes": 0.001,
    "statsUpdateFrequencyInSecs": 1,
}


async def test_a_leader_re_elected_inside_its_session_keeps_its_load_data() -> None:
    cluster = await InProcessCluster(2, FAST).start()
    clients = None
    try:
        ns = new_namespace("reelect")
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(ns, num_bundles=4)
        clients = SyntheticClients(cluster.services)
        await clients.add_many({t: TopicStats(msg_rate_in=50) for t in topics_of(ns, 20)})
        service = next(s for s in cluster.services if s.is_leader)
        leader = service.load_manager.leader

        def history() -> dict[str, int]:  # bundle -> short-term samples the leader holds
            data = leader.load_state.load_data.bundle_data
            return {b: d.short_term_data.num_samples for b, d in data.items() if b.startswith(ns)}

        await eventually(lambda: len(history()) == 4, message="the bundles' first samples")
        rate = 50.0
        for _ in range(5):  # traffic changes the reports carry, each giving the leader a new sample
            if min(history().values()) >= 3:
                break
            rate *= 3
            seen = leader.refreshes
            for topic in topics_of(ns, 20):
                clients.set_stats(topic, TopicStats(msg_rate_in=rate, msg_throughput_in=rate * 2_000))
            await eventually(lambda seen=seen: leader.refreshes > seen, message="a refresh after the change")
        assert min(history().values()) >= 3, history()
        before = history()
        state, strategy, refreshes = leader.load_state, leader.strategy_state, leader.refreshes
        epoch = service.election.epoch

        service.store.drop_connection()  # its lease ends now; session and leader node live on
        assert not service.is_leader
        service.store.restore_connection()
        await eventually(lambda: service.is_leader and service.election.epoch > epoch, message="leads again")

        assert service.load_manager.leader is leader, "the broker keeps one Leader for its life"
        assert leader.load_state is state and leader.strategy_state is strategy
        assert leader.refreshes >= refreshes
        kept = history()
        assert all(kept[b] >= n for b, n in before.items()), (before, kept)
        await eventually(lambda: leader.refreshes > refreshes, message="cycles go on after re-election")
        assert all(history()[b] >= n for b, n in before.items())
    finally:
        if clients is not None:
            await clients.close()
        await cluster.stop()
