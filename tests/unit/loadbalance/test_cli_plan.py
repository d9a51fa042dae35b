"""``brokerlb plan``: shed / split / place / batch / snapshot from the command line."""

import json
from pathlib import Path

from typer.testing import CliRunner

from brokerlb.cli.main import build_app

EXAMPLE = Path(__file__).parents[3] / "examples" / "snapshots" / "skewed-cluster.json"
runner = CliRunner()


def _plan(*args: str, input: str | None = None):
    return runner.invoke(build_app(), ["plan", *args], input=input)


def test_shed_json_from_a_file() -> None:
    result = _plan("shed", "--snapshot", str(EXAMPLE), "--strategy", "OverloadShedder")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["op"] == "shed" and any(u["label"] == "Success" for u in answer["unload"])


def test_shed_from_stdin_with_full_class_name_and_table() -> None:
    result = _plan(
        "shed",
        "--strategy",
        "org.apache.pulsar.broker.loadbalance.impl.OverloadShedder",
        "--format",
        "table",
        "--raw",
        input=EXAMPLE.read_text(),
    )
    assert result.exit_code == 0, result.output
    assert "Overloaded" in result.stdout and "stats" in result.stdout


def test_set_overrides_config() -> None:
    result = _plan(
        "shed",
        "-s",
        str(EXAMPLE),
        "--strategy",
        "OverloadShedder",
        "--set",
        "loadBalancerSheddingEnabled=false",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["unload"][0]["reason"] == "Disabled"


def test_errors_exit_non_zero_with_a_message() -> None:
    bad = _plan("shed", "-s", str(EXAMPLE), "--strategy", "NoSuchShedder")
    assert bad.exit_code == 2 and "NoSuchShedder" in bad.stderr and bad.stdout == ""
    missing = _plan("shed", "-s", "/nonexistent/snapshot.json")
    assert missing.exit_code == 2 and "cannot read" in missing.stderr
    broken = _plan("shed", input="{")
    assert broken.exit_code == 2 and "not valid JSON" in broken.stderr
    unknown_bundle = _plan("place", "-s", str(EXAMPLE), "--bundle", "no/such/0x00000000_0xffffffff")
    assert unknown_bundle.exit_code != 0 and "not in the snapshot" in unknown_bundle.stderr


def test_batch_answers_every_line_in_order() -> None:
    snapshot = json.loads(EXAMPLE.read_text())
    lines = (
        "\n".join(
            [
                json.dumps(
                    {"op": "shed", "snapshot": snapshot, "strategy": "OverloadShedder", "session": "a"}
                ),
                json.dumps({"op": "shed", "strategy": "Nope", "snapshot": snapshot}),
                json.dumps({"op": "shed", "strategy": "OverloadShedder", "raw": True}),
            ]
        )
        + "\n"
    )
    result = _plan("batch", "--snapshot", str(EXAMPLE), input=lines)
    assert result.exit_code == 0, result.output
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == 3
    assert answers[0]["op"] == "shed" and "error" in answers[1] and answers[2]["op"] == "shed"


def test_snapshot_from_load_reports(tmp_path: Path) -> None:
    snapshot = json.loads(EXAMPLE.read_text())
    for broker, entry in snapshot["brokers"].items():
        (tmp_path / f"{broker.split(':')[0]}.json").write_text(json.dumps(entry["localData"]))
    built = _plan("snapshot", "--load-reports", str(tmp_path))
    assert built.exit_code == 0, built.output
    assert sorted(json.loads(built.stdout)["brokers"]) == sorted(snapshot["brokers"])
    shed = _plan("shed", "--load-reports", str(tmp_path), "--strategy", "OverloadShedder", "--raw")
    assert shed.exit_code == 0, shed.output
    assert any(u["label"] == "Success" for u in json.loads(shed.stdout)["unload"])


def test_split_and_place_end_to_end() -> None:
    split = _plan("split", "-s", str(EXAMPLE))
    assert split.exit_code == 0, split.output
    answer = json.loads(split.stdout)
    assert answer["strategy"].endswith("impl.BundleSplitterTask")
    assert [
        (s["bundle"], s["boundaries"], s["reason"]) for s in answer["split"] if s["label"] == "Success"
    ] == [("telemetry/metrics/0x00000000_0x40000000", ["0x20000000"], "Topics")]
    place = _plan("place", "-s", str(EXAMPLE), "--bundle", "orders/payments/0x00000000_0x40000000")
    assert place.exit_code == 0, place.output
    placement = json.loads(place.stdout)["placement"]
    assert placement["broker"] == "broker-4:8080" and placement["reason"] == "Selected"
    table = _plan(
        "place",
        "-s",
        str(EXAMPLE),
        "--bundle",
        "orders/payments/0x00000000_0x40000000",
        "--raw",
        "--strategy",
        "RoundRobinBrokerSelector",
        "--format",
        "table",
    )
    assert table.exit_code == 0 and "RoundRobinBrokerSelector" in table.stdout


def test_shed_loop_gives_destinations_and_batch_sessions_remember() -> None:
    shed = json.loads(_plan("shed", "-s", str(EXAMPLE)).stdout)
    assert {(u["bundle"], u["destination"]) for u in shed["unload"] if u["label"] == "Success"} == {
        ("telemetry/metrics/0x00000000_0x40000000", "broker-4:8080"),
        ("orders/payments/0x00000000_0x40000000", "broker-4:8080"),
    }
    lines = "\n".join(json.dumps({"op": "shed", "strategy": "AvgShedder", "session": "s"}) for _ in range(2))
    answers = [
        json.loads(x) for x in _plan("batch", "-s", str(EXAMPLE), input=lines + "\n").stdout.splitlines()
    ]
    assert answers[0]["unload"][0]["reason"] == "HitCount"  # first cycle: one high hit, two needed
    assert any(u["label"] == "Success" for u in answers[1]["unload"])


def test_snapshot_warnings_in_json_and_on_stderr_for_tables() -> None:
    doc = json.loads(EXAMPLE.read_text())
    doc.setdefault("config", {})["managedLedgerDefaultEnsembleSize"] = 3
    warning = (
        "config.managedLedgerDefaultEnsembleSize: a Pulsar key brokerlb does not model; accepted and ignored"
    )
    result = _plan("shed", "--raw", "--strategy", "OverloadShedder", input=json.dumps(doc))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["warnings"] == [warning]
    result = _plan(
        "shed", "--raw", "--strategy", "OverloadShedder", "--format", "table", input=json.dumps(doc)
    )
    assert result.exit_code == 0, result.output
    assert warning in " ".join(result.stderr.split()) and warning not in result.stdout
