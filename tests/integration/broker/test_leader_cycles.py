"""The leader's cycles on a live in-process cluster, with injected traffic (synthetic clients).

* shedding: an overloaded broker's bundles move to others (OverloadShedder, the default
  ThresholdShedder and brokerlb's own balancer), as transfers (``brokerlbModularTransferEnabled``)
  or as Pulsar's unload with a one-shot affinity;
* split: a bundle over ``loadBalancerNamespaceBundleMaxTopics`` is split by its owner;
* persistence: bundle data and time averages reach the store;
* history: every report the leader reads lands in the JSON Lines sink.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from typer.testing import CliRunner

from brokerlb.admin import AsyncAdminClient
from brokerlb.broker.data.synthetic import SyntheticClients
from brokerlb.broker.data.topics import TopicStats
from brokerlb.cli.admin import app as admin_app
from brokerlb.coordination.paths import BROKER_TIME_AVERAGE_ROOT, bundle_data_path
from brokerlb.testing import eventually
from brokerlb.testing.clusters import InProcessCluster

from .helpers import new_namespace, topics_of

pytestmark = pytest.mark.asyncio(loop_scope="package")

FAST = {
    "loadBalancerSheddingIntervalMinutes": 0.02,  # 1.2 s
    "loadBalancerSheddingGracePeriodMinutes": 0.05,
    "loadBalancerReportUpdateMinIntervalMillis": 100,
    "loadBalancerHostUsageCheckIntervalMinutes": 0.001,
    "brokerlbModelCores": 1,
    "brokerlbModelMsgRatePerCore": 10_000,
    # ThresholdShedder: a short usage memory and no minimum to move, so the hot broker is shed within
    # a few cycles whatever the box's load does to the measured rates
    "loadBalancerHistoryResourcePercentage": 0.5,
    "loadBalancerBundleUnloadMinThroughputThreshold": 0,
    # the destination is the least loaded broker: with the namespace's even spread on, a hot broker
    # holding fewer of the namespace's bundles than the others is the only candidate for its own
    # bundles (Pulsar's removeMostServicingBrokersForNamespace), and nothing moves
    "loadBalancerDistributeBundlesEvenlyEnabled": False,
}


def leader_of(cluster: InProcessCluster):
    return next(s for s in cluster.services if s.is_leader)


async def hot_broker_setup(
    cluster: InProcessCluster, ns: str, hot_usage: float = 0.92
) -> tuple[SyntheticClients, str]:
    """Traffic on every topic of ``ns``; the topics of one broker together make its modelled CPU
    ``hot_usage`` (over OverloadShedder's 85%, under the 100% above which ThresholdShedder ignores
    a usage), however many of the namespace's topics it happens to hold."""
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=6)
    clients = SyntheticClients(cluster.services)
    topics = topics_of(ns, 60)
    await clients.add_many({t: TopicStats(msg_rate_in=10) for t in topics})
    placement = clients.placement()
    hot, count = Counter(placement.values()).most_common(1)[0]
    hot_rate = hot_usage * FAST["brokerlbModelMsgRatePerCore"] * FAST["brokerlbModelCores"] / count
    for topic, broker in placement.items():
        if broker == hot:
            clients.set_stats(topic, TopicStats(msg_rate_in=hot_rate, msg_throughput_in=hot_rate * 20_000))
    return clients, hot


async def bundle_level_hot_broker(cluster: InProcessCluster, ns: str) -> tuple[SyntheticClients, str]:
    """Six bundles; those of the broker holding the most carry 1,000 msg/s each (10 % of a modelled
    core), the others 300: the busiest broker is over target and above brokerlb's idle threshold,
    no bundle alone is, and one transfer always lowers it."""
    from brokerlb.ring import NamespaceBundles

    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=6)
    clients = SyntheticClients(cluster.services)
    topics = topics_of(ns, 60)
    await clients.add_many({t: TopicStats(msg_rate_in=1) for t in topics})
    ring = NamespaceBundles.create(ns, 6)
    bundle_of = {t: str(ring.find_bundle(t)) for t in topics}
    owner_of = {bundle_of[t]: broker for t, broker in clients.placement().items()}
    hot = Counter(owner_of.values()).most_common(1)[0][0]
    per_bundle = Counter(bundle_of.values())
    for topic in topics:
        bundle = bundle_of[topic]
        total = 1000.0 if owner_of[bundle] == hot else 300.0
        clients.set_stats(topic, TopicStats(msg_rate_in=total / per_bundle[bundle]))
    return clients, hot


def executed_moves(leader, source: str) -> list:
    """The moves off ``source`` the leader carried out, oldest first."""
    return [
        m
        for r in leader.records
        for m, done in zip(r.moves, r.moves_done, strict=True)
        if done and m.source == source
    ]


@pytest.mark.parametrize(
    ("strategy", "transfer"),
    [("OverloadShedder", True), ("ThresholdShedder", True), ("ThresholdShedder", False)],
)
async def test_shedding_moves_bundles_off_an_overloaded_broker(strategy, transfer) -> None:
    conf = {**FAST, "loadBalancerLoadSheddingStrategy": strategy, "brokerlbModularTransferEnabled": transfer}
    cluster = await InProcessCluster(3, conf).start()
    try:
        clients, hot = await hot_broker_setup(cluster, new_namespace("shed"))
        leader = leader_of(cluster).leader_tasks

        def moves():
            return executed_moves(leader, hot)

        try:
            await eventually(moves, timeout=60, message=f"{strategy} unloads from the hot broker")
        except AssertionError as exc:
            last = leader.last_shedding.to_json() if leader.last_shedding else None
            raise AssertionError(f"{exc}; last shedding cycle: {last}") from None
        move = moves()[0]
        assert move.destination and move.destination != hot, "the shedder names a destination"
        assert move.transfer is transfer
        # the bundle is owned by the destination (handed over, or placed there by the affinity at
        # the clients' next lookup) and the clients followed it
        channel = leader_of(cluster).channel

        async def moved() -> bool:
            return channel.owner(move.bundle).broker == move.destination

        await eventually(moved, timeout=60, message="the bundle is owned by the destination")
        await eventually(lambda: clients.reconnects > 0, timeout=60, message="clients reconnected")
        # why it moved: the leader's decision, and its one transition of the bundle's record
        namespace, _, bundle_range = move.bundle.rpartition("/")
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            story = (await admin.bundle_story(namespace, bundle_range))["transitions"]
        leader_id = leader_of(cluster).broker_id
        assert any(
            e["kind"] == "decision"
            and e["recordedBy"] == leader_id
            and e["reason"] == move.reason
            and e["executed"]
            for e in story
        ), story
        assert any(
            e["kind"] == "transition"
            and e.get("source") == hot
            and e["by"] == "leader"
            and move.reason in e["reason"]
            and (e["from"], e["to"]) == ("Owned", "Releasing")
            for e in story
        ), story
        # the operator's command renders the same story (it crashed on the leader's decisions)
        table = await asyncio.to_thread(
            CliRunner().invoke,
            admin_app,
            [
                "--url",
                cluster.urls[0],
                "--table",
                "namespaces",
                "bundle-story",
                namespace,
                "--bundle",
                bundle_range,
            ],
            env={"COLUMNS": "250"},
        )
        assert table.exit_code == 0, table.output
        assert f"leader decided {'transfer' if transfer else 'unload'}" in table.output, table.output
        await clients.close()
    finally:
        await cluster.stop()


async def test_brokerlb_balancer_transfers_load_off_the_hot_broker_in_the_live_leader() -> None:
    cluster = await InProcessCluster(
        3,
        {
            **FAST,
            "loadBalancerLoadSheddingStrategy": "brokerlb",
            "loadBalancerLoadPlacementStrategy": "brokerlb",
        },
    ).start()
    try:
        clients, hot = await bundle_level_hot_broker(cluster, new_namespace("balancer"))
        leader = leader_of(cluster).leader_tasks
        try:
            await eventually(
                lambda: executed_moves(leader, hot),
                timeout=60,
                message="brokerlb transfers from the hot broker",
            )
        except AssertionError as exc:
            last = leader.last_shedding.to_json() if leader.last_shedding else None
            raise AssertionError(f"{exc}; last shedding cycle: {last}") from None
        move = executed_moves(leader, hot)[0]
        assert move.destination and move.destination != hot and move.transfer
        assert "objective gain" in move.detail and "budget used" in move.detail
        record = next(r for r in leader.records if move in r.moves)
        assert record.stats["balancedLoad"] > 0 and "busiestBefore" in record.stats
        await clients.close()
    finally:
        await cluster.stop()


async def test_a_bundle_with_too_many_topics_is_split_by_the_leader() -> None:
    cluster = await InProcessCluster(
        3,
        {
            **FAST,
            "loadBalancerNamespaceBundleMaxTopics": 5,
            "loadBalancerAutoUnloadSplitBundlesEnabled": False,
        },
    ).start()
    try:
        ns = new_namespace("autosplit")
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(ns, num_bundles=1)
            clients = SyntheticClients(cluster.services)
            await clients.add_many({t: TopicStats(msg_rate_in=1) for t in topics_of(ns, 12)})

            async def split() -> bool:
                return (await admin.get_bundles(ns))["numBundles"] > 1

            await eventually(split, timeout=20, message="the leader split the bundle")

            def done() -> list:
                tasks = leader_of(cluster).leader_tasks
                return [r for r in tasks.records if r.kind == "split" and any(r.splits_done)]

            records = await eventually(done, timeout=20, message="the leader recorded its split as done")
            assert str(records[0].splits[0].reason) == "Topics"
            await clients.close()
    finally:
        await cluster.stop()


async def test_leader_persists_bundle_data_and_time_averages(tmp_path) -> None:
    cluster = await InProcessCluster(
        2, {**FAST, "loadBalancerResourceQuotaUpdateIntervalMinutes": 0.01}
    ).start()
    try:
        ns = new_namespace("persist")
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(ns, num_bundles=2)
        clients = SyntheticClients(cluster.services)
        topic = f"persistent://{ns}/t"
        await clients.add(topic, TopicStats(msg_rate_in=100))
        store = cluster.services[0].store
        bundle = str(
            cluster.services[0]
            .bundles.cached(__import__("brokerlb").NamespaceName.parse(ns))
            .find_bundle(topic)
        )

        async def persisted() -> bool:
            node = await store.get_or_none(bundle_data_path(bundle))
            brokers = (
                await store.children(BROKER_TIME_AVERAGE_ROOT)
                if await store.exists(BROKER_TIME_AVERAGE_ROOT)
                else []
            )
            return node is not None and b"shortTermData" in node.data and len(brokers) == 2

        await eventually(persisted, timeout=15, message="bundle data and time averages written")
        await clients.close()
    finally:
        await cluster.stop()


async def test_leader_appends_every_report_to_the_history_sink(tmp_path) -> None:
    history = pytest.importorskip("brokerlb.history")
    cluster = await InProcessCluster(2, {**FAST, "brokerlbLoadHistoryDir": str(tmp_path)}).start()
    try:
        clients = SyntheticClients(cluster.services)
        ns = new_namespace("history")
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(ns, num_bundles=2)
        await clients.add(f"persistent://{ns}/a", TopicStats(msg_rate_in=50))
        sink = leader_of(cluster).leader_tasks.history

        def both_written_one_with_traffic() -> bool:
            written = sink.latest
            return set(written) == set(cluster.broker_ids) and any(
                d is not None and d.msg_rate_in > 0 for d in written.values()
            )

        await eventually(
            both_written_one_with_traffic, timeout=30, message="the leader's sink has the traffic"
        )
        await clients.close()
    finally:
        await cluster.stop()
    samples = history.read_history(tmp_path, history.BROKER_SAMPLES)
    assert {s.broker_id for s in samples} == set(cluster.broker_ids)
    assert any(s.local_data is not None and s.local_data.msg_rate_in > 0 for s in samples)
