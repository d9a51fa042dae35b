"""brokerlb's balancer in the live leader, end to end: three ``brokerlb broker`` processes on a real
ZooKeeper with ``loadBalancerLoadSheddingStrategy=brokerlb``, traffic through the data path from the
official client.

One bundle carries most of the cluster's traffic (two topics, one in each half of its range), a few
cold topics the rest. The leader's balancer sees a bundle too hot for any broker and splits it
(reason ``OverTarget``: the split travels in the shedding cycle's result and the live leader
carries it out through the owner); the two children stay on the hot broker, which is then over its
target, and the balancer transfers one child to a lighter broker. The official client follows the
split and every move: every message acknowledged to a producer is received by its subscription.
The leader's own counters (``/metrics``) say what it did; the owners are read by topic lookups.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.ring import NamespaceBundles
from brokerlb.testing.clusters import ProcessCluster
from brokerlb.testing.observe import counted, lb_counters, modelled_cpu, topic_owners
from brokerlb.testing.official_client import OfficialTraffic
from brokerlb.testing.waiting import eventually

from .conftest import off_loop, process_service_url, zk_process_cluster

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.asyncio(loop_scope="function")]

GUARD = 120.0
NAMESPACE = "public/e2e-balancer"
#: messages/s produced per hot topic (two, in one bundle) and per cold topic (three, elsewhere);
#: with one subscription each topic carries twice that (in + out)
HOT_RATE, COLD_RATE = 50.0, 10.0

OVERRIDES = {
    "metadataStoreSessionTimeoutMillis": 10000,
    "statsUpdateFrequencyInSecs": 2,
    "loadBalancerReportUpdateMinIntervalMillis": 500,
    "loadBalancerHostUsageCheckIntervalMinutes": 0.01,
    "loadBalancerSheddingIntervalMinutes": 0.02,  # 1.2 s
    "loadBalancerSheddingGracePeriodMinutes": 0.05,  # a split child may move 3 s after the split
    "loadBalancerLoadSheddingStrategy": "brokerlb",
    "loadBalancerLoadPlacementStrategy": "brokerlb",
    # the modelled CPU: the hot bundle (200 msg/s in + out) is half a broker, the cluster's balanced
    # load about a fifth
    "brokerlbModelCores": 1,
    "brokerlbModelMsgRatePerCore": 400,
    # the children stay with the owner that split the bundle (Pulsar's default unloads them and the
    # clients' lookups place them again): the move off the hot broker is then the balancer's
    "loadBalancerAutoUnloadSplitBundlesEnabled": False,
    # no merges of the cold neighbours: the live merge unloads its parts while their placement is
    # refused ("being merged"), so the owner's hand-off drops the topics' state and a message
    # acknowledged but not yet delivered can be lost (seen here once in three runs)
    "brokerlbBalancerMergeColdBundles": False,
}


def topics_in_halves(namespace: str) -> tuple[list[str], list[str]]:
    """Two topics in the first bundle of a 4-bundle namespace, one in each half of its range (what
    ``range_equally_divide`` splits it into), and one topic in each of the three other bundles."""
    four, eight = NamespaceBundles.create(namespace, 4), NamespaceBundles.create(namespace, 8)
    first = str(four.bundles[0])
    halves = [str(b) for b in eight.bundles[:2]]
    hot: dict[str, str] = {}
    cold: dict[str, str] = {}
    n = 0
    while len(hot) < 2 or len(cold) < 3:
        topic = f"persistent://{namespace}/t{n}"
        n += 1
        outer, inner = str(four.find_bundle(topic)), str(eight.find_bundle(topic))
        if outer == first and inner in halves:
            hot.setdefault(inner, topic)
        elif outer != first:
            cold.setdefault(outer, topic)
    return list(hot.values()), list(cold.values())


def owners(admin: AsyncAdminClient, cluster: ProcessCluster, topics: list[str]) -> Any:
    return topic_owners(admin, cluster.urls, cluster.broker_ids, topics)


async def test_the_live_leader_splits_the_hot_bundle_and_transfers_load_off_the_hot_broker(
    zk_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = await zk_process_cluster(zk_server, OVERRIDES, "balancer-e2e")
    traffic: OfficialTraffic | None = None
    seen: dict[tuple[str, str, str], str] = {}
    try:
        hot_topics, cold_topics = topics_in_halves(NAMESPACE)
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(NAMESPACE, num_bundles=4)
            rates = {t: HOT_RATE for t in hot_topics} | {t: COLD_RATE for t in cold_topics}
            traffic = OfficialTraffic(process_service_url(cluster), rates, timeout=GUARD)
            await off_loop(traffic.start)
            await eventually(
                lambda: all(len(p.acked) >= 20 for p in traffic.producers.values()),
                GUARD,
                message="traffic flowing",
            )
            placed = await eventually(
                lambda: owners(admin, cluster, hot_topics), GUARD, message="the hot topics are owned"
            )
            hot = placed[hot_topics[0]]
            assert placed[hot_topics[1]] == hot, "both hot topics start in one bundle"

            async def split_by_the_balancer() -> bool:
                split = counted(
                    await lb_counters(cluster.urls),
                    "pulsar_lb_bundles_split_breakdown_total",
                    result="Success",
                    reason="OverTarget",
                )
                return split >= 1

            await eventually(
                split_by_the_balancer, GUARD, interval=0.5, message="the balancer split the hot bundle"
            )

            async def a_child_moved_off_the_hot_broker() -> dict[str, str] | None:
                now = await owners(admin, cluster, hot_topics)
                metrics = await lb_counters(cluster.urls)
                moved = counted(metrics, "brokerlb_moves_total", kind="transfer")
                return now if now and moved >= 1 and len(set(now.values())) == 2 else None

            after = await eventually(
                a_child_moved_off_the_hot_broker,
                GUARD,
                interval=0.5,
                message="a split child left the hot broker",
            )

            statuses: list[dict[str, Any]] = []

            def nothing_to_move(status: dict[str, Any]) -> bool:
                # 'ready', or 'waiting' on something no grace period ends (no destination, below
                # the minimum gain): nothing in flight and the cycle moved nothing either way
                waiting_for_nothing = status["state"] == "waiting" and status["graceUntilMs"] is None
                return status["state"] == "ready" or waiting_for_nothing

            async def settled() -> dict[str, Any] | None:
                status = await admin.get_balancer_status()
                seen.update(
                    {
                        (m["bundle"], m["source"], m["destination"]): m["reason"]
                        for m in (status["lastCycle"] or {}).get("moves", [])
                    }
                )
                before = statuses[-1] if statuses else None
                statuses.append(status)
                # settled in two shedding cycles in a row (not one cycle caught between moves)
                if (
                    before is not None
                    and nothing_to_move(before)
                    and nothing_to_move(status)
                    and (status["lastCycleAtMs"] or 0) > (before["lastCycleAtMs"] or 0)
                ):
                    return status
                return None

            try:
                status = await eventually(
                    settled, GUARD, interval=0.5, message="the balancer has nothing to move"
                )
            except AssertionError:
                print(f"balancer status: {statuses[-1] if statuses else None}")
                print(f"states seen: {[(s['state'], s['reason']) for s in statuses[-5:]]}")
                raise
            load = await modelled_cpu(cluster.urls, cluster.broker_ids)
            metrics = await lb_counters(cluster.urls)
        await off_loop(traffic.stop_producing)
        try:
            await eventually(
                traffic.all_received, GUARD, message="every subscription received every acknowledged message"
            )
        except AssertionError:
            for r, c in zip(traffic.reports(), traffic.consumers, strict=True):
                if r.lost:
                    print(f"{c.topic}: {len(r.lost)} of {r.acked} lost, e.g. {r.lost[:5]}")
            kept = tempfile.mkdtemp(prefix="brokerlb-e2e-balancer-logs-")
            for i in range(3):
                shutil.copy(cluster.log_path(i), kept)
            print(f"broker logs kept in {kept}; moves seen {seen}")
            raise
        reports = traffic.reports()
        failures = traffic.failures()
    finally:
        if traffic is not None:
            await off_loop(traffic.close)
        await cluster.stop()

    with capsys.disabled():
        print(
            f"\nhot broker {hot}; hot topics now on {sorted(after.values())}; modelled CPU % {load}; "
            f"transfers {counted(metrics, 'brokerlb_moves_total', kind='transfer'):.0f}, splits "
            f"{counted(metrics, 'pulsar_lb_bundles_split_total'):.0f}; balancer {status.get('state')}: "
            f"{status.get('reason')}; {sum(r.acked for r in reports)} acknowledged, "
            f"{sum(r.received for r in reports)} received, {sum(r.duplicates for r in reports)} duplicates, "
            f"{sum(len(r.lost) for r in reports)} lost; moves seen {seen}"
        )
    assert not failures, failures
    assert all(r.ok for r in reports), [r for r in reports if not r.ok]
