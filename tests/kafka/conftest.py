"""Fixtures and settings for the Kafka-style balancing tests."""

from __future__ import annotations


def pytest_configure(config):
    # kafka-python 3.0.12 loads its protocol schemas with importlib.resources.open_text
    config.addinivalue_line("filterwarnings", r"ignore:(open|read)_text is deprecated:DeprecationWarning")
