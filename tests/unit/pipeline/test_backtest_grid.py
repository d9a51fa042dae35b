"""Backtest grids and plans without Spark: combinations, files, the cluster derived from a history,
and bad input failing before Spark starts."""

from __future__ import annotations

import json
import shutil

import pytest

from brokerlb.errors import BrokerLBError, InvalidInputError
from brokerlb.pipeline.backtest import prepare_backtest
from brokerlb.pipeline.backtest_grid import BacktestGrid, parse_axis
from brokerlb.pipeline.history_scenario import recorded_brokers, recorded_bundle_counts
from tests.history_data import simulated_history

OVERLOADED = "loadBalancerBrokerOverloadedThresholdPercentage"


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    root = tmp_path_factory.mktemp("history")
    simulated_history(root)
    return root


def test_every_combination_in_order_with_base_settings():
    grid = BacktestGrid(
        {
            "loadBalancerLoadSheddingStrategy": ["ThresholdShedder", "AvgShedder"],
            OVERLOADED: [75, 85],
            "timing.unload": ["50ms"],
        },
        base={"loadBalancerSheddingGracePeriodMinutes": 10},
    )
    configs = grid.configurations()
    assert [c.name for c in configs] == ["c01", "c02", "c03", "c04"]
    assert [(c.strategy, c.settings[OVERLOADED]) for c in configs] == [
        ("ThresholdShedder", 75),
        ("ThresholdShedder", 85),
        ("AvgShedder", 75),
        ("AvgShedder", 85),
    ]
    assert all(c.settings["loadBalancerSheddingGracePeriodMinutes"] == 10 for c in configs)
    assert all("loadBalancerLoadSheddingStrategy" not in c.settings for c in configs)
    assert configs[1].label == "ThresholdShedder BrokerOverloadedThresholdPercentage=85 timing.unload=50ms"
    assert configs[1].axes == {
        "loadBalancerLoadSheddingStrategy": "ThresholdShedder",
        OVERLOADED: 85,
        "timing.unload": "50ms",
    }


def test_a_grid_without_strategy_axis_runs_the_scenarios_strategy():
    (config,) = BacktestGrid({"seed": [4]}).configurations()
    assert config.strategy is None and config.settings == {"seed": 4} and config.label == "seed=4"


def test_set_axes_add_or_replace_the_files_axes():
    grid = BacktestGrid({"strategy": ["AvgShedder"], OVERLOADED: [80]})
    grid = grid.with_axes(
        ["loadBalancerLoadSheddingStrategy=ThresholdShedder,OverloadShedder", f"{OVERLOADED}=70"]
    )
    assert dict(grid.axes) == {
        OVERLOADED: ["70"],
        "loadBalancerLoadSheddingStrategy": ["ThresholdShedder", "OverloadShedder"],
    }
    assert parse_axis("seed=1, 2") == ("seed", ["1", "2"])
    for bad in ("seed", "=1", "seed=", "seed=1,,2"):
        with pytest.raises(InvalidInputError, match="--set"):
            parse_axis(bad)


@pytest.mark.parametrize(
    ("axes", "words"),
    [
        ({}, "empty"),
        ({"seed": []}, "grid.seed: no values"),
        ({"seed": [1, 1]}, "repeated value"),
        ({"strategy": ["AvgShedder"], "loadBalancerLoadSheddingStrategy": ["ThresholdShedder"]}, "use one"),
    ],
)
def test_bad_grids_are_named(axes, words):
    with pytest.raises(InvalidInputError, match=words):
        BacktestGrid(axes).configurations()


def test_grid_files_yaml_and_json(tmp_path):
    (tmp_path / "cluster.yaml").write_text("seed: 1\n", encoding="utf-8")
    path = tmp_path / "grid.yaml"
    path.write_text(
        "scenario: cluster.yaml\nbase: {loadBalancerSheddingIntervalMinutes: 1}\n"
        "grid:\n  strategy: [ThresholdShedder, AvgShedder]\n  seed: 7\n",
        encoding="utf-8",
    )
    grid = BacktestGrid.load(path)
    assert grid.scenario == str(tmp_path / "cluster.yaml")
    assert dict(grid.axes) == {"strategy": ["ThresholdShedder", "AvgShedder"], "seed": [7]}
    assert dict(grid.base) == {"loadBalancerSheddingIntervalMinutes": 1}
    as_json = tmp_path / "grid.json"
    as_json.write_text(json.dumps({"grid": {"seed": [1, 2]}}), encoding="utf-8")
    assert len(BacktestGrid.load(as_json).configurations()) == 2
    for text, words in [
        ("grids: {seed: [1]}\n", "unknown key"),
        ("grid: [1, 2]\n", "grid: expected a mapping"),
        ("grid: {seed: [1\n", "not valid YAML"),
        ("- 1\n", "expected a mapping"),
    ]:
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InvalidInputError, match=words):
            BacktestGrid.load(path)
    with pytest.raises(InvalidInputError, match="cannot read"):
        BacktestGrid.load(tmp_path / "missing.yaml")


def test_the_cluster_derived_from_the_history(history):
    assert recorded_brokers(history) == [
        {"name": f"broker-{i}:8080", "cores": 2.0, "nic_gbps": 10.0} for i in range(1, 5)
    ]
    assert recorded_bundle_counts(history) == {"t/ns-1": 4, "t/ns-2": 4, "t/ns-3": 4}
    plan = prepare_backtest(
        history,
        BacktestGrid({"strategy": ["org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder"]}),
        tick=120.0,
    )
    scenario = plan.scenario
    assert [b.cores for b in scenario.brokers] == [2.0] * 4
    assert {ns.name: ns.bundles for ns in scenario.namespaces} == {"t/ns-1": 4, "t/ns-2": 4, "t/ns-3": 4}
    assert scenario.tick == 120.0 and scenario.duration >= plan.workload.span_seconds
    assert scenario.duration - plan.workload.span_seconds < 120.0
    assert plan.configurations[0].strategy == "ThresholdShedder"  # canonical label
    assert len(plan.workload.topics) == 120


@pytest.mark.parametrize(
    ("axes", "words"),
    [
        (
            {"strategy": ["ThresholdShedder", "NoSuchShedder"]},
            r"c02 \(NoSuchShedder\).*Unknown shedding strategy "
            r"'NoSuchShedder'; known: AvgShedder",
        ),
        (
            {"loadBalancerBrokerOverloadedThresholdPercentag": [80]},
            "Unknown config key 'loadBalancerBrokerOverloadedThresholdPercentag' .did you mean "
            "loadBalancerBrokerOverloadedThresholdPercentage",
        ),
        ({OVERLOADED: ["eighty"]}, f"Invalid value 'eighty' for config key '{OVERLOADED}'"),
        ({"timing.unlaod": ["1s"]}, "unknown setting 'timing.unlaod'"),
        ({}, "empty"),
    ],
)
def test_bad_configurations_fail_before_any_run(history, axes, words):
    with pytest.raises(InvalidInputError, match=words) as info:
        prepare_backtest(history, BacktestGrid(axes))
    assert isinstance(info.value, BrokerLBError)


def test_missing_or_incomplete_history(history, tmp_path):
    grid = BacktestGrid({"strategy": ["ThresholdShedder"]})
    with pytest.raises(InvalidInputError, match="no such directory"):
        prepare_backtest(tmp_path / "nowhere", grid)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidInputError, match=r"no topic samples \(topic-samples/\*.jsonl\)"):
        prepare_backtest(empty, grid)
    topics_only = tmp_path / "topics-only"
    shutil.copytree(history / "topic-samples", topics_only / "topic-samples")
    with pytest.raises(InvalidInputError, match="no broker load reports .*--scenario"):
        prepare_backtest(topics_only, grid)
    plan = prepare_backtest(topics_only, grid, "steady-zipf")  # a scenario names the brokers
    assert plan.scenario.name == "steady-zipf" and len(plan.scenario.brokers) == 10


def test_cli_rejects_bad_input_before_starting_spark(history, monkeypatch, capsys):
    import brokerlb.cli.pipeline as cli
    from brokerlb.cli.main import main

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark started for bad input")

    monkeypatch.setattr(cli, "_spark", no_spark)
    for args, words in [
        (["--set", "strategy=ThresholdShedder,Bogus"], "Unknown shedding strategy 'Bogus'"),
        (["--set", "loadBalancerBogus=1"], "Unknown config key 'loadBalancerBogus'"),
        ([], "empty"),
        (["--set", "seed=1", "--tick", "soon"], "--tick"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            main(["pipeline", "backtest", "--history", str(history), *args])
        assert exit_.value.code == 2
        assert words in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["pipeline", "backtest", "--history", str(history / "nope"), "--set", "seed=1"])
    assert exit_.value.code == 2 and "no such directory" in capsys.readouterr().err
