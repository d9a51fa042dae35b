"""The load history a live cluster writes (``brokerlbLoadHistoryDir``): every record kind, published on
the interval and on demand, and the shutdown rule across stops and restarts.

In-process brokers on the embedded store, traffic from synthetic clients; the files are read back
with :mod:`brokerlb.history` (the pipeline's tests ingest such a history with Spark).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.broker.data.synthetic import SyntheticClients
from brokerlb.broker.data.topics import TopicStats
from brokerlb.history import (
    BROKER_SAMPLES,
    BUNDLE_BOUNDARIES,
    TOPIC_SAMPLES,
    history_files,
    read_history,
    read_members,
)
from brokerlb.testing import eventually
from brokerlb.testing.clusters import InProcessCluster

from .helpers import new_namespace, topics_of
from .test_cli import brokerlb

pytestmark = pytest.mark.asyncio(loop_scope="package")

GUARD = 60.0


def history_overrides(root: Path, *, hold: float) -> dict[str, object]:
    return {
        "brokerlbLoadHistoryDir": str(root),
        "brokerlbLoadHistoryPublishIntervalSeconds": 0.3,
        "brokerlbLoadHistoryDepartureHoldSeconds": hold,
        "statsUpdateFrequencyInSecs": 1,
        "loadBalancerReportUpdateMinIntervalMillis": 100,
        "loadBalancerAutoBundleSplitEnabled": False,
    }


def published(root: Path, kind: str) -> list:
    return read_history(root, kind)


async def test_a_live_cluster_writes_every_record_kind_and_publishes_them(tmp_path: Path) -> None:
    cluster = await InProcessCluster(2, history_overrides(tmp_path, hold=60)).start()
    ns = new_namespace("history")
    topics = topics_of(ns, 6)
    try:
        clients = SyntheticClients(cluster.services)
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(ns, num_bundles=2)
            await clients.add_many({t: TopicStats(msg_rate_in=10.0 + i) for i, t in enumerate(topics)})
            owners = clients.placement()

            def topic_rows_from_their_owners() -> bool:
                seen = {(s.topic, s.broker) for s in published(tmp_path, TOPIC_SAMPLES)}
                return all((t, owners[t]) in seen for t in topics)

            await eventually(topic_rows_from_their_owners, GUARD, interval=0.1, message="topic samples")
            rows = [s for s in published(tmp_path, TOPIC_SAMPLES) if s.topic == topics[3]]
            assert rows[-1].msg_rate_in == 13.0 and rows[-1].producer_count == 0
            assert rows[-1].bundle is not None and rows[-1].bundle.startswith(ns)

            def reports_of_both() -> bool:
                return {s.broker_id for s in published(tmp_path, BROKER_SAMPLES)} == set(cluster.broker_ids)

            await eventually(reports_of_both, GUARD, interval=0.1, message="broker samples of both brokers")
            layouts = [b for b in published(tmp_path, BUNDLE_BOUNDARIES) if b.namespace == ns]
            assert layouts and layouts[0].num_bundles == 2  # written by the broker that created it

            first = (await admin.get_bundles(ns))["boundaries"]
            await admin.split_bundle(ns, f"{first[0]}_{first[1]}", unload=False)
            answer = await admin.publish_load_history()  # on demand, on every broker
            assert set(answer["brokers"]) == set(cluster.broker_ids) and not answer["failed"]
            records = sorted(
                (b.timestamp, b.num_bundles)
                for b in published(tmp_path, BUNDLE_BOUNDARIES)
                if b.namespace == ns
            )
            assert records[-1][1] == 3, records  # the split's layout, published by the owner that split

            code, out, err = await brokerlb("pipeline", "publish", "--url", cluster.urls[1])
            assert code == 0 and set(json.loads(out)["brokers"]) == set(cluster.broker_ids), err
            status = await admin.get_load_history()
            assert status["directory"] == str(tmp_path) and status["heldBack"] == 0
            assert status["cost"]["topicRows"] > 0
        await clients.close()
    finally:
        await cluster.stop()
    # the cluster stopped within the hold: no broker is recorded as leaving
    samples = published(tmp_path, BROKER_SAMPLES)
    assert not [s for s in samples if s.is_removal], "a stopping cluster records no departure"
    assert read_members(tmp_path) == set(cluster.broker_ids)
    assert not [p for p in (tmp_path / TOPIC_SAMPLES).iterdir() if p.name.endswith(".inprogress")]


async def test_a_departure_is_written_once_the_cluster_served_on(tmp_path: Path) -> None:
    cluster = await InProcessCluster(2, history_overrides(tmp_path, hold=0.5)).start()
    try:
        leader = next(s for s in cluster.services if s.is_leader)
        other = next(s for s in cluster.services if not s.is_leader)

        def reported(broker: str) -> bool:
            return any(s.broker_id == broker for s in published(tmp_path, BROKER_SAMPLES))

        await eventually(lambda: reported(other.broker_id), GUARD, interval=0.1, message="its report")
        await other.stop()

        def removal_written() -> bool:
            return any(
                s.is_removal and s.broker_id == other.broker_id for s in published(tmp_path, BROKER_SAMPLES)
            )

        await eventually(removal_written, GUARD, interval=0.1, message="the departure, after the hold")
        assert read_members(tmp_path) == {leader.broker_id}
    finally:
        await cluster.stop()


async def test_a_restarted_cluster_writes_the_removal_of_brokers_that_did_not_come_back(
    tmp_path: Path,
) -> None:
    first = await InProcessCluster(2, history_overrides(tmp_path, hold=60)).start()
    try:
        await eventually(
            lambda: read_members(tmp_path) == set(first.broker_ids), GUARD, interval=0.1, message="members"
        )
    finally:
        await first.stop()
    assert read_members(tmp_path) == set(first.broker_ids)
    files_before = {p.name for p in history_files(tmp_path, BROKER_SAMPLES)}

    second = await InProcessCluster(
        1, history_overrides(tmp_path, hold=0.5)
    ).start()  # other ports: other ids
    try:
        gone = set(first.broker_ids)

        def removals() -> set[str]:
            return {s.broker_id for s in published(tmp_path, BROKER_SAMPLES) if s.is_removal}

        await eventually(
            lambda: removals() == gone, GUARD, interval=0.1, message="removals of the old brokers"
        )
        await eventually(
            lambda: read_members(tmp_path) == set(second.broker_ids), GUARD, interval=0.1, message="members"
        )
    finally:
        await second.stop()
    assert files_before <= {p.name for p in history_files(tmp_path, BROKER_SAMPLES)}  # nothing overwritten
