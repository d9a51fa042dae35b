"""The jobs, unchanged, on a real Spark standalone cluster: a master and two workers started from the
pyspark installation on loopback (:class:`brokerlb.testing.spark_cluster.SparkStandaloneCluster`,
stopped by PID).

A driver process of its own (a JVM can hold one SparkContext) runs the CLI with ``--master
spark://...``: ``ingest`` of the shared test history into a warehouse of its own, then ``loaddata``
from broker reports and from topic samples. Its tables must equal what ``local[2]`` computes in
this process from the same history (and the in-process model).
"""

from __future__ import annotations

import json
import os

import pytest

from brokerlb.history import record_from_json, replay_load_data
from tests.pipeline.cli_driver import run_on_master
from tests.pipeline.conftest import ODD_GOOD_LINES
from tests.pipeline.test_loaddata import REL, assert_equal_to_replay, topic_reports

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]  # a guard, not a speed check


@pytest.fixture(scope="module")
def standalone():
    from brokerlb.testing.spark_cluster import SparkStandaloneCluster

    cluster = SparkStandaloneCluster(workers=2, cores=1, memory="1g").start()
    try:
        yield cluster
    finally:
        cluster.stop()


def rows(spark, path: str, key: str) -> dict:
    return {r[key]: r.asDict() for r in spark.read.parquet(path).collect()}


def assert_same_rows(cluster: dict, local: dict) -> None:
    assert set(cluster) == set(local)
    for key, row in local.items():
        for column, value in row.items():
            if isinstance(value, float):
                assert cluster[key][column] == pytest.approx(value, rel=REL, abs=1e-12), (key, column)
            else:
                assert cluster[key][column] == value, (key, column)


def test_ingest_and_loaddata_on_a_standalone_cluster_equal_local(spark, history, standalone, tmp_path):
    from brokerlb.pipeline.loaddata import LoadDataResult, load_data

    warehouse = tmp_path / "warehouse"
    commands = [
        ["pipeline", "ingest", "--history", str(history.root), "--warehouse", str(warehouse)],
        *(
            ["pipeline", "loaddata", "--warehouse", str(warehouse), "--source", source]
            for source in ("reports", "topics")
        ),
    ]
    (ingested, *loaded), _ = run_on_master(standalone.master_url, commands, standalone.session_conf())

    summary = json.loads(ingested)
    assert summary["rejects"] == history.first.rejects  # every bad line, as local[2] found them
    assert sum(summary["rows"].values()) == sum(history.first.rows.values()) + sum(
        history.second.rows.values()
    )
    apps = standalone.state()["completedapps"]
    assert apps and all(a["state"] == "FINISHED" for a in apps)  # the jobs ran on the cluster

    samples = history.topic_samples + [
        record_from_json("topic-samples", json.loads(line)) for line in ODD_GOOD_LINES["topic-samples"]
    ]
    references = {
        "reports": replay_load_data(history.broker_samples),
        "topics": replay_load_data(topic_reports(samples, history.layouts)),
    }
    for out, source in zip(loaded, ("reports", "topics"), strict=True):
        result = json.loads(out)
        assert result["source"] == source
        on_cluster = LoadDataResult(result["output"], source, "leader", result["counts"])
        assert_equal_to_replay(spark, on_cluster, references[source])
        local = load_data(
            spark, str(history.warehouse), source=source, output=str(tmp_path / f"local-{source}")
        )
        assert result["counts"] == local.counts
        for table, key in (("bundle_load_data", "bundle"), ("broker_time_average", "brokerId")):
            assert_same_rows(
                rows(spark, os.path.join(result["output"], table), key),
                rows(spark, os.path.join(local.output, table), key),
            )
