"""The examples in the input-bounds and safe-regex docstrings stay true."""

import doctest
import importlib

import pytest

MODULES = ["brokerlb.limits", "brokerlb.safe_regex"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
