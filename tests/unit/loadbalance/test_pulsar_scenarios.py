"""Scenarios ported from Apache Pulsar's own tests, run through the planner's batch mode.

Each ``pulsar_scenarios/*.json`` fixture ports one Pulsar test class (built by
``pulsar_scenarios/_build.py``); each scenario is one test method: a list of
``brokerlb plan batch`` requests (sharing strategy state through their ``session``) and
the outcome Pulsar's test asserts. ``"$s0"`` snapshot references are expanded first.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from brokerlb.loadbalance.planner import Planner

HERE = Path(__file__).parent / "pulsar_scenarios"


def _scenarios() -> list[Any]:
    cases = []
    for path in sorted(HERE.glob("*.json")):
        doc = json.loads(path.read_text())
        for scenario in doc["scenarios"]:
            cases.append(pytest.param(scenario, id=f"{path.stem}::{scenario['name']}"))
    return cases


def _successes(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [u for u in answer["unload"] if u["label"] == "Success"]


def _triples(unloads: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(u["broker"], u["bundle"], u["destination"]) for u in unloads]


def check(answer: dict[str, Any], expect: dict[str, Any], unloaded: set[str]) -> None:  # noqa: C901
    assert "error" not in answer, answer
    if "placement" in expect:
        if expect.get("ifUnloaded") is None or expect["ifUnloaded"] in unloaded:
            assert answer["placement"]["broker"] == expect["placement"], answer["placement"]
        else:
            assert answer["placement"]["broker"] in answer["placement"]["candidates"]
        return
    done = _successes(answer)
    if "unloads" in expect:
        assert sorted(_triples(done), key=str) == sorted(map(tuple, expect["unloads"]), key=str), answer["unload"]
    if "unloadsInOrder" in expect:
        assert _triples(done) == [tuple(u) for u in expect["unloadsInOrder"]], answer["unload"]
    if "unloadsOneOf" in expect:
        assert sorted(_triples(done)) in [sorted(map(tuple, option)) for option in expect["unloadsOneOf"]]
    if "unloadsWithReason" in expect:
        got = sorted((u["broker"], u["bundle"], u["destination"], u["reason"]) for u in done)
        assert got == sorted(map(tuple, expect["unloadsWithReason"])), answer["unload"]
    if "count" in expect:
        assert len(done) == expect["count"], answer["unload"]
    if "countAtLeast" in expect:
        assert len(done) >= expect["countAtLeast"], answer["unload"]
    if "brokers" in expect:
        assert {u["broker"] for u in done} == set(expect["brokers"])
    if "perBroker" in expect:
        assert Counter(u["broker"] for u in done) == Counter(expect["perBroker"])
    if "destinations" in expect:
        assert {u["broker"]: u["destination"] for u in done} == expect["destinations"]
    if "reason" in expect:
        assert {u["reason"] for u in done} == {expect["reason"]}, answer["unload"]
    if "skip" in expect:
        assert not done, answer["unload"]
        skips = [u for u in answer["unload"] if u["label"] == "Skip"]
        assert [u["reason"] for u in skips] == [expect["skip"]], answer["unload"]
    for key, value in expect.get("stats", {}).items():
        assert answer["stats"][key] == value, (key, answer["stats"])
    for key, value in expect.get("statsApprox", {}).items():
        assert answer["stats"][key] == pytest.approx(value, abs=1e-5), (key, answer["stats"])
    if "cooledDownBrokers" in expect:
        assert answer["stats"]["cooledDownBrokers"] == expect["cooledDownBrokers"]
    if expect.get("stdAfterAtMostTargetOrExhausted"):
        stats = answer["stats"]
        if "loadStdAfter" in stats:
            assert stats["loadStdAfter"] <= 0.25 or len(done) > 0 or stats.get("skippedBrokers")


@pytest.mark.parametrize("scenario", _scenarios())
def test_pulsar_scenario(scenario: dict[str, Any]) -> None:
    planner = Planner()
    unloaded: set[str] = set()
    for step in scenario["steps"]:
        request = dict(step["request"])
        ref = request["snapshot"]
        if isinstance(ref, str) and ref.startswith("$"):
            request["snapshot"] = scenario["snapshots"][ref[1:]]
        line = json.dumps(request)
        (answer,) = list(planner.run_batch([line]))
        check(answer, step["expect"], unloaded)
        unloaded.update(u["bundle"] for u in _successes(answer) if answer["op"] == "shed")
