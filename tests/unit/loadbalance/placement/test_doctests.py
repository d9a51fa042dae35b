"""The examples in the placement docstrings stay true."""

import doctest
import importlib

import pytest

MODULES = [
    "brokerlb.loadbalance.placement.semver",
    "brokerlb.loadbalance.placement.pipeline",
    "brokerlb.loadbalance.placement.isolation",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
