"""The report: summary table, PNG plots, summary.json and the side-by-side HTML page."""

import json

import pytest

from brokerlb.sim import compare
from brokerlb.sim.report import decision_table, summary_table, write_report
from tests.sim.conftest import small_scenario

STRATEGIES = ["OverloadShedder", "OverloadShedder+LeastResourceUsageWithWeight"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    scenario = small_scenario([{"at": "3m", "type": "fail_broker", "broker": "b2"}], minutes=8)
    results = compare(scenario, STRATEGIES)
    out = tmp_path_factory.mktemp("report")
    return scenario, results, out, write_report(scenario, results, out)


def test_files(report):
    scenario, results, out, index = report
    assert index == out / "index.html"
    pngs = {p.name for p in out.glob("*.png")}
    assert {"max-load.png", "spread.png", "distance.png", "moves.png", "unowned.png"} <= pngs
    for label in ("OverloadShedder", "OverloadShedder_LeastResourceUsageWithWeight"):
        assert {f"brokers-{label}.png", f"heatmap-{label}.png"} <= pngs
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    doc = json.loads((out / "summary.json").read_text())
    assert doc["scenario"]["name"] == "small" and [r["label"] for r in doc["results"]] == [
        "OverloadShedder",
        "OverloadShedder+LeastResourceUsageWithWeight",
    ]
    assert len(doc["results"][0]["series"]["load_max"]) == 8


def test_summary_and_decision_tables(report):
    _, results, _, _ = report
    rows = {row.key: (values, best) for row, values, best in summary_table(results)}
    assert set(rows) >= {"load_max_mean", "distance_mean", "moves", "flaps", "unowned_seconds"}
    values, _ = rows["moves"]
    assert values == [f"{r.summary['moves']:,}" for r in results]
    kinds = {kind for kind, *_ in decision_table(results[0])}
    assert {"unload", "placement"} <= kinds


def test_html_names_every_strategy_side_by_side(report):
    scenario, results, out, index = report
    html = index.read_text()
    for r in results:
        assert f"data-strategy='{r.label}'" in html
    assert html.count("<section class='strategy'") == 2
    assert "repeat(auto-fit" in html, "columns wrap: every strategy stays on screen"
    for r in results:  # each strategy's moves in a full-width table of their own
        if r.moves:
            assert f"<table class='moves' data-strategy='{r.label}'>" in html
    assert "fail_broker" in html and "seed <code>5</code>" in html
