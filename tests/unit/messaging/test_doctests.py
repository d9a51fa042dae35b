"""The examples in the data path's docstrings stay true."""

import doctest
import importlib

import pytest

MODULES = [
    "brokerlb.backoff",
    "brokerlb.perf.workload",
    "brokerlb.perf.histogram",
    "brokerlb.perf.pauses",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
