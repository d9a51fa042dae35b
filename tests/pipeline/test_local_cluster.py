"""Jobs on Spark's local-cluster master: separate executor JVMs and Python workers, same results.

One subprocess starts one ``local-cluster[2,1,1024]`` session (two executors, one core each) and
runs two CLI commands on it (the CLI reuses an active session): ``loaddata`` over the shared
warehouse and ``backtest`` of two strategies (two tasks, one per executor). Both are compared
with what runs in this process: the load-data model and the simulator.
"""

from __future__ import annotations

import json

import pytest

from brokerlb.history import record_from_json, replay_load_data
from tests.history_data import simulated_history
from tests.pipeline.cli_driver import run_on_master
from tests.pipeline.conftest import ODD_GOOD_LINES
from tests.pipeline.test_loaddata import assert_equal_to_replay, topic_reports

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]  # a guard, not a speed check


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
    (loaddata_out, backtest_out), _ = run_on_master(
        "local-cluster[2,1,1024]", commands, {"spark.executor.memory": "512m", "spark.driver.memory": "1g"}
    )

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
