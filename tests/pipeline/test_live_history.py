"""ingest and loaddata on the history a running cluster writes, during the run and after a restart.

Two in-process brokers (embedded store) with ``brokerlbLoadHistoryDir``, traffic from synthetic
clients. Files are published on demand (the interval is long here, so files still being written
are seen): an ingest during the run reads what was published and says what it left; the next reads
only the new files. The cluster then stops within the departure hold -- ``loaddata`` still has both
brokers, as they served -- and a cluster of one other broker starts on the same history: the
brokers that did not come back are removed, and ``loaddata`` ends with the new broker alone.
Spark calls run in a thread: the brokers' event loop keeps serving meanwhile.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.broker.data.synthetic import SyntheticClients
from brokerlb.broker.data.topics import TopicStats
from brokerlb.history import BROKER_SAMPLES, TOPIC_SAMPLES, read_history
from brokerlb.testing import eventually
from brokerlb.testing.clusters import InProcessCluster

pytestmark = [
    pytest.mark.spark,
    pytest.mark.asyncio(loop_scope="function"),
    pytest.mark.timeout(900),  # a guard against a hang, not a speed check
]

GUARD = 120.0
NAMESPACE = "public/live-history"


def overrides(root: Path, hold: float) -> dict[str, object]:
    return {
        "brokerlbLoadHistoryDir": str(root),
        "brokerlbLoadHistoryPublishIntervalSeconds": 3600,  # published on demand only, here
        "brokerlbLoadHistoryDepartureHoldSeconds": hold,
        "statsUpdateFrequencyInSecs": 1,
        "loadBalancerReportUpdateMinIntervalMillis": 100,
    }


def in_progress(root: Path, kind: str) -> list[Path]:
    return [p for p in (root / kind).glob(".*.inprogress")] if (root / kind).is_dir() else []


async def brokers_in(spark, warehouse: Path) -> set[str]:
    from brokerlb.pipeline.loaddata import load_data

    result = await asyncio.to_thread(load_data, spark, str(warehouse))
    return {r["brokerId"] for r in result.table(spark, "broker_time_average").collect()}


async def test_ingest_during_the_run_and_after_a_restart(spark, tmp_path: Path) -> None:
    from brokerlb.pipeline.ingest import ingest

    root, warehouse = tmp_path / "history", tmp_path / "warehouse"
    cluster = await InProcessCluster(2, overrides(root, hold=60)).start()
    try:
        clients = SyntheticClients(cluster.services)
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(NAMESPACE, num_bundles=4)
            topics = [f"persistent://{NAMESPACE}/t{i}" for i in range(8)]
            await clients.add_many({t: TopicStats(msg_rate_in=5.0 + i) for i, t in enumerate(topics)})
            for _ in range(2):  # a file published, and the next one being written
                await eventually(
                    lambda: in_progress(root, TOPIC_SAMPLES),
                    GUARD,
                    interval=0.1,
                    message="a file being written",
                )
                await admin.publish_load_history()
            await eventually(
                lambda: in_progress(root, TOPIC_SAMPLES), GUARD, interval=0.1, message="a file being written"
            )
            first = await asyncio.to_thread(ingest, spark, str(root), str(warehouse))
            files = first.files[TOPIC_SAMPLES]
            assert files.new == files.published and files.new >= 1 and files.in_progress >= 1
            assert any("still being written" in note and TOPIC_SAMPLES in note for note in first.notes)

            await admin.publish_load_history()  # the file being written during the first run, at least
            second = await asyncio.to_thread(ingest, spark, str(root), str(warehouse))
            files = second.files[TOPIC_SAMPLES]
            assert files.ingested_before == first.files[TOPIC_SAMPLES].new and files.new >= 1
            assert second.rows["topic_samples"] > 0
        await clients.close()
    finally:
        await cluster.stop()  # within the 60 s hold: the stop is not history
    served = set(cluster.broker_ids)
    after_stop = await asyncio.to_thread(ingest, spark, str(root), str(warehouse))
    assert after_stop.files[TOPIC_SAMPLES].in_progress == 0  # closing published everything
    assert not [s for s in read_history(root, BROKER_SAMPLES) if s.is_removal]
    assert await brokers_in(spark, warehouse) == served

    restarted = await InProcessCluster(1, overrides(root, hold=0.5)).start()
    try:

        def removed() -> set[str]:
            return {s.broker_id for s in read_history(root, BROKER_SAMPLES) if s.is_removal}

        async def removals_published() -> bool:
            async with AsyncAdminClient(restarted.urls[0]) as admin:
                await admin.publish_load_history()
            return removed() == served

        await eventually(removals_published, GUARD, interval=0.5, message="the old brokers removed")
    finally:
        await restarted.stop()
    await asyncio.to_thread(ingest, spark, str(root), str(warehouse))
    assert await brokers_in(spark, warehouse) == set(restarted.broker_ids)
