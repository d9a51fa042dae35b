"""The examples in the load-data model's docstrings stay true."""

import doctest
import importlib

import pytest

MODULES = [
    "brokerlb.model.resources",
    "brokerlb.model.bundle_stats",
    "brokerlb.model.broker_data",
    "brokerlb.model.time_average",
    "brokerlb.model.extensible",
    "brokerlb.model.report_update",
    "brokerlb.testing.builders",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
