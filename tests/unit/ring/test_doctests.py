"""The examples in the names' and the ring's docstrings stay true."""

import doctest
import importlib

import pytest

MODULES = ["brokerlb.naming", "brokerlb.ring.bundles", "brokerlb.ring.split_algorithms"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
