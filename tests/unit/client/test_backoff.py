"""Reconnect backoff: doubling from the initial delay to the maximum, jittered down by up to 10 %."""

from __future__ import annotations

import random

import pytest

from brokerlb.client import Backoff
from brokerlb.errors import InvalidInputError


def test_backoff_doubles_up_to_the_maximum_and_resets() -> None:
    b = Backoff(0.1, 3.0, rng=random.Random(0))
    delays = [b.next() for _ in range(10)]
    assert delays[0] == 0.1
    nominal = [min(0.1 * 2**i, 3.0) for i in range(10)]
    assert all(0.9 * n <= d <= n for d, n in zip(delays, nominal, strict=True))
    b.reset()
    assert b.next() == 0.1


def test_backoff_needs_a_sane_range() -> None:
    with pytest.raises(InvalidInputError):
        Backoff(0, 1)
    with pytest.raises(InvalidInputError):
        Backoff(2, 1)
