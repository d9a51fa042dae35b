"""needBrokerDataUpdate: every branch, for LocalBrokerData and BrokerLoadData."""

import math

import pytest

from brokerlb.errors import InvalidLoadDataError
from brokerlb.model import BrokerLoadData, LocalBrokerData, need_broker_data_update, percent_change
from brokerlb.testing import broker, broker_load, bundle_stats

MIN = 60_000
NOW = 100 * MIN


def test_percent_change_branches():
    assert percent_change(0, 0) == 0.0  # avoid NaN
    assert percent_change(0, 1e-9) == math.inf
    assert percent_change(0.0, -3.0) == math.inf
    assert percent_change(200, 150) == 25.0
    assert percent_change(200, 250) == 25.0
    assert percent_change(-200, -150) == 25.0  # |(old - new) / old|
    assert percent_change(10, 0) == 100.0


def pair(**changes):
    """(last written, current) with current's last_update one minute ago."""
    base = dict(cpu=50, bundles={"t/ns/a": bundle_stats(msg_rate_in=100, msg_throughput_in=1000)})
    last = broker("b1", **base)
    current = broker("b1", last_update=NOW - MIN, **{**base, **changes})
    return last, current


def test_unchanged_report_is_not_written():
    last, current = pair()
    decision = need_broker_data_update(last, current, NOW)
    assert not decision and decision.reason == "unchanged"
    assert decision.max_change == 0.0 and decision.since_last_write_ms == MIN


def test_max_interval_forces_a_write():
    last, current = pair()
    # exactly 15 minutes is not "more than": no write
    assert not need_broker_data_update(last, current, NOW - MIN + 15 * MIN)
    decision = need_broker_data_update(last, current, NOW - MIN + 15 * MIN + 1)
    assert decision and decision.reason == "max-interval"
    assert need_broker_data_update(last, current, NOW, max_interval_minutes=0.5).reason == "max-interval"


def test_resource_usage_change_counts_in_percentage_points():
    last, current = pair(cpu=62.5)  # 0.5 -> 0.625, both exact in float32: 12.5 points
    decision = need_broker_data_update(last, current, NOW)
    assert decision and decision.reason == "threshold" and decision.max_change == 12.5
    assert not need_broker_data_update(last, current, NOW, threshold_percentage=12.5)  # not "more than"
    assert not need_broker_data_update(last, current, NOW, threshold_percentage=20)


def test_float32_percentages_show_through():
    # 60% of 800 is 60.000004% in float32, so 50% -> 60% is just over 10 points
    last, current = pair(cpu=60)
    decision = need_broker_data_update(last, current, NOW)
    assert decision.max_change == pytest.approx(10.0, abs=1e-5) and decision.max_change > 10.0
    assert decision.reason == "threshold"


def test_memory_counts_only_with_the_2x_formula():
    last, current = pair(memory=90)
    assert not need_broker_data_update(last, current, NOW)
    assert need_broker_data_update(last, current, NOW, include_memory_in_max=True).reason == "threshold"


def test_msg_rate_throughput_and_bundle_count_changes():
    last, current = pair(bundles={"t/ns/a": bundle_stats(msg_rate_in=115, msg_throughput_in=1000)})
    assert need_broker_data_update(last, current, NOW).max_change == pytest.approx(15.0)
    last, current = pair(bundles={"t/ns/a": bundle_stats(msg_rate_in=100, msg_throughput_in=1200)})
    assert need_broker_data_update(last, current, NOW).max_change == pytest.approx(20.0)
    last, current = pair(
        bundles={
            "t/ns/a": bundle_stats(msg_rate_in=100, msg_throughput_in=1000),
            "t/ns/b": bundle_stats(topics=0),
        }
    )
    assert need_broker_data_update(last, current, NOW).max_change == 100.0  # 1 -> 2 bundles


def test_from_zero_traffic_any_traffic_writes():
    last = broker("b1")
    current = broker("b1", last_update=NOW, bundles={"t/ns/a": bundle_stats(msg_rate_in=0.001)})
    decision = need_broker_data_update(last, current, NOW)
    assert decision.reason == "threshold" and decision.max_change == math.inf
    # zero to zero is no change at all
    assert need_broker_data_update(broker("b1"), broker("b1", last_update=NOW), NOW).max_change == 0.0


def test_force():
    last, current = pair()
    decision = need_broker_data_update(last, current, NOW, force=True)
    assert decision and decision.reason == "forced"
    # other reasons are reported first, as Pulsar evaluates them first
    assert need_broker_data_update(*pair(cpu=90), NOW, force=True).reason == "threshold"


def test_last_write_override():
    last, current = pair()
    assert need_broker_data_update(last, current, NOW, last_write_ms=0).reason == "max-interval"


def test_broker_load_data_variant_uses_reported_at_and_bundle_count():
    last = broker_load(cpu=50, msg_rate_in=100, msg_throughput_in=1000, bundle_count=4)
    last.reported_at = NOW - MIN
    current = broker_load(cpu=50, msg_rate_in=100, msg_throughput_in=1000, bundle_count=4, now_ms=NOW)
    assert not need_broker_data_update(last, current, NOW)
    current = broker_load(cpu=50, msg_rate_in=100, msg_throughput_in=1000, bundle_count=5, now_ms=NOW)
    assert need_broker_data_update(last, current, NOW).max_change == 25.0
    last.reported_at = NOW - 16 * MIN
    assert need_broker_data_update(last, current, NOW).reason == "max-interval"


def test_mixed_or_bad_arguments_rejected():
    with pytest.raises(InvalidLoadDataError):
        need_broker_data_update(LocalBrokerData(), BrokerLoadData(), NOW)  # type: ignore[arg-type]
    with pytest.raises(InvalidLoadDataError):
        need_broker_data_update(LocalBrokerData(), LocalBrokerData(), NOW, threshold_percentage=math.nan)
    with pytest.raises(InvalidLoadDataError):
        need_broker_data_update(LocalBrokerData(), LocalBrokerData(), -1)
