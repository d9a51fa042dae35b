"""Jobs on Spark's local-cluster master: separate executor JVMs and Python workers, same results.

One subprocess starts one ``local-cluster[2,1,1024]`` session (two executors, one core each) and
runs two CLI commands on it (the CLI reuses an active session): ``loaddata`` over the shared
warehouse and ``backtest`` of two strategies (two tasks, one per executor). Both are compared
with what runs in this process: the load-data model and the simulator.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from brokerlb.history import record_from_json, replay_load_data
from tests.history_data import simulated_history
from tests.pipeline.conftest import ODD_GOOD_LINES
from tests.pipeline.test_loaddata import assert_equal_to_replay, topic_reports

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: Runs each argument list (JSON, argv[1]) through the CLI on one local-cluster session,
#: printing a separator line after each command's output.
DRIVER = """
import json, sys
from brokerlb.cli.main import main
from brokerlb.pipeline.session import spark_session

spark = spark_session("local-cluster[2,1,1024]", conf={"spark.executor.memory": "512m", "spark.driver.memory": "1g"})
try:
    for args in json.loads(sys.argv[1]):
        try:
            main(args)
        except SystemExit as exit_:
            if exit_.code:
                raise
        print("\\x1e", flush=True)
finally:
    spark.stop()
"""


def test_jobs_on_local_cluster_equal_the_in_process_results(spark, history, tmp_path):
    from brokerlb.pipeline.loaddata import LoadDataResult
    from brokerlb.sim import RecordedWorkload, run_scenario

    out = tmp_path / "cluster"
    recorded = tmp_path / "recorded"
    simulated_history(recorded)
    commands = [
        [
            "pipeline",
            "loaddata",
            "--warehouse",
            str(history.warehouse),
            "--source",
            "topics",
            "--output",
            str(out),
        ],
        [
            "pipeline",
            "backtest",
            "--history",
            str(recorded),
            "--set",
            "strategy=ThresholdShedder,AvgShedder",
            "--json",
        ],
    ]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("SPARK_HOME", None)  # the session points it at pyspark's install directory
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(commands)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaddata_out, backtest_out, _ = done.stdout.split("\x1e")

    summary = json.loads(loaddata_out)
    assert summary["source"] == "topics" and summary["counts"]["bundles"] > 0
    samples = history.topic_samples + [
        record_from_json("topic-samples", json.loads(line)) for line in ODD_GOOD_LINES["topic-samples"]
    ]
    result = LoadDataResult(str(out), "topics", "leader", summary["counts"])
    assert_equal_to_replay(spark, result, replay_load_data(topic_reports(samples, history.layouts)))

    backtested = json.loads(backtest_out)
    assert backtested["configurations"] == 2
    from brokerlb.pipeline.backtest import prepare_backtest
    from brokerlb.pipeline.backtest_grid import BacktestGrid

    plan = prepare_backtest(recorded, BacktestGrid({"strategy": ["ThresholdShedder", "AvgShedder"]}))
    workload = RecordedWorkload.from_history(recorded)
    for row, strategy in zip(backtested["rows"], ["ThresholdShedder", "AvgShedder"], strict=True):
        direct = run_scenario(plan.scenario, strategy, workload=workload).summary
        assert row["strategy"] == strategy
        for key in (
            "moves",
            "flaps",
            "moved_throughput",
            "load_max_peak",
            "load_max_mean",
            "unowned_seconds",
        ):
            assert row[key] == direct[key], (strategy, key)
