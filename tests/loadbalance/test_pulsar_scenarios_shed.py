"""Shedding decisions on scenarios taken from Pulsar's own test suite.

Each fixture under ``pulsar_scenarios/shedding`` ports one test method of OverloadShedderTest,
ThresholdShedderTest, UniformLoadShedderTest, AvgShedderTest or TransferShedderTest (built by
``build_shedding_scenarios.py``); it is run as ``brokerlb plan batch`` would run it and every
answer is checked against what Pulsar's test asserts -- decisions, skip reasons and Pulsar's
load average / standard deviation bit for bit.
"""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brokerlb.cli.main import build_app
from tests.loadbalance.scenarios import batch_lines, check, fixtures, load, run

FIXTURES = fixtures("shedding")


def test_there_are_scenarios_for_every_shedding_test_class() -> None:
    classes = {p.name.split(".test")[0] for p in FIXTURES}
    assert classes == {
        "OverloadShedderTest",
        "ThresholdShedderTest",
        "UniformLoadShedderTest",
        "AvgShedderTest",
        "TransferShedderTest",
    }
    assert len(FIXTURES) >= 40


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_scenario(path: Path) -> None:
    fixture = load(path)
    assert fixture["source"].startswith("apache/pulsar ") and fixture["description"]
    answers = run(fixture)
    assert len(answers) == len(fixture["expect"])
    for i, (answer, expect) in enumerate(zip(answers, fixture["expect"], strict=True)):
        check(answer, expect, f"{path.stem}[{i}]")


def test_a_shedding_scenario_through_the_cli_batch_command() -> None:
    fixture = load(
        Path(__file__).parent
        / "pulsar_scenarios"
        / "shedding"
        / "TransferShedderTest.testLoadBalancerSheddingConditionHitCountThreshold.json"
    )
    result = CliRunner().invoke(build_app(), ["plan", "batch"], input="\n".join(batch_lines(fixture)) + "\n")
    assert result.exit_code == 0, result.output
    answers = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(answers) == 4
    for i, (answer, expect) in enumerate(zip(answers, fixture["expect"], strict=True)):
        check(answer, expect, f"cli[{i}]")
