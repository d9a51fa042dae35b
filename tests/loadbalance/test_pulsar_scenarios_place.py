"""Placement and split decisions on scenarios taken from Pulsar's own test suite.

Each fixture under ``pulsar_scenarios/placement`` and ``pulsar_scenarios/split`` is run as
``brokerlb plan batch`` would run it (one planner, sessions shared by name) and every answer is
checked against what Pulsar's test asserts (see :mod:`tests.loadbalance.scenarios`).
"""

import json
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brokerlb.cli.main import build_app
from tests.loadbalance.scenarios import batch_lines, check, fixtures, load, run

FIXTURES = fixtures("placement") + fixtures("split")


def test_there_are_scenarios_for_every_placement_and_split_test_class() -> None:
    classes = {p.name.split(".test")[0] for p in FIXTURES}
    assert {
        "ModularLoadManagerStrategyTest",
        "extensions.LeastResourceUsageWithWeightTest",
        "LoadManagerSharedTest",
        "AntiAffinityNamespaceGroupTest",
        "BrokerVersionFilterTest",
        "extensions.BrokerIsolationPoliciesFilterTest",
        "extensions.BrokerMaxTopicCountFilterTest",
        "BundleSplitterTaskTest",
        "DefaultNamespaceBundleSplitStrategyTest",
        "ModularLoadManagerImplTest",
        "extensions.BrokerVersionFilterTest",
    } <= classes


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_scenario(path: Path) -> None:
    fixture = load(path)
    assert fixture["source"].startswith("apache/pulsar ") and fixture["description"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated weight keys Pulsar's tests set on purpose
        answers = run(fixture)
    assert len(answers) == len(fixture["expect"])
    for i, (answer, expect) in enumerate(zip(answers, fixture["expect"], strict=True)):
        check(answer, expect, f"{path.stem}[{i}]")


def test_a_scenario_through_the_cli_batch_command() -> None:
    fixture = load(
        Path(__file__).parent
        / "pulsar_scenarios"
        / "split"
        / "DefaultNamespaceBundleSplitStrategyTest.testMaxTopics.json"
    )
    result = CliRunner().invoke(build_app(), ["plan", "batch"], input="\n".join(batch_lines(fixture)) + "\n")
    assert result.exit_code == 0, result.output
    answers = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    for i, (answer, expect) in enumerate(zip(answers, fixture["expect"], strict=True)):
        check(answer, expect, f"cli[{i}]")
