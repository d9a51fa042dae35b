"""Every named scenario loads, and the small ones run (with the invariants checked)."""

import pytest

from brokerlb.sim import list_scenarios, resolve_scenario, run_scenario

SCENARIOS = list_scenarios()
LARGE = {"large-day"}


def test_library_is_not_empty_and_documented():
    assert len(SCENARIOS) >= 1
    for info in SCENARIOS:
        assert info.description, f"{info.name} needs a description"
        assert resolve_scenario(info.name).name == info.name


@pytest.mark.parametrize("name", sorted(s.name for s in SCENARIOS if s.name not in LARGE))
def test_scenario_runs_its_first_minutes(name):
    scenario = resolve_scenario(name)
    result = run_scenario(scenario, "OverloadShedder", {"duration": "3m"}, validate=True)
    assert result.cycles == 3
