"""brokerlb's balancer is calm on a live in-process cluster (docs/balancer.md, "Calm").

* An idle cluster -- three brokers at a fraction of a percent of load, cold namespaces of many
  bundles that a merge-happy balancer would fold, one bundle carrying most of the (tiny) traffic --
  goes through many shedding intervals with brokerlb shedding, merges on and no ring-change
  cool-down: the leader moves, splits and merges nothing, and each cycle says ``Skip``/``Idle``.
* An operator's split and unload sent to a broker that is not the leader reach the leader: its
  balancer names them in its decisions (``Skip``/``Admin``) and its status (``operatorActions``),
  does not move the unloaded bundle and merges nothing of the split range while it holds back.

Every wait is on a condition (shedding cycles counted by the leader, records published).
"""

from __future__ import annotations

from collections import Counter

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.broker.data.synthetic import SyntheticClients
from brokerlb.broker.data.topics import TopicStats
from brokerlb.loadbalance.split.thresholds import range_bounds
from brokerlb.ring import NamespaceBundles
from brokerlb.testing import eventually
from brokerlb.testing.clusters import InProcessCluster

from .helpers import new_namespace, topics_of

pytestmark = pytest.mark.asyncio(loop_scope="package")

CALM = {
    "loadBalancerSheddingIntervalMinutes": 0.01,  # 0.6 s
    "loadBalancerReportUpdateMinIntervalMillis": 100,
    "loadBalancerHostUsageCheckIntervalMinutes": 0.001,
    "loadBalancerLoadSheddingStrategy": "brokerlb",
    "loadBalancerLoadPlacementStrategy": "brokerlb",
    "loadBalancerDistributeBundlesEvenlyEnabled": False,
    # no cool-down to hide behind: only the idle threshold and the operator holds keep it calm
    "brokerlbBalancerNoMergeAfterSplitMinutes": 0,
    "brokerlbBalancerNoSplitAfterMergeMinutes": 0,
    "brokerlbModelCores": 1,
    "brokerlbModelMsgRatePerCore": 10_000,
}


def leader_of(cluster: InProcessCluster):
    return next(s for s in cluster.services if s.is_leader)


def shedding_records(service) -> list:
    return [r for r in service.leader_tasks.records if r.kind == "shedding"]


def overlaps(a: str, b: str) -> bool:
    if a.rpartition("/")[0] != b.rpartition("/")[0]:
        return False
    (lo_a, up_a), (lo_b, up_b) = range_bounds(a), range_bounds(b)
    return lo_a < up_b and lo_b < up_a


async def test_an_idle_cluster_is_left_alone_over_many_shedding_intervals() -> None:
    cycles = 30
    cluster = await InProcessCluster(3, {**CALM, "loadBalancerSheddingGracePeriodMinutes": 0.01}).start()
    try:
        namespaces = [new_namespace("idle") for _ in range(2)]
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            for ns in namespaces:
                await admin.create_namespace(ns, num_bundles=16)
            clients = SyntheticClients(cluster.services)
            topics = [t for ns in namespaces for t in topics_of(ns, 40)]
            # 0.0-0.3 % of a modelled core per broker; the first topic carries most of it
            await clients.add_many({t: TopicStats(msg_rate_in=0.1) for t in topics})
            clients.set_stats(topics[0], TopicStats(msg_rate_in=15.0, msg_throughput_in=15_000.0))
            before = {ns: (await admin.get_bundles(ns))["numBundles"] for ns in namespaces}
            leader = leader_of(cluster)
            start = leader.leader_tasks.cycles["shedding"]
            await eventually(
                lambda: leader.leader_tasks.cycles["shedding"] >= start + cycles,
                timeout=120,
                message=f"{cycles} shedding cycles",
            )
            records = shedding_records(leader)
            assert len(records) >= cycles
            for record in records:
                assert not record.moves and not record.splits and not record.merges, record.to_json()
            keys = Counter(k for r in records for k in r.decision_keys())
            # (a cycle before the other brokers' first reports finds a single broker)
            assert set(keys) <= {"unload/Skip/Idle", "unload/Skip/SingleBroker"}, keys
            assert keys["unload/Skip/Idle"] >= cycles - 2, keys
            splits = [r for r in leader.leader_tasks.records if r.kind == "split" and r.splits]
            assert not splits, [r.to_json() for r in splits]
            after = {ns: (await admin.get_bundles(ns))["numBundles"] for ns in namespaces}
            assert after == before
            status = await admin.get_balancer_status()
            assert status["state"] == "ready" and status["reason"].startswith("Idle: ")
        await clients.close()
    finally:
        await cluster.stop()


async def test_operator_actions_reach_the_leader_and_are_held() -> None:
    grace_minutes = 0.25  # 15 s: many shedding cycles
    cluster = await InProcessCluster(
        3, {**CALM, "loadBalancerSheddingGracePeriodMinutes": grace_minutes}
    ).start()
    try:
        ns = new_namespace("operator")
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(ns, num_bundles=8)
            clients = SyntheticClients(cluster.services)
            topics = topics_of(ns, 64)
            # the topics first, idle: nothing moves or merges while lookups place them and the
            # operator acts; then about 20 % a broker, and the balancer has work to do
            await clients.add_many({t: TopicStats(msg_rate_in=0.1) for t in topics})
            leader = leader_of(cluster)
            other = next(s for s in cluster.services if not s.is_leader)
            ring = NamespaceBundles.create(ns, 8)
            split_bundle = str(ring.find_bundle(topics[0]))
            unloaded = next(str(b) for b in ring.bundles if str(b) != split_bundle)
            async with AsyncAdminClient(
                cluster.urls[cluster.services.index(other)]
            ) as via_other:  # not the leader
                await via_other.split_bundle(ns, split_bundle.rpartition("/")[2])
                await via_other.unload_bundle(ns, unloaded.rpartition("/")[2])
            for topic in topics:
                clients.set_stats(topic, TopicStats(msg_rate_in=100.0))
            held = leader.load_manager.leader.operator_actions
            assert held[split_bundle].kind.value == "split"
            assert (
                held[split_bundle].source in cluster.broker_ids
            )  # its owner then (the balancer moves bundles)
            assert held[unloaded].kind.value == "unload"
            at = max(held[split_bundle].at_ms, held[unloaded].at_ms)  # both held from here
            until = min(held[split_bundle].at_ms, held[unloaded].at_ms) + int(grace_minutes * 60_000)

            def said_so() -> bool:
                return any(
                    {d.bundle for d in r.decisions if d.reason.value == "Admin"} >= {split_bundle, unloaded}
                    for r in shedding_records(leader)
                )

            await eventually(said_so, timeout=60, message="a shedding cycle names the operator's actions")
            status = await admin.get_balancer_status()  # answered by the leader
            assert split_bundle in status["operatorActions"] and unloaded in status["operatorActions"]
            assert status["operatorActions"][split_bundle]["untilMs"] == held[split_bundle].at_ms + int(
                grace_minutes * 60_000
            )
            for record in shedding_records(leader):
                if not at <= record.at_ms < until:
                    continue
                for move in record.moves:  # the split's children may move (the split is not undone)
                    assert move.bundle not in (split_bundle, unloaded)
                for merge in record.merges:
                    assert not any(overlaps(p, split_bundle) or p == unloaded for p in merge.bundles)
        await clients.close()
    finally:
        await cluster.stop()
