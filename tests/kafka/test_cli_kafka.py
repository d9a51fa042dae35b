import json

from typer.testing import CliRunner

from brokerlb.cli.main import build_app
from brokerlb.kafka.partitioner import partition_for_key

runner = CliRunner()
APP = build_app()

GROUP = {
    "members": {
        "C0": {"topics": ["t0", "t1"], "owned": {"t0": [0, 1, 2]}, "generation": 1},
        "C1": {"topics": ["t0", "t1"]},
    },
    "partitions": {"t0": 3, "t1": 3},
    "rates": {"t0": [5, 1, 1], "t1": [1, 1, 1]},
}


def test_partition_command():
    result = runner.invoke(APP, ["kafka", "partition", "--key", "foobar", "--partitions", "6"])
    assert result.exit_code == 0 and result.stdout.strip() == str(partition_for_key(b"foobar", 6))
    result = runner.invoke(
        APP, ["kafka", "partition", "--key", "key1", "--partitions", "100", "--scheme", "JavaStringHash"]
    )
    assert result.stdout.strip() == "98"
    bad = runner.invoke(APP, ["kafka", "partition", "--key", "k", "--partitions", "0"])
    assert bad.exit_code == 2 and "--partitions must be >= 1" in bad.stderr
    bad = runner.invoke(APP, ["kafka", "partition", "--key", "k", "--partitions", "3", "--scheme", "crc"])
    assert bad.exit_code == 2 and "unknown --scheme" in bad.stderr


def test_assign_command_all_assignors(tmp_path):
    path = tmp_path / "group.json"
    path.write_text(json.dumps(GROUP))
    outputs = {}
    for name in (
        "range",
        "roundrobin",
        "sticky",
        "cooperative-sticky",
        "load-aware",
        "uniform",
        "range-server",
    ):
        result = runner.invoke(APP, ["kafka", "assign", "--assignor", name, "--group", str(path)])
        assert result.exit_code == 0, result.stderr
        outputs[name] = json.loads(result.stdout)
        assert set(outputs[name]) == {"assignment", "moved", "revoked", "pending"}
    assert outputs["range"] == {
        "assignment": {"C0": {"t0": [0, 1], "t1": [0, 1]}, "C1": {"t0": [2], "t1": [2]}},
        "moved": 1,
        "revoked": {"C0": {"t0": [2]}},
        "pending": {},
    }
    assert outputs["sticky"]["moved"] == 0
    assert outputs["load-aware"]["pending"] == {"C1": {"t0": [1, 2]}}
    # KIP-848 uniform: 6 partitions, 3 each; C0 keeps all three t0 partitions it owned
    assert outputs["uniform"] == {
        "assignment": {"C0": {"t0": [0, 1, 2]}, "C1": {"t1": [0, 1, 2]}},
        "moved": 0,
        "revoked": {},
        "pending": {},
    }
    assert outputs["range-server"]["assignment"] == outputs["range"]["assignment"]


def test_assign_command_from_stdin_and_legacy_flag():
    result = runner.invoke(
        APP,
        ["kafka", "assign", "--assignor", "sticky", "--legacy-sticky", "--group", "-"],
        input=json.dumps(GROUP),
    )
    assert result.exit_code == 0 and json.loads(result.stdout)["moved"] == 0


def test_assign_command_errors(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    result = runner.invoke(APP, ["kafka", "assign", "--assignor", "range", "--group", str(broken)])
    assert result.exit_code == 2 and "is not valid JSON" in result.stderr
    result = runner.invoke(APP, ["kafka", "assign", "--assignor", "range", "--group", str(tmp_path / "none")])
    assert result.exit_code == 2 and "cannot read group file" in result.stderr
    result = runner.invoke(
        APP, ["kafka", "assign", "--assignor", "fair", "--group", "-"], input=json.dumps(GROUP)
    )
    assert result.exit_code == 2 and "Unknown assignor strategy 'fair'" in result.stderr
    result = runner.invoke(
        APP,
        ["kafka", "assign", "--assignor", "range", "--group", "-"],
        input=json.dumps({"members": {"a": {"topics": ["t"]}}, "partitions": {"t": -1}}),
    )
    assert result.exit_code == 2 and "partition count of topic 't'" in result.stderr
