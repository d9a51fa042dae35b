"""The Grafana dashboard in the repository queries only series a broker exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from brokerlb.testing.clusters import InProcessCluster

pytestmark = pytest.mark.asyncio(loop_scope="package")

DASHBOARD = Path(__file__).resolve().parents[3] / "examples" / "grafana" / "brokerlb-load-balancing.json"
SERIES = re.compile(r"\b((?:pulsar|brokerlb)_[A-Za-z0-9_]+)")
#: sample names a family of each type exposes
SUFFIXES = {"counter": ("_total",), "summary": ("", "_count", "_sum"), "gauge": ("",)}


def queried_series() -> set[str]:
    exprs = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            exprs.extend(v for k, v in node.items() if k in ("expr", "query") and isinstance(v, str))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json.loads(DASHBOARD.read_text()))
    return {name for expr in exprs for name in SERIES.findall(expr)}


async def test_every_series_the_dashboard_queries_is_exported() -> None:
    queried = queried_series()
    assert len(queried) >= 30, sorted(queried)
    cluster = await InProcessCluster(1, {"exposeBundlesMetricsInPrometheus": True}).start()
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            text = (await client.get(f"{cluster.urls[0]}/metrics")).text
    finally:
        await cluster.stop()
    exported = {
        f.name + suffix
        for f in text_string_to_metric_families(text)
        for suffix in SUFFIXES.get(f.type, ("",))
    }
    assert not queried - exported, f"queried but not exported: {sorted(queried - exported)}"
