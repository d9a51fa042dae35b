"""Scenario-level tests of the simulator with the real decision engine."""

from __future__ import annotations

import pytest

from brokerlb.sim import parse_scenario


def small_scenario(events=(), minutes=40, brokers=4, **extra):
    """A small cluster that runs in about a second: 4 brokers, 3 namespaces x 8 bundles."""
    data = {
        "name": "small",
        "seed": 5,
        "duration": f"{minutes}m",
        "timing": {"unload": "50ms", "lookup": "500ms", "session_timeout": "30s"},
        "resources": {"cpu_us_per_msg": 20, "cpu_us_per_mb": 2000, "base_cpu": 2},
        "brokers": [{"name": "b{i}", "count": brokers, "cores": 4}],
        "workload": {"msg_rate": 15_000, "zipf": 1.0, "noise": 0.05},
        "namespaces": [{"name": "t/ns-{i}", "count": 3, "bundles": 8, "topics": 150}],
        "events": list(events),
    }
    data.update(extra)
    return parse_scenario(data, source="small")


@pytest.fixture
def small():
    return small_scenario
