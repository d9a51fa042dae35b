"""Sliding-window rates of a topic's traffic."""

from __future__ import annotations

import pytest

from brokerlb.errors import InvalidInputError
from brokerlb.messaging import RateWindow, TopicCounters


def test_worked_example_of_the_module_docstring() -> None:
    w = RateWindow(5, now=10.0)
    for second in range(10, 15):
        w.add(second + 0.5, 100, 100 * 1000)
    assert w.rates(15.2) == (100.0, 100_000.0)
    assert w.rates(17.0) == (60.0, 60_000.0)
    assert w.rates(20.0) == (0.0, 0.0)
    assert (w.total_count, w.total_bytes) == (500, 500_000)


def test_a_young_topic_is_averaged_over_its_age_not_the_whole_window() -> None:
    w = RateWindow(10, now=100.0)
    assert w.rates(100.9) == (0.0, 0.0)  # no completed second yet
    w.add(100.1, 30, 300)
    w.add(101.2, 50, 500)
    assert w.rates(102.0) == (40.0, 400.0)  # 80 messages over 2 completed seconds


def test_the_current_second_is_not_counted_until_it_completes() -> None:
    w = RateWindow(2, now=0.0)
    w.add(0.5, 10)
    w.add(1.5, 1000)
    assert w.rates(1.9)[0] == 10.0
    assert w.rates(2.0)[0] == 505.0


def test_a_long_silence_empties_the_window_and_traffic_comes_back_fresh() -> None:
    w = RateWindow(3, now=0.0)
    for t in range(10):
        w.add(t + 0.1, 10)
    w.add(1000.2, 6)
    assert w.rates(1001.0) == (2.0, 0.0)  # 6 messages over the 3-second window


def test_window_must_be_at_least_a_second() -> None:
    with pytest.raises(InvalidInputError):
        RateWindow(0, now=0.0)


def test_topic_counters_give_pulsars_four_rates_and_the_connections() -> None:
    c = TopicCounters(4, now=0.0)
    for t in range(4):
        c.msg_in.add(t + 0.5, 10, 10_000)
        c.msg_out.add(t + 0.5, 20, 20_000)
        c.dropped.add(t + 0.5, 2, 2_000)
    load = c.load(4.0, producers=2, consumers=3)
    assert (load.msg_rate_in, load.msg_throughput_in, load.msg_rate_out, load.msg_throughput_out) == (
        10.0,
        10_000.0,
        20.0,
        20_000.0,
    )
    assert (load.producer_count, load.consumer_count, load.msg_drop_rate) == (2, 3, 2.0)
