"""The fault campaign's every-kind script (pure) and ``brokerlb chaos --every-kind``'s input check."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from brokerlb.cli.main import build_app
from brokerlb.errors import InvalidInputError
from brokerlb.testing.chaos import FAULT_KINDS, every_kind_schedule


@given(seed=st.integers(0, 2**32), extra=st.integers(0, 60))
def test_every_kind_occurs_and_a_leader_change_comes_first(seed: int, extra: int) -> None:
    faults = len(FAULT_KINDS) + 1 + extra
    script = every_kind_schedule(seed, faults, FAULT_KINDS)

    assert len(script) == faults
    assert script[0] == "kill-leader"
    assert set(script[1:]) == set(FAULT_KINDS)
    assert script == every_kind_schedule(seed, faults, FAULT_KINDS)  # the seed is the schedule


def test_without_kill_leader_nothing_is_put_first_and_repeated_kinds_count_once() -> None:
    kinds = ("kill", "pause-short", "kill")
    script = every_kind_schedule(3, 2, kinds)
    assert sorted(script) == ["kill", "pause-short"]


def test_the_ci_campaign_keeps_its_schedule() -> None:
    # tests/integration/chaos/test_fault_campaign.py runs seed 19 with 35 faults; moving the function
    # out of that test kept its draws (these six were the schedule's opening before the move)
    script = every_kind_schedule(19, 35, FAULT_KINDS)
    assert script[:6] == [
        "kill-leader",
        "zk-restart-pause",
        "pause-leader",
        "kill-leader",
        "stale-leader-command",
        "pause-leader",
    ]
    assert len(script) == 35 and set(script) == set(FAULT_KINDS)


def test_too_few_faults_for_every_kind_is_refused_naming_the_need() -> None:
    with pytest.raises(InvalidInputError, match=f"at least {len(FAULT_KINDS) + 1} are needed"):
        every_kind_schedule(1, len(FAULT_KINDS), FAULT_KINDS)

    result = CliRunner().invoke(
        build_app(),
        ["chaos", "--every-kind", "--faults", "3", "--kinds", "kill,clock-jump,zk-restart,pause-short"],
    )
    assert result.exit_code != 0
    assert "at least 4 are needed" in result.output
