"""``brokerlb config keys`` and ``brokerlb config show``."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from brokerlb.cli.main import build_app
from brokerlb.config import REGISTRY, ServiceConfig
from brokerlb.config.docs import render_markdown

runner = CliRunner()


def _run(*args: str):
    return runner.invoke(build_app(), ["config", *args])


def test_keys_json_lists_every_key() -> None:
    result = _run("keys", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["key"] for r in rows] == list(REGISTRY.keys)
    by_key = {r["key"]: r for r in rows}
    assert by_key["loadBalancerSheddingIntervalMinutes"] == {
        **by_key["loadBalancerSheddingIntervalMinutes"],
        "type": "minutes",
        "default": 1,
        "dynamic": True,
        "unit": "minutes",
    }
    assert by_key["loadBalancerBandwidthInResourceWeight"]["aliases"] == [
        "loadBalancerBandwithInResourceWeight"
    ]


def test_keys_category_filter_and_table() -> None:
    result = _run("keys", "--json", "--category", "shedding")
    assert result.exit_code == 0
    assert {r["category"] for r in json.loads(result.stdout)} == {"Load shedding"}
    table = _run("keys", "-c", "placement")
    assert table.exit_code == 0 and "loadBalancerDistributeBundlesEvenlyEnabled" in table.stdout


def test_keys_markdown_is_the_docs_page() -> None:
    result = _run("keys", "--markdown")
    assert result.exit_code == 0
    assert result.stdout == render_markdown()


def test_show_json_effective_config(tmp_path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("clusterName=c1\nloadBalancerSheddingIntervalMinutes=0.05\n")
    result = _run("show", "--config", str(conf), "--set", "maxUnloadPercentage=0.5", "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert ServiceConfig.from_mapping(shown) == ServiceConfig(
        clusterName="c1", loadBalancerSheddingIntervalMinutes=0.05, maxUnloadPercentage=0.5
    )
    changed = json.loads(_run("show", "--config", str(conf), "--json", "--changed").stdout)
    assert changed == {"clusterName": "c1", "loadBalancerSheddingIntervalMinutes": 0.05}


def test_show_table_marks_changes() -> None:
    result = _run("show", "--set", "clusterName=c9", "--changed")
    assert result.exit_code == 0
    assert "clusterName" in result.stdout and "c9" in result.stdout and "changed" in result.stdout


def test_show_bad_value_is_one_error_line() -> None:
    result = _run("show", "--set", "loadBalancerBrokerOverloadedThresholdPercentage=lots")
    assert result.exit_code == 2
    assert "loadBalancerBrokerOverloadedThresholdPercentage" in result.output
    assert "'lots'" in result.output


def test_show_unknown_key_warns_not_fails(tmp_path) -> None:
    result = _run("show", "--set", "loadBalancerSheddingEnable=false", "--json")
    assert result.exit_code == 0
    assert "did you mean loadBalancerSheddingEnabled" in result.output
    strict = _run("show", "--set", "loadBalancerSheddingEnable=false", "--strict")
    assert strict.exit_code == 2
