"""The planner: requests, sessions, batch answers and errors."""

import json
from pathlib import Path

import pytest

from brokerlb.errors import BundleNotFoundError, InvalidInputError, InvalidSnapshotError, UnknownStrategyError
from brokerlb.loadbalance.planner import Planner, PlanRequest

EXAMPLE = json.loads(
    (Path(__file__).parents[3] / "examples" / "snapshots" / "skewed-cluster.json").read_text()
)


def test_answer_has_every_part() -> None:
    answer = Planner().run({"op": "shed", "snapshot": EXAMPLE, "strategy": "OverloadShedder"})
    assert set(answer) == {"op", "strategy", "unload", "split", "merge", "placement", "stats"}
    assert answer["strategy"] == "org.apache.pulsar.broker.loadbalance.impl.OverloadShedder"
    assert answer["split"] == [] and answer["placement"] is None
    unloads = [u for u in answer["unload"] if u["label"] == "Success"]
    assert [(u["broker"], u["bundle"]) for u in unloads] == [
        ("broker-1:8080", "telemetry/metrics/0x00000000_0x40000000")
    ]


def test_raw_mode_runs_the_strategy_alone() -> None:
    snapshot = dict(EXAMPLE, config={"loadBalancerSheddingEnabled": False})
    looped = Planner().run({"op": "shed", "snapshot": snapshot, "strategy": "OverloadShedder"})
    raw = Planner().run({"op": "shed", "snapshot": snapshot, "strategy": "OverloadShedder", "raw": True})
    assert [(u["label"], u["reason"]) for u in looped["unload"]] == [("Skip", "Disabled")]
    assert any(u["label"] == "Success" for u in raw["unload"])


def test_overrides_apply_over_the_snapshot_config() -> None:
    answer = Planner().run(
        {
            "op": "shed",
            "snapshot": EXAMPLE,
            "strategy": "OverloadShedder",
            "set": {"loadBalancerBrokerOverloadedThresholdPercentage": "95"},
        }
    )
    assert not any(u["label"] == "Success" for u in answer["unload"])
    assert answer["stats"]["overloadThreshold"] == 0.95


@pytest.mark.parametrize(
    ("request_", "error", "match"),
    [
        ({"op": "shed", "snapshot": EXAMPLE, "strategy": "Nope"}, UnknownStrategyError, "Nope"),
        ({"op": "fly", "snapshot": EXAMPLE}, InvalidInputError, "'op'"),
        ({"op": "shed"}, InvalidInputError, "no snapshot"),
        ({"op": "shed", "snapshot": {"now": "x"}}, InvalidSnapshotError, "now"),
        ({"op": "place", "snapshot": EXAMPLE}, InvalidInputError, "bundle"),
        (
            {"op": "place", "snapshot": EXAMPLE, "bundle": "x/y/0x00000000_0xffffffff"},
            BundleNotFoundError,
            "not in the snapshot",
        ),
        ({"op": "shed", "snapshot": EXAMPLE, "seed": "1"}, InvalidInputError, "seed"),
        ({"op": "shed", "snapshot": EXAMPLE, "raw": 1}, InvalidInputError, "raw"),
        ({"op": "shed", "snapshot": EXAMPLE, "set": {"noSuchKey": 1}}, InvalidInputError, "noSuchKey"),
        ({"op": "shed", "snapshot": EXAMPLE, "strategey": "AvgShedder"}, InvalidInputError, "'strategey'"),
    ],
)
def test_errors(request_, error, match: str) -> None:
    with pytest.raises(error, match=match):
        Planner().run(request_)


def test_batch_goes_on_after_an_error() -> None:
    lines = [
        json.dumps({"op": "shed", "snapshot": EXAMPLE, "strategy": "OverloadShedder"}),
        "{not json",
        "",
        json.dumps({"op": "shed", "snapshot": EXAMPLE, "strategy": "Nope"}),
        json.dumps({"op": "shed", "snapshot": EXAMPLE, "strategy": "OverloadShedder", "raw": True}),
    ]
    answers = list(Planner().run_batch(lines))
    assert len(answers) == 4
    assert "unload" in answers[0] and "unload" in answers[3]
    assert answers[1]["line"] == 2 and "not valid JSON" in answers[1]["error"]
    assert answers[2]["line"] == 4 and "Nope" in answers[2]["error"]


def test_sessions_keep_state_and_rng() -> None:
    planner = Planner()
    first = planner.session("s1", seed=5)
    assert planner.session("s1") is first
    value = first.rng.random()
    planner.session("s1", seed=5)  # reseeding restarts the sequence
    assert first.rng.random() == value
    assert planner.session(None) is not planner.session(None)


def test_notes_in_a_request_are_ignored() -> None:
    answer = Planner().run(
        {
            "op": "shed",
            "snapshot": EXAMPLE,
            "strategy": "OverloadShedder",
            "id": 7,
            "expect": {"x": 1},
            "_note": "from a fixture",
        }
    )
    assert answer["op"] == "shed"


def test_default_snapshot_and_clock() -> None:
    snapshot = {k: v for k, v in EXAMPLE.items() if k != "now"}
    planner = Planner(clock=lambda: EXAMPLE["now"], default_snapshot=snapshot)
    view = planner.view_of(None)
    assert view.now_ms == EXAMPLE["now"]
    assert PlanRequest.from_json({"op": "split"}).snapshot is None
