"""TimeAverageMessageData, BundleData, ResourceQuota and TimeAverageBrokerData."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokerlb.errors import InvalidLoadDataError
from brokerlb.model import (
    NUM_LONG_SAMPLES,
    NUM_SHORT_SAMPLES,
    BundleData,
    NamespaceBundleStats,
    ResourceQuota,
    TimeAverageBrokerData,
    TimeAverageMessageData,
)


def sample(rate_in=0.0, rate_out=0.0, tput_in=0.0, tput_out=0.0, topics=0):
    return NamespaceBundleStats(
        msg_rate_in=rate_in,
        msg_rate_out=rate_out,
        msg_throughput_in=tput_in,
        msg_throughput_out=tput_out,
        topics=topics,
    )


# ---------------------------------------------------------------- capped running average, by hand


def test_first_sample_overwrites_the_default():
    w = TimeAverageMessageData.with_defaults(10, NamespaceBundleStats.new_default())
    assert (w.num_samples, w.msg_rate_in, w.msg_throughput_out) == (0, 50.0, 50000.0)
    w.update(sample(rate_in=7.0, tput_out=3.0))
    # n = min(0 + 1, 10) = 1: ((1 - 1) * 50 + 7) / 1 = 7
    assert (w.num_samples, w.msg_rate_in, w.msg_throughput_out, w.msg_rate_out) == (1, 7.0, 3.0, 0.0)


def test_plain_mean_until_capped_then_ema_with_weight_one_over_max():
    w = TimeAverageMessageData(max_samples=3)
    # samples 30, 60, 90: means 30, 45, 60 (n = 1, 2, 3)
    for x, mean in ((30.0, 30.0), (60.0, 45.0), (90.0, 60.0)):
        w.update_values(0.0, 0.0, x, 0.0)
        assert w.msg_rate_in == mean
    assert w.num_samples == 3
    # capped: n stays 3, avg = (2 * 60 + 0) / 3 = 40 -> old*(1 - 1/3) + new*(1/3)
    w.update_values(0.0, 0.0, 0.0, 0.0)
    assert w.num_samples == 3
    assert w.msg_rate_in == 40.0
    w.update_values(0.0, 0.0, 120.0, 0.0)
    assert w.msg_rate_in == pytest.approx(40.0 * 2 / 3 + 120.0 / 3)


def test_all_four_values_updated_with_the_same_count():
    w = TimeAverageMessageData(2, 2, 10.0, 20.0, 30.0, 40.0)
    w.update(sample(rate_in=0.0, rate_out=0.0, tput_in=0.0, tput_out=0.0))
    assert (w.msg_throughput_in, w.msg_throughput_out, w.msg_rate_in, w.msg_rate_out) == (
        5.0,
        10.0,
        15.0,
        20.0,
    )
    assert w.total_msg_rate() == 35.0 and w.total_msg_throughput() == 15.0


def test_java_double_arithmetic_bit_for_bit():
    # ((n-1) * avg + x) / n in IEEE doubles, the same operations Java performs
    w = TimeAverageMessageData(1000)
    avg = 0.0
    for i, x in enumerate([0.1, 0.2, 0.3, 1e9, 3.3333], start=1):
        w.update_values(x, 0.0, 0.0, 0.0)
        avg = ((i - 1) * avg + x) / i
        assert w.msg_throughput_in == avg


def test_nan_sample_cannot_poison_the_average():
    w = TimeAverageMessageData(10, 4, 100.0, 100.0, 10.0, 10.0)
    before = w.to_json()
    with pytest.raises(InvalidLoadDataError) as err:
        w.update_values(math.nan, 0.0, 0.0, 0.0)
    assert err.value.field == "msgThroughputIn"
    with pytest.raises(InvalidLoadDataError):
        w.update(sample(rate_in=math.nan))  # the sample itself cannot even be built
    with pytest.raises(InvalidLoadDataError):
        w.update_values(0.0, 0.0, -5.0, 0.0)
    assert w.to_json() == before


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"max_samples": 0}, "maxSamples"),  # Pulsar would compute 0/0 = NaN
        ({"max_samples": -1}, "maxSamples"),
        ({"max_samples": 2, "num_samples": -1}, "numSamples"),
        ({"max_samples": 2, "msg_rate_in": math.inf}, "msgRateIn"),
        ({"max_samples": 2.5}, "maxSamples"),
    ],
)
def test_window_validation(kwargs, field):
    with pytest.raises(InvalidLoadDataError) as err:
        TimeAverageMessageData(**kwargs)
    assert err.value.field == field


def test_window_json():
    w = TimeAverageMessageData(10, 3, 1.0, 2.0, 3.0, 4.0)
    doc = w.to_json()
    assert doc == {
        "maxSamples": 10,
        "numSamples": 3,
        "msgThroughputIn": 1.0,
        "msgThroughputOut": 2.0,
        "msgRateIn": 3.0,
        "msgRateOut": 4.0,
    }
    assert TimeAverageMessageData.from_json(doc) == w
    with pytest.raises(InvalidLoadDataError) as err:
        TimeAverageMessageData.from_json({"numSamples": 1}, "shortTermData")  # maxSamples missing -> 0
    assert err.value.field == "shortTermData.maxSamples"


def test_more_samples_than_the_window_holds_is_pulsars_full_window():
    # Pulsar rule: TimeAverageMessageData takes any numSamples (its setter, its tests); update()
    # computes min(numSamples + 1, maxSamples), so such a window is full and the count is capped
    # by the next sample: (1 * 10 + 40) / 2 = 25 with 2 samples
    w = TimeAverageMessageData.from_json({"maxSamples": 2, "numSamples": 5, "msgRateIn": 10.0}, "x")
    assert (w.num_samples, w.max_samples) == (5, 2) and w.to_json()["numSamples"] == 5
    w.update_values(0.0, 0.0, 40.0, 0.0)
    assert (w.num_samples, w.msg_rate_in) == (2, 25.0)


def test_window_ordering_truncates_like_compare_util():
    def w(tin=0.0, tout=0.0, rin=0.0):
        return TimeAverageMessageData(10, 1, tin, tout, rin, 0.0)

    assert w(tin=199_999).compare_to(w(tin=100_000)) == 0  # both (long) 1
    assert w(tin=200_000).compare_to(w(tin=199_999)) == 1
    assert w(tout=99_999).compare_to(w()) == 0
    assert w(rin=199.9).compare_to(w(rin=100)) == 0
    assert w(rin=200).compare_to(w(rin=199.9)) == 1
    assert w(tin=100_000).compare_to(w(tout=10**9)) == 1  # throughput in decides first


# ---------------------------------------------------------------- BundleData


def test_bundle_data_new_default():
    b = BundleData.new_default()
    for window, size in ((b.short_term_data, NUM_SHORT_SAMPLES), (b.long_term_data, NUM_LONG_SAMPLES)):
        assert (window.max_samples, window.num_samples) == (size, 0)
        assert (window.msg_rate_in, window.msg_rate_out) == (50.0, 50.0)
        assert (window.msg_throughput_in, window.msg_throughput_out) == (50000.0, 50000.0)
    assert b.topics == 0
    assert (NUM_SHORT_SAMPLES, NUM_LONG_SAMPLES) == (10, 1000)


def test_bundle_data_update_feeds_both_windows_and_topics():
    b = BundleData.new_default()
    b.update(sample(rate_in=10.0, tput_in=1000.0, topics=7))
    b.update(sample(rate_in=20.0, tput_in=3000.0, topics=3))
    assert b.short_term_data.msg_rate_in == 15.0 and b.long_term_data.msg_rate_in == 15.0
    assert b.short_term_data.msg_throughput_in == 2000.0
    assert b.topics == 3  # the latest sample's count
    assert b.short_term_data.num_samples == 2 and b.long_term_data.num_samples == 2


def test_short_window_forgets_faster_than_long():
    b = BundleData()
    for _ in range(20):
        b.update(sample(rate_in=100.0))
    for _ in range(10):
        b.update(sample(rate_in=0.0))
    assert b.short_term_data.msg_rate_in < b.long_term_data.msg_rate_in
    assert b.short_term_data.num_samples == 10 and b.long_term_data.num_samples == 30


def test_bundle_data_from_legacy_resource_quota():
    quota = ResourceQuota.from_json(
        {
            "msgRateIn": 40.0,
            "msgRateOut": 120.0,
            "bandwidthIn": 100000.0,
            "bandwidthOut": 300000.0,
            "memory": 80.0,
        }
    )
    assert quota.dynamic is True
    b = BundleData.from_resource_quota(quota)
    for window, size in ((b.short_term_data, 10), (b.long_term_data, 1000)):
        assert window.num_samples == window.max_samples == size  # "ample history"
        assert (window.msg_rate_in, window.msg_rate_out) == (40.0, 120.0)
        assert (window.msg_throughput_in, window.msg_throughput_out) == (100000.0, 300000.0)
    # with full history, one new sample moves the short window by 1/10 only
    b.update(sample(rate_in=140.0))
    assert b.short_term_data.msg_rate_in == pytest.approx(50.0)
    assert ResourceQuota.from_json(quota.to_json()) == quota
    with pytest.raises(InvalidLoadDataError) as err:
        ResourceQuota.from_json({"bandwidthIn": -1})
    assert err.value.field == "bandwidthIn"


def test_bundle_data_json():
    b = BundleData.new_default()
    b.update(sample(rate_in=1.0, topics=2))
    doc = b.to_json()
    assert list(doc) == ["shortTermData", "longTermData", "topics"]
    assert BundleData.from_json(doc) == b
    empty = BundleData.from_json({})
    assert empty == BundleData() and empty.long_term_data.max_samples == 1000
    with pytest.raises(InvalidLoadDataError) as err:
        BundleData.from_json({"longTermData": {"maxSamples": 1000, "msgRateIn": "NaN"}})
    assert err.value.field == "longTermData.msgRateIn"


def test_bundle_data_copy_is_independent():
    b = BundleData.new_default()
    c = b.copy()
    c.update(sample(rate_in=1.0))
    assert b.short_term_data.msg_rate_in == 50.0 and c.short_term_data.msg_rate_in == 1.0


# ---------------------------------------------------------------- TimeAverageBrokerData


def test_time_average_broker_data_reset_with_defaults_for_unknown_bundles():
    known = BundleData(
        TimeAverageMessageData(10, 10, 1000.0, 2000.0, 10.0, 20.0),
        TimeAverageMessageData(1000, 1000, 3000.0, 4000.0, 30.0, 40.0),
    )
    data = TimeAverageBrokerData(short_term_msg_rate_in=999.0)  # stale values are zeroed
    data.reset(["t/ns/a", "t/ns/b"], {"t/ns/a": known}, NamespaceBundleStats.new_default())
    assert data.to_json() == {
        "shortTermMsgThroughputIn": 1000.0 + 50000.0,
        "shortTermMsgThroughputOut": 2000.0 + 50000.0,
        "shortTermMsgRateIn": 10.0 + 50.0,
        "shortTermMsgRateOut": 20.0 + 50.0,
        # the default counts in the long-term sums too
        "longTermMsgThroughputIn": 3000.0 + 50000.0,
        "longTermMsgThroughputOut": 4000.0 + 50000.0,
        "longTermMsgRateIn": 30.0 + 50.0,
        "longTermMsgRateOut": 40.0 + 50.0,
    }
    assert TimeAverageBrokerData.from_json(data.to_json()) == data
    assert TimeAverageBrokerData.of([], {}, NamespaceBundleStats.new_default()) == TimeAverageBrokerData()


def test_time_average_broker_data_validation():
    with pytest.raises(InvalidLoadDataError) as err:
        TimeAverageBrokerData.from_json({"longTermMsgRateOut": "Infinity"}, "x")
    assert err.value.field == "x.longTermMsgRateOut"


windows = st.integers(1, 2000).flatmap(
    lambda m: st.builds(
        TimeAverageMessageData,
        max_samples=st.just(m),
        num_samples=st.integers(0, m),
        msg_throughput_in=st.floats(0, 1e12),
        msg_throughput_out=st.floats(0, 1e12),
        msg_rate_in=st.floats(0, 1e9),
        msg_rate_out=st.floats(0, 1e9),
    )
)


@given(windows, windows, st.integers(0, 10**6))
def test_bundle_data_json_round_trip(short, long_, topics):
    b = BundleData(short, long_, topics)
    assert BundleData.from_json(b.to_json()) == b


@given(windows, st.lists(st.floats(0, 1e9), max_size=30))
def test_average_stays_within_bounds(window, xs):
    lo = min([window.msg_rate_in, *xs]) if window.num_samples else min(xs, default=window.msg_rate_in)
    hi = max([window.msg_rate_in, *xs]) if window.num_samples else max(xs, default=window.msg_rate_in)
    for x in xs:
        window.update_values(0.0, 0.0, x, 0.0)
        assert window.num_samples <= window.max_samples
    assert lo * (1 - 1e-12) <= window.msg_rate_in <= hi * (1 + 1e-12)
