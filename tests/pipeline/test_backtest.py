"""backtest: a grid of strategies x settings replayed on the recorded traffic, one Spark task per
configuration; each result equals the simulator run in-process; tables, plots and the CLI."""

from __future__ import annotations

import json

import pytest

from brokerlb.pipeline.backtest_grid import BacktestGrid
from tests.history_data import simulated_history

pytestmark = pytest.mark.spark

OVERLOADED = "loadBalancerBrokerOverloadedThresholdPercentage"
GRID = {
    "loadBalancerLoadSheddingStrategy": ["ThresholdShedder", "OverloadShedder", "AvgShedder"],
    OVERLOADED: [70, 85],
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp("recorded")
    simulated_history(root)
    return root


@pytest.fixture(scope="module")
def backtested(spark, recorded, tmp_path_factory):
    from brokerlb.pipeline.backtest import backtest

    out = tmp_path_factory.mktemp("backtest")
    return backtest(spark, recorded, BacktestGrid(GRID), output=out)


def test_one_task_per_configuration(spark, backtested):
    from brokerlb.pipeline.backtest import JOB_GROUP

    tracker = spark.sparkContext.statusTracker()
    (job,) = tracker.getJobIdsForGroup(JOB_GROUP)
    (stage,) = tracker.getJobInfo(job).stageIds
    assert tracker.getStageInfo(stage).numTasks == len(backtested.results) == 6
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None  # the group is not left behind


def test_each_configuration_equals_the_simulator_run_in_process(backtested, recorded):
    from brokerlb.sim import RecordedWorkload, run_scenario

    workload = RecordedWorkload.from_history(recorded)  # read again: nothing shared with the backtest
    for config, result in zip(backtested.plan.configurations, backtested.results, strict=True):
        direct = run_scenario(
            backtested.plan.scenario,
            config.strategy,
            {OVERLOADED: config.settings[OVERLOADED]},
            workload=workload,
        )
        assert result.same_outcome(direct), config.label
        assert result.label == config.strategy
        assert result.config.get(OVERLOADED, 85) == config.settings[OVERLOADED]  # changed keys only


def test_the_grid_makes_a_difference(backtested):
    rows = {row["label"]: row for row in backtested.rows()}
    assert len(rows) == 6
    # shedding moves are transfers by default (brokerlbModularTransferEnabled), unloads otherwise
    shed = {label: row["moves_shed"] + row["moves_transfer"] for label, row in rows.items()}
    assert sum(shed.values()) > 0
    # OverloadShedder sheds only above the overloaded threshold: fewer sheds at 85% than at 70%
    assert (
        shed["OverloadShedder BrokerOverloadedThresholdPercentage=70"]
        > shed["OverloadShedder BrokerOverloadedThresholdPercentage=85"]
    )
    shedders = {(row["strategy"], row["load_max_mean"]) for row in rows.values()}
    assert len({load for _, load in shedders}) > 1
    for row in rows.values():
        assert 0 < row["load_mean_mean"] <= row["load_max_mean"] <= row["load_max_peak"]
        assert row["moves"] == sum(
            row[f"moves_{c}"] for c in ("shed", "transfer", "split", "restart", "failure")
        )
        assert row["cycles"] == backtested.plan.scenario.cycles


def test_tables_and_plots(spark, backtested):
    out = backtested.output
    summary = spark.read.parquet(f"{out}/summary.parquet")
    assert summary.count() == 6
    by_config = {r["configuration"]: r for r in summary.collect()}
    for row in backtested.rows():
        assert by_config[row["configuration"]]["moves"] == row["moves"]
        assert by_config[row["configuration"]][OVERLOADED] == str(row[OVERLOADED])
    series = spark.read.parquet(f"{out}/series.parquet")
    assert series.count() == sum(r.cycles for r in backtested.results)
    peaks = {
        r["configuration"]: r["peak"]
        for r in series.groupBy("configuration")
        .agg({"load_max": "max"})
        .withColumnRenamed("max(load_max)", "peak")
        .collect()
    }
    assert peaks == {row["configuration"]: pytest.approx(row["load_max_peak"]) for row in backtested.rows()}
    with open(f"{out}/summary.csv", encoding="utf-8") as f:
        assert len(f.read().strip().splitlines()) == 7
    for png in ("max-load.png", "mean-load.png", "moves.png", "cumulative-moves.png"):
        with open(f"{out}/{png}", "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    doc = json.loads(open(f"{out}/backtest.json", encoding="utf-8").read())
    assert doc["grid"]["grid"] == GRID and len(doc["configurations"]) == 6


def test_cli_backtest_with_a_grid_file(spark, recorded, tmp_path, capsys):
    from brokerlb.cli.main import main
    from brokerlb.sim import RecordedWorkload, parse_scenario, run_scenario
    from tests.history_data import BACKTEST_SCENARIO

    scenario = tmp_path / "cluster.json"  # the recorded cluster as a scenario file
    scenario.write_text(
        json.dumps({k: v for k, v in BACKTEST_SCENARIO.items() if k != "events"}), encoding="utf-8"
    )
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        "scenario: cluster.json\nbase: {loadBalancerSheddingGracePeriodMinutes: 5}\n"
        "grid: {strategy: [ThresholdShedder]}\n",
        encoding="utf-8",
    )
    with pytest.raises(SystemExit) as exit_:
        main(
            [
                "pipeline",
                "backtest",
                "--history",
                str(recorded),
                "--grid",
                str(grid),
                "--set",
                "seed=1,2",
                "--json",
                "--output",
                str(tmp_path / "out"),
                "--no-plots",
            ]
        )
    assert exit_.value.code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["configurations"] == 2 and summary["topics"] == 120
    assert [row["label"] for row in summary["rows"]] == ["ThresholdShedder seed=1", "ThresholdShedder seed=2"]
    assert not (tmp_path / "out" / "max-load.png").exists()
    direct = run_scenario(
        parse_scenario(json.loads(scenario.read_text(encoding="utf-8"))),
        "ThresholdShedder",
        {"loadBalancerSheddingGracePeriodMinutes": 5, "seed": 2},
        workload=RecordedWorkload.from_history(recorded),
    )
    assert summary["rows"][1]["moves"] == direct.summary["moves"]
    assert summary["rows"][1]["flaps"] == direct.summary["flaps"]
    with pytest.raises(SystemExit) as exit_:
        main(["pipeline", "backtest", "--history", str(recorded), "--set", "strategy=ThresholdShedder"])
    assert exit_.value.code == 0
    printed = capsys.readouterr().out
    assert "c01" in printed and "ThresholdShedder" in printed and "max load peak" in printed
    assert spark.range(1).count() == 1  # the CLI left the test's session running
