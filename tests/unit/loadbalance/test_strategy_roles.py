"""Every registered strategy satisfies the protocol of its role (brokerlb.loadbalance.interfaces).

The leader, the planner and the simulator call strategies only through these three methods;
a strategy registered under a role must have the role's method with the role's parameters.
"""

from __future__ import annotations

import inspect

import pytest

from brokerlb.loadbalance import registry
from brokerlb.loadbalance.interfaces import PlacementStrategy, SheddingStrategy, SplitStrategy
from brokerlb.loadbalance.registry import StrategyKind

ROLES = {
    StrategyKind.SHEDDING: (SheddingStrategy, "find_bundles_for_unloading"),
    StrategyKind.PLACEMENT: (PlacementStrategy, "select_broker"),
    StrategyKind.SPLIT: (SplitStrategy, "find_bundles_to_split"),
}


def registered():
    for kind in StrategyKind:
        for name in registry.known_names(kind):
            if "." in name:  # every class once, by its full name
                yield kind, name


@pytest.mark.parametrize(("kind", "name"), list(registered()))
def test_a_registered_strategy_satisfies_its_role(kind, name) -> None:
    protocol, method = ROLES[kind]
    strategy = registry.create(kind, name)
    assert isinstance(strategy, protocol), f"{name} is not a {protocol.__name__}"
    assert strategy.class_name == name
    wanted = list(inspect.signature(getattr(protocol, method)).parameters)[1:]
    actual = list(inspect.signature(getattr(strategy, method)).parameters)
    assert actual == wanted, f"{name}.{method}{tuple(actual)} differs from the role's {tuple(wanted)}"


def test_every_role_has_strategies() -> None:
    assert {kind for kind, _ in registered()} == set(StrategyKind)
