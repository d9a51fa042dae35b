"""``brokerlb simulate``."""

import importlib.util
import json

import yaml
from typer.testing import CliRunner

from brokerlb.cli.main import build_app
from brokerlb.sim import scenario_to_dict
from tests.sim.conftest import small_scenario

runner = CliRunner()


def simulate(*args):
    return runner.invoke(build_app(), ["simulate", *args])


def scenario_file(tmp_path, **kw):
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(scenario_to_dict(small_scenario(**kw))))
    return path


def test_list_shows_the_library():
    result = simulate("--list", "--json")
    assert result.exit_code == 0, result.output
    names = {item["name"] for item in json.loads(result.stdout)}
    assert {"ten-busy-one-idle", "large-day"} <= names
    table = simulate("--list")
    assert "ten-busy-one-idle" in table.stdout


def test_compare_prints_one_column_per_strategy(tmp_path):
    path = scenario_file(tmp_path, minutes=4)
    result = simulate(
        str(path),
        "--compare",
        "OverloadShedder,OverloadShedder+RoundRobinBrokerSelector",
        "--set",
        "loadBalancerSheddingGracePeriodMinutes=5",
        "--seed",
        "3",
    )
    assert result.exit_code == 0, result.output
    assert "RoundRobin" in result.stdout and "bundle moves" in result.stdout and "…" not in result.stdout


def test_compare_pulsar_runs_every_shedder_with_the_placement_pulsar_pairs_it_with(tmp_path):
    path = scenario_file(tmp_path, minutes=3)
    result = simulate(str(path), "--compare", "brokerlb,pulsar", "--json")
    assert result.exit_code == 0, result.output
    assert list(json.loads(result.stdout)) == [
        "brokerlb",
        "OverloadShedder+LeastLongTermMessageRate",
        "ThresholdShedder+LeastLongTermMessageRate",
        "ThresholdShedder+LeastResourceUsageWithWeight",
        "UniformLoadShedder+LeastLongTermMessageRate",
        "AvgShedder+AvgShedder",
        "TransferShedder",
    ]


def test_json_summary_and_report(tmp_path):
    path = scenario_file(tmp_path, minutes=3)
    out = tmp_path / "report"
    result = simulate(
        str(path),
        "--strategy",
        "org.apache.pulsar.broker.loadbalance.impl.OverloadShedder",
        "--json",
        "--report",
        str(out),
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert list(summary) == ["OverloadShedder"] and summary["OverloadShedder"]["cycles"] == 3
    assert (out / "index.html").is_file() and (out / "summary.json").is_file()
    assert not (out / "history").exists(), "the load history only with --history (it reached 353 MB)"
    if importlib.util.find_spec("brokerlb.history") is not None:
        with_history = tmp_path / "with-history"
        result = simulate(
            str(path), "--strategy", "OverloadShedder", "--report", str(with_history), "--history"
        )
        assert result.exit_code == 0, result.output
        samples = with_history / "history" / "OverloadShedder" / "broker-samples"
        assert samples.is_dir() and any(samples.glob("*.jsonl"))


def test_errors_are_one_line_and_exit_2(tmp_path):
    bad = simulate(str(scenario_file(tmp_path, minutes=3)), "--strategy", "FastShedder")
    assert bad.exit_code == 2 and "Unknown shedding strategy 'FastShedder'" in bad.output
    missing = simulate("no-such-scenario")
    assert (
        missing.exit_code == 2
        and "no scenario file or library scenario named 'no-such-scenario'" in missing.output
    )
    broken = tmp_path / "broken.yaml"
    broken.write_text("seed: 1\nduration: 1h\nbrokers: [b]\nnamespaces: [{name: t/ns, bundles: zero}]\n")
    result = simulate(str(broken))
    assert result.exit_code == 2 and "namespaces[0].bundles" in result.output
    assert simulate().exit_code == 2


def test_recorded_workload_from_the_command_line(tmp_path):
    samples = tmp_path / "samples.jsonl"
    lines = []
    for minute in range(4):
        for i in range(40):
            lines.append(
                json.dumps(
                    {
                        "timestamp": 1_700_000_000_000 + minute * 60_000,
                        "topic": f"persistent://t/ns-1/topic-{i}",
                        "msgRateIn": 100.0 + minute,
                        "msgRateOut": 100.0,
                        "msgThroughputIn": 1e5,
                        "msgThroughputOut": 1e5,
                        "producerCount": 1,
                        "consumerCount": 1,
                    }
                )
            )
    samples.write_text("\n".join(lines) + "\n")
    result = simulate(
        str(scenario_file(tmp_path, minutes=3)),
        "--strategy",
        "OverloadShedder",
        "--workload",
        str(samples),
        "--json",
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["OverloadShedder"]
    # only t/ns-1 has recorded topics; it keeps the 8 bundles the scenario declares for it
    assert summary["cycles"] == 3 and summary["final_bundles"] == 8
    assert summary["decisions"]["placement/Success/Selected"] == 8
