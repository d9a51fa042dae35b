"""The in-process replay: Pulsar's leader semantics (every report re-folds every broker's latest stats)."""

from __future__ import annotations

import pytest

from brokerlb.errors import InvalidInputError
from brokerlb.history import BrokerSample, replay_load_data
from brokerlb.model import BundleData, LocalBrokerData, NamespaceBundleStats
from tests.history_data import broker_samples

A, B = "t/ns/0x00000000_0x80000000", "t/ns/0x80000000_0xffffffff"


def report(**rates: float) -> LocalBrokerData:
    data = LocalBrokerData()
    data.last_stats = {name: NamespaceBundleStats(msg_rate_in=rate, topics=1) for name, rate in rates.items()}
    return data


def test_leader_cycles_refold_every_brokers_latest_report():
    samples = [
        BrokerSample(1, "b1", report(**{A: 10.0})),
        BrokerSample(2, "b2", report(**{B: 40.0})),
        BrokerSample(3, "b1", report(**{A: 20.0})),
    ]
    leader = replay_load_data(samples)
    # A folded at cycles 0 (10), 1 (10, b1's report is still the latest) and 2 (20): mean of 3
    assert leader.bundle_data[A].short_term_data.msg_rate_in == pytest.approx(40 / 3)
    assert leader.bundle_data[A].short_term_data.num_samples == 3
    assert leader.bundle_data[B].short_term_data.num_samples == 2
    per_report = replay_load_data(samples, cycles="report")
    assert per_report.bundle_data[A].short_term_data.msg_rate_in == 15.0
    assert per_report.bundle_data[A].short_term_data.num_samples == 2
    assert per_report.bundle_data[B].short_term_data.num_samples == 1
    assert leader.time_average_data["b2"].short_term_msg_rate_in == 40.0
    assert [(h.cycle, h.broker_id, h.bundle) for h in leader.bundle_history] == [
        (0, "b1", A),
        (1, "b2", B),
        (2, "b1", A),
    ]


def test_removal_stops_folding_and_drops_the_broker():
    samples = [
        BrokerSample(1, "b1", report(**{A: 10.0})),
        BrokerSample(2, "b1", None),
        BrokerSample(3, "b2", report(**{B: 1.0})),
    ]
    result = replay_load_data(samples)
    assert result.bundle_data[A].short_term_data.num_samples == 1
    assert set(result.time_average_data) == {"b2"} and set(result.latest_reports) == {"b2"}
    assert result.cycles == 3


def test_report_mode_equals_folding_each_report_with_the_model():
    samples = broker_samples(7, cycles=150)
    expected: dict[str, BundleData] = {}
    seen = set()
    for s in sorted(samples, key=lambda s: (s.timestamp, s.broker_id)):
        if (s.timestamp, s.broker_id) in seen or s.local_data is None:
            seen.add((s.timestamp, s.broker_id))
            continue
        seen.add((s.timestamp, s.broker_id))
        for bundle, stats in s.local_data.last_stats.items():
            expected.setdefault(bundle, BundleData.new_default()).update(stats)
    assert replay_load_data(samples, cycles="report").bundle_data == expected


def test_unknown_mode():
    with pytest.raises(InvalidInputError, match="cycle mode"):
        replay_load_data([], cycles="hourly")
