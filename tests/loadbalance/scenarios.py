"""Pulsar test-suite scenarios as planner fixtures: loading, running, checking.

A fixture (``pulsar_scenarios/<group>/<PulsarTestClass>.<method>.json``) is::

    {"source": "apache/pulsar <path of the Pulsar test>#<method>",
     "description": "what the scenario shows",
     "snapshots": {"name": {...snapshot...}},          # optional, referenced as "@name"
     "requests": [{...brokerlb plan batch request...}, ...],
     "expect": [{...expectation for the answer of the same index...}, ...]}

:func:`batch_lines` turns the requests into the JSON Lines ``brokerlb plan batch`` reads
(snapshots expanded), so every fixture is also a ready-made batch input::

    python -c 'from tests.loadbalance.scenarios import *; print(*batch_lines(load("f.json")), sep="\\n")' \\
        | brokerlb plan batch

Expectation keys (all optional):

* ``placement.broker`` (a broker or ``null``), ``placement.brokerIn`` (list),
  ``placement.candidates`` (sorted list), ``placement.reason``;
* ``split.success`` -- the ``Success`` entries exactly, as ``[bundle, [boundaries], reason]``
  (any order); ``split.count`` -- their number; ``split.reasons`` -- ``{bundle: reason}`` for
  any entry;
* ``unload.success`` -- the unloads exactly, as ``[broker, bundle, destination]`` (any order);
  ``unload.successInOrder`` -- the same, in order (Pulsar's per-broker lists);
  ``unload.successOneOf`` -- one of several such lists (Pulsar accepts either);
  ``unload.successWithReason`` -- ``[broker, bundle, destination, reason]`` (any order);
* ``unload.count`` / ``unload.countAtLeast`` -- number of unloads; ``unload.brokers`` -- the set
  of brokers shed; ``unload.perBroker`` -- ``{broker: unloads}``; ``unload.destinations`` --
  ``{broker: destination}``; ``unload.reason`` -- the reason of every unload;
* ``unload.skip`` -- nothing unloaded and the one ``Skip`` entry has this reason (Pulsar's
  ``UnloadCounter`` breakdown); ``unload.stdAtMostTargetOrExhausted`` -- TransferShedder left
  the spread at most the target, or ran out of brokers it could shed;
* ``stats`` -- ``{key: value}`` equal exactly (Pulsar's doubles, bit for bit); ``statsApprox`` --
  within 1e-5;
* ``error`` -- the answer is an error containing this text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from brokerlb.loadbalance.planner import Planner

ROOT = Path(__file__).parent / "pulsar_scenarios"


def fixtures(group: str) -> list[Path]:
    return sorted((ROOT / group).glob("*.json"))


def load(path: Path | str) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def requests(fixture: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    named = fixture.get("snapshots", {})
    for request in fixture["requests"]:
        request = dict(request)
        snapshot = request.get("snapshot")
        if isinstance(snapshot, str) and snapshot.startswith("@"):
            request["snapshot"] = named[snapshot[1:]]
        yield request


def batch_lines(fixture: Mapping[str, Any]) -> list[str]:
    return [json.dumps(r) for r in requests(fixture)]


def run(fixture: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The answers ``brokerlb plan batch`` gives for the fixture's requests."""
    return list(Planner().run_batch(batch_lines(fixture)))


def check(answer: Mapping[str, Any], expect: Mapping[str, Any], where: str) -> None:
    """Assert ``answer`` meets ``expect`` (keys of the module docstring)."""
    if "error" in expect:
        assert "error" in answer and expect["error"] in answer["error"], f"{where}: {answer}"
        return
    assert "error" not in answer, f"{where}: {answer}"
    placement = answer.get("placement") or {}
    for key, value in expect.items():
        shown = f"{where}: {key} expected {value!r}, answer {json.dumps(answer)[:2000]}"
        if key == "placement.broker":
            assert placement.get("broker") == value, shown
        elif key == "placement.brokerIn":
            assert placement.get("broker") in value, shown
        elif key == "placement.candidates":
            assert placement.get("candidates") == sorted(value), shown
        elif key == "placement.reason":
            assert placement.get("reason") == value, shown
        elif key == "split.success":
            got = sorted(
                [s["bundle"], s["boundaries"], s["reason"]]
                for s in answer["split"]
                if s["label"] == "Success"
            )
            assert got == sorted(value), shown
        elif key == "split.count":
            assert sum(s["label"] == "Success" for s in answer["split"]) == value, shown
        elif key == "split.reasons":
            reasons = {s["bundle"]: s["reason"] for s in answer["split"]}
            assert all(reasons.get(b) == r for b, r in value.items()), shown
        elif key.startswith("unload.") or key in ("stats", "statsApprox"):
            _check_unload(answer, key, value, shown)
        else:
            raise AssertionError(f"{where}: unknown expectation key {key!r}")


def _check_unload(answer: Mapping[str, Any], key: str, value: Any, shown: str) -> None:  # noqa: C901
    done = [u for u in answer["unload"] if u["label"] == "Success"]
    triples = [[u["broker"], u["bundle"], u["destination"]] for u in done]
    if key == "unload.success":
        assert sorted(triples) == sorted(value), shown
    elif key == "unload.successInOrder":
        assert triples == value, shown
    elif key == "unload.successOneOf":
        assert sorted(triples) in [sorted(option) for option in value], shown
    elif key == "unload.successWithReason":
        got = sorted([u["broker"], u["bundle"], u["destination"], u["reason"]] for u in done)
        assert got == sorted(value), shown
    elif key == "unload.count":
        assert len(done) == value, shown
    elif key == "unload.countAtLeast":
        assert len(done) >= value, shown
    elif key == "unload.brokers":
        assert {u["broker"] for u in done} == set(value), shown
    elif key == "unload.perBroker":
        counts: dict[str, int] = {}
        for u in done:
            counts[u["broker"]] = counts.get(u["broker"], 0) + 1
        assert counts == value, shown
    elif key == "unload.destinations":
        assert {u["broker"]: u["destination"] for u in done} == value, shown
    elif key == "unload.reason":
        assert {u["reason"] for u in done} == {value}, shown
    elif key == "unload.skip":
        skips = [u["reason"] for u in answer["unload"] if u["label"] == "Skip"]
        assert not done and skips == [value], shown
    elif key == "unload.stdAtMostTargetOrExhausted":
        stats = answer["stats"]
        if value and "loadStdAfter" in stats:
            target = 0.25
            assert stats["loadStdAfter"] <= target or done or stats.get("skippedBrokers"), shown
    elif key == "stats":
        for name, expected in value.items():
            assert answer["stats"].get(name) == expected, f"{shown} (stats.{name})"
    elif key == "statsApprox":
        for name, expected in value.items():
            assert abs(answer["stats"][name] - expected) <= 1e-5, f"{shown} (stats.{name})"
    else:
        raise AssertionError(f"unknown expectation key {key!r}")
