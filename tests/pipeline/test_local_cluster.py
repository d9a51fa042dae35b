"""A job on Spark's local-cluster master: separate executor JVMs and Python workers, same results."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from brokerlb.history import record_from_json, replay_load_data
from tests.pipeline.conftest import ODD_GOOD_LINES
from tests.pipeline.test_loaddata import assert_equal_to_replay, topic_reports

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_loaddata_on_local_cluster_equals_the_in_process_load_data(spark, history, tmp_path):
    from brokerlb.pipeline.loaddata import LoadDataResult

    out = tmp_path / "cluster"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("SPARK_HOME", None)  # the session points it at pyspark's install directory
    cmd = [sys.executable, "-m", "brokerlb.cli.main", "pipeline", "loaddata",
           "--master", "local-cluster[2,1,1024]", "--conf", "spark.executor.memory=512m",
           "--conf", "spark.driver.memory=1g", "--warehouse", str(history.warehouse),
           "--source", "topics", "--output", str(out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["source"] == "topics" and summary["counts"]["bundles"] > 0
    samples = history.topic_samples + [record_from_json("topic-samples", json.loads(line))
                                       for line in ODD_GOOD_LINES["topic-samples"]]
    result = LoadDataResult(str(out), "topics", "leader", summary["counts"])
    assert_equal_to_replay(spark, result, replay_load_data(topic_reports(samples, history.layouts)))
