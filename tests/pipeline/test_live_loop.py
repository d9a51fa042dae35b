"""The whole loop, live: a cluster's own history → ingest → loaddata → recommend → ``brokerlb plan apply``
against the same cluster → better balance, nothing acknowledged lost.

Three ``brokerlb broker`` processes on a real ZooKeeper write their load history
(``brokerlbLoadHistoryDir``) while the official client (``pulsar-client``) produces skewed traffic: six
hot topics in one bundle of a four-bundle namespace, one cold topic in each other bundle, so the
broker owning the hot bundle carries most of the cluster's load. Shedding and automatic splits are
off: whatever improves the balance is the plan. The pipeline (``local[2]``, in this process) ingests
the published history while the cluster runs, computes the load data from the reports and from the
topic samples, and recommends a plan with a bundle limit the hot bundle exceeds; the plan's split
and the transfers that place its children on the lightest brokers are applied with the CLI, and each
transferred child's topics must then be served by the broker the plan named. Measured before and after: the busiest broker's modelled load
relative to the lower bound no placement can beat (the brokers' mean load). Every message
acknowledged to a producer must be received by its subscription (producer receipts against
consumer receipts). A second ingest, during the same run, reads only the new files and sees the
split's layout.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.history import TOPIC_SAMPLES, read_history
from brokerlb.plan import Plan, SplitOp, UnloadOp
from brokerlb.ring import NamespaceBundles, parse_range, topic_hash
from brokerlb.testing.clusters import ProcessCluster, zookeeper_process_cluster
from brokerlb.testing.observe import modelled_cpu, topic_owners
from brokerlb.testing.official_client import OfficialTraffic
from brokerlb.testing.waiting import eventually
from tests.integration.broker.test_cli import brokerlb

pulsar = pytest.importorskip("pulsar")

pytestmark = [
    pytest.mark.spark,
    pytest.mark.zookeeper,
    pytest.mark.slow,
    pytest.mark.asyncio(loop_scope="function"),
    pytest.mark.timeout(900),  # a guard against a hang, not a speed check
]

GUARD = 180.0
NAMESPACE = "public/loop"
HOT_RATE, COLD_RATE = 25.0, 10.0  # messages/s produced per topic; one subscription each (in + out)
#: the bundle limit of the plan: the hot bundle (6 x 50 msg/s in + out) is twice over it
LIMIT = 150

OVERRIDES: dict[str, Any] = {
    "statsUpdateFrequencyInSecs": 2,
    "loadBalancerReportUpdateMinIntervalMillis": 500,
    "loadBalancerHostUsageCheckIntervalMinutes": 0.01,
    "loadBalancerAutoBundleSplitEnabled": False,
    "brokerlbModelCores": 1,
    "brokerlbModelMsgRatePerCore": 600,
    "brokerlbLoadHistoryPublishIntervalSeconds": 2,
}


def skewed_topics(namespace: str) -> tuple[list[str], list[str]]:
    """Six topics in the first bundle of a 4-bundle namespace, one in each of the three others."""
    four = NamespaceBundles.create(namespace, 4)
    hot: list[str] = []
    cold: dict[str, str] = {}
    n = 0
    while len(hot) < 6 or len(cold) < 3:
        topic = f"persistent://{namespace}/t{n}"
        n += 1
        bundle = four.find_bundle(topic)
        if bundle == four.bundles[0]:
            if len(hot) < 6:
                hot.append(topic)
        else:
            cold.setdefault(str(bundle), topic)
    return hot, list(cold.values())


def balance(load: dict[str, float]) -> float:
    """The busiest broker's load over the lower bound (the mean: some broker carries at least that)."""
    values = list(load.values())
    return max(values) / (sum(values) / len(values))


async def topic_rates(cluster: ProcessCluster) -> dict[str, tuple[str, float]]:
    """topic -> (broker serving it, its msgRateIn there), from every broker's broker-stats/topics."""
    out: dict[str, tuple[str, float]] = {}
    for url, broker in zip(cluster.urls, cluster.broker_ids, strict=True):
        async with AsyncAdminClient(url) as admin:
            doc = await admin.get_topics_stats()
        for bundles in doc.values():
            for domains in bundles.values():
                for topics in domains.values():
                    for topic, stats in topics.items():
                        out[topic] = (broker, float(stats["msgRateIn"]))
    return out


async def test_the_whole_loop_live_improves_the_balance_without_losing_a_message(
    spark, zk_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from brokerlb.pipeline.ingest import ingest
    from brokerlb.pipeline.loaddata import load_data
    from brokerlb.pipeline.recommend import recommend

    history, warehouse = tmp_path / "history", tmp_path / "warehouse"
    overrides = {**OVERRIDES, "brokerlbLoadHistoryDir": str(history)}
    cluster = await zookeeper_process_cluster(zk_server, 3, overrides, prefix="loop")
    service_url = "pulsar://" + ",".join(u.removeprefix("pulsar://") for u in cluster.binary_urls)
    traffic: OfficialTraffic | None = None
    hot, cold = skewed_topics(NAMESPACE)
    figures: dict[str, Any] = {}
    try:
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(NAMESPACE, num_bundles=4)
            rates = {t: HOT_RATE for t in hot} | {t: COLD_RATE for t in cold}
            traffic = OfficialTraffic(service_url, rates, timeout=GUARD)
            await asyncio.to_thread(traffic.start)

            async def flowing_everywhere() -> dict[str, tuple[str, float]] | None:
                now = await topic_rates(cluster)
                return now if all(t in now and now[t][1] > 0 for t in rates) else None

            await eventually(flowing_everywhere, GUARD, interval=0.5, message="traffic on every topic")
            owners = await topic_owners(admin, cluster.urls, cluster.broker_ids, hot)
            assert owners is not None and len(set(owners.values())) == 1, owners  # one hot bundle, one owner

            # ---- the history, while the cluster runs: enough topic dumps of the hot topics
            def dumps_of_hot_topics() -> int:
                samples = read_history(history, TOPIC_SAMPLES)
                return min(sum(1 for s in samples if s.topic == t and s.msg_rate_in > 0) for t in hot)

            await eventually(lambda: dumps_of_hot_topics() >= 6, GUARD, interval=1.0, message="6 dumps")
            before = await modelled_cpu(cluster.urls, cluster.broker_ids)
            code, out, err = await brokerlb("pipeline", "publish", "--url", cluster.urls[1], timeout=300)
            assert code == 0 and not json.loads(out)["failed"], err

            first = await asyncio.to_thread(ingest, spark, str(history), str(warehouse))
            assert not first.skipped and first.rows["topic_samples"] > 0 and first.rows["broker_samples"] > 0
            assert first.files[TOPIC_SAMPLES].new > 0 and first.rejects == {k: 0 for k in first.rejects}

            hot_bundle = f"{NAMESPACE}/{NamespaceBundles.create(NAMESPACE, 4).bundles[0].range}"
            for source in ("reports", "topics"):
                result = await asyncio.to_thread(load_data, spark, str(warehouse), source=source)
                bundles = {r["bundle"]: r for r in result.table(spark, "bundle_load_data").collect()}
                busiest = max(bundles, key=lambda b: bundles[b]["longTermMsgRateIn"])
                assert busiest == hot_bundle, (source, busiest)
                brokers = {r["brokerId"] for r in result.table(spark, "broker_time_average").collect()}
                assert set(cluster.broker_ids) <= brokers, (source, brokers)

            from brokerlb.pipeline.advisor import BundleLimits

            plan = await asyncio.to_thread(
                recommend, spark, str(warehouse), limits=BundleLimits(max_msg_rate=LIMIT)
            )
            splits = [op for op in plan.operations if isinstance(op, SplitOp)]
            assert [(op.namespace, f"{op.namespace}/{op.bundle}") for op in splits] == [
                (NAMESPACE, hot_bundle)
            ]
            (split,) = splits
            transfers = [op for op in plan.operations if isinstance(op, UnloadOp)]
            assert [op.op for op in plan.operations] == ["split"] + ["unload"] * len(transfers), (
                plan.operations
            )
            # the children are placed by the plan (not unloaded for the lookups to place): the split keeps
            # them, and the ones that go elsewhere are transfers to brokers of this cluster
            assert not split.unload and len(split.children) >= 2
            assert transfers and all(
                t.bundle in split.children and t.destination_broker in cluster.broker_ids for t in transfers
            ), transfers
            plan.save(tmp_path / "plan.json")

            # ---- the plan, applied to the live cluster
            code, out, err = await brokerlb(
                "plan", "apply", str(tmp_path / "plan.json"), "--url", cluster.urls[2], "--json", timeout=300
            )
            applied = json.loads(out)
            assert code == 0 and applied["ok"], (out, err)
            assert [r["status"] for r in applied["results"]] == ["applied"] * len(plan.operations)

            async def settled() -> dict[str, float] | None:
                """Every topic flowing at its owner after the moves, the cluster's load back to its total."""
                now = await topic_rates(cluster)
                if not all(t in now and now[t][1] >= 0.5 * rates[t] for t in rates):
                    return None
                load = await modelled_cpu(cluster.urls, cluster.broker_ids)
                total, was = sum(load.values()), sum(before.values())
                return load if abs(total - was) <= 0.25 * was else None

            after = await eventually(settled, GUARD, interval=1.0, message="the moved topics flowing again")
            served = await topic_rates(cluster)
            for transfer in transfers:  # where the plan put each transferred child, its topics are served
                lower, upper = parse_range(transfer.bundle)
                inside = [t for t in rates if lower <= topic_hash(t) < upper]  # the hot bundle is the first
                assert inside and {served[t][0] for t in inside} == {transfer.destination_broker}, (
                    transfer,
                    {t: served[t] for t in inside},
                )
            figures.update(before=before, after=after, children=split.children, transfers=len(transfers))

            # ---- the history goes on: a second ingest reads only what was published since, with the split
            code, out, err = await brokerlb("pipeline", "publish", "--url", cluster.urls[0], timeout=300)
            assert code == 0, err
            second = await asyncio.to_thread(ingest, spark, str(history), str(warehouse))
            files = second.files[TOPIC_SAMPLES]
            assert files.new > 0 and files.ingested_before == first.files[TOPIC_SAMPLES].new + (
                first.files[TOPIC_SAMPLES].ingested_before or 0
            )
            layouts = spark.read.parquet(str(warehouse / "bundle_boundaries")).where(
                f"namespace = '{NAMESPACE}'"
            )
            assert max(r["numBundles"] for r in layouts.collect()) == 3 + len(split.children)

        await asyncio.to_thread(traffic.stop_producing)
        await eventually(
            traffic.all_received, GUARD, interval=0.5, message="every acknowledged message received"
        )
        reports = traffic.reports()
        failures = traffic.failures()
    finally:
        if traffic is not None:
            await asyncio.to_thread(traffic.close)
        await cluster.stop()

    acked, received = sum(r.acked for r in reports), sum(r.received for r in reports)
    lost = sum(len(r.lost) for r in reports)
    with capsys.disabled():
        print(
            f"\nbusiest/lower bound {balance(figures['before']):.2f} -> {balance(figures['after']):.2f} "
            f"(modelled CPU % before {figures['before']}, after {figures['after']}); split into "
            f"{len(figures['children'])} children, {figures['transfers']} transferred; {acked} acknowledged, {received} received, {lost} lost"
        )
    assert not failures, failures
    assert all(r.ok for r in reports), [r for r in reports if not r.ok]
    assert balance(figures["after"]) < balance(figures["before"]), figures
    assert Plan.load(tmp_path / "plan.json").operations  # the plan file reads back
