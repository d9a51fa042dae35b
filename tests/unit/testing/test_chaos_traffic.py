"""The fault campaign's message account (pure) and the ``brokerlb chaos`` exit status."""

from __future__ import annotations

import collections

import pytest
from typer.testing import CliRunner

from brokerlb.cli.main import build_app
from brokerlb.testing.chaos import CampaignResult
from brokerlb.testing.chaos_traffic import HEAL, WARM_UP, account
from brokerlb.testing.ownership_checker import CampaignVerdict

S = 1_000_000_000


def test_account_counts_each_message_in_the_window_of_its_acknowledgement() -> None:
    faults = [(10 * S, "kill"), (20 * S, "pause-short")]
    acked = {"a": 5 * S, "b": 12 * S, "c": 15 * S, "d": 25 * S, "e": 40 * S}
    delivered = {"a", "b", "d", "e"}
    out = account(acked, delivered, faults, schedule_end_ns=30 * S)

    assert out["acknowledged_lost"] == 1
    assert out["messages"] == {"acknowledged": 5, "delivered": 4, "acknowledged_lost": 1}
    by_kind = out["messages_by_fault_kind"]
    assert by_kind[WARM_UP] == {"acknowledged": 1, "delivered": 1, "acknowledged_lost": 0}
    assert by_kind["kill"] == {"acknowledged": 2, "delivered": 1, "acknowledged_lost": 1}
    assert by_kind["pause-short"] == {"acknowledged": 1, "delivered": 1, "acknowledged_lost": 0}
    assert by_kind[HEAL] == {"acknowledged": 1, "delivered": 1, "acknowledged_lost": 0}
    # "c" was acknowledged after the kill and before the pause: the next fault is the pause
    assert out["lost_by_next_fault_kind"] == {"pause-short": 1}
    assert out["lost_examples"] == ["c"]


def test_a_message_lost_before_the_first_fault_names_that_fault_as_the_next() -> None:
    out = account({"x": 1 * S, "y": 2 * S}, set(), [(3 * S, "kill")])
    assert out["messages_by_fault_kind"][WARM_UP]["acknowledged_lost"] == 2
    assert out["lost_by_next_fault_kind"] == {"kill": 2}
    assert out["lost_examples"] == ["x", "y"]  # in order of acknowledgement


def test_a_message_delivered_but_never_acknowledged_is_not_counted() -> None:
    out = account({}, {"z"}, [])
    assert out["acknowledged_lost"] == 0
    assert out["messages"] == {"acknowledged": 0, "delivered": 0, "acknowledged_lost": 0}


def _result(lost: int) -> CampaignResult:
    traffic = account({f"m{i}": i for i in range(3)}, {f"m{i}" for i in range(3 - lost)}, [])
    return CampaignResult(1, CampaignVerdict(), collections.Counter({"kill": 1}), 1.0, 0, 0, traffic=traffic)


@pytest.mark.parametrize(("lost", "code"), [(0, 0), (2, 1)])
def test_chaos_exits_1_when_an_acknowledged_message_was_lost(
    monkeypatch: pytest.MonkeyPatch, lost: int, code: int
) -> None:
    from brokerlb.testing import chaos

    async def run(self: chaos.Campaign, script: list[str] | None = None) -> CampaignResult:
        return _result(lost)

    monkeypatch.setattr(chaos.Campaign, "run", run)
    result = CliRunner().invoke(build_app(), ["chaos", "--faults", "1"])
    assert result.exit_code == code, result.output
    assert f'"acknowledged_lost": {lost}' in result.output
    if lost:
        assert "acknowledged and lost: 2 messages" in result.output


def test_the_summary_has_acknowledged_lost_without_clients() -> None:
    result = CampaignResult(1, CampaignVerdict(), collections.Counter(), 1.0, 0, 0)
    assert result.summary()["acknowledged_lost"] == 0
