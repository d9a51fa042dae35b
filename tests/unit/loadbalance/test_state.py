"""StrategyState: explicit memory between cycles; seeded random sources."""

from dataclasses import dataclass, field

import pytest

from brokerlb.loadbalance import StrategyState, new_rng


@dataclass
class _History:
    usage: dict[str, float] = field(default_factory=dict)


def test_entry_is_created_once_and_kept() -> None:
    state = StrategyState()
    state.get("ThresholdShedder", _History).usage["b1"] = 0.5
    assert state.get("ThresholdShedder", _History).usage == {"b1": 0.5}
    assert "ThresholdShedder" in state and len(state) == 1 and list(state) == ["ThresholdShedder"]
    assert state.to_json() == {"ThresholdShedder": {"usage": {"b1": 0.5}}}


def test_a_key_holding_another_type_is_refused() -> None:
    state = StrategyState()
    state.get("k", dict)
    with pytest.raises(TypeError, match="holds a dict"):
        state.get("k", _History)


def test_clear_one_or_all() -> None:
    state = StrategyState()
    state.get("a", dict)
    state.get("b", dict)
    state.clear("a")
    assert state.find("a") is None and state.find("b") == {}
    state.clear()
    assert len(state) == 0


def test_same_seed_same_sequence() -> None:
    assert [new_rng(7).random() for _ in range(3)] == [new_rng(7).random() for _ in range(3)]
    assert new_rng(7).random() != new_rng(8).random()
