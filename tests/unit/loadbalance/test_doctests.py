"""The examples in the decision engine's docstrings stay true."""

import doctest
import importlib

import pytest

MODULES = [
    "brokerlb.loadbalance.decisions",
    "brokerlb.loadbalance.view",
    "brokerlb.loadbalance.state",
    "brokerlb.loadbalance.registry",
    "brokerlb.loadbalance.balance_score",
    "brokerlb.loadbalance.policies",
    "brokerlb.loadbalance.range_counts",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
