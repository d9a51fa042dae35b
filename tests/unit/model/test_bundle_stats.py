"""NamespaceBundleStats: defaults, validation, JSON and Pulsar's ordering with resolutions."""

import math
from functools import cmp_to_key

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokerlb.errors import InvalidLoadDataError
from brokerlb.model import NamespaceBundleStats, bundle_namespace, compare_with_thresholds
from brokerlb.model.bundle_stats import java_round

S = NamespaceBundleStats


def test_defaults_and_new_default():
    assert S().to_json() == {
        "msgRateIn": 0.0,
        "msgThroughputIn": 0.0,
        "msgRateOut": 0.0,
        "msgThroughputOut": 0.0,
        "consumerCount": 0,
        "producerCount": 0,
        "topics": 0,
        "cacheSize": 0,
    }
    d = S.new_default()
    assert (d.msg_rate_in, d.msg_rate_out, d.msg_throughput_in, d.msg_throughput_out) == (
        50,
        50,
        50000,
        50000,
    )
    assert d.topics == 0 and d.total_msg_rate() == 100.0 and d.total_msg_throughput() == 100000.0


def test_json_keys_in_pulsar_order_and_round_trip():
    s = S(1.5, 2.5, 3.5, 4.5, consumer_count=2, producer_count=3, topics=4, cache_size=5)
    doc = s.to_json()
    assert list(doc) == list(_JSON_KEYS)
    assert S.from_json(doc) == s
    assert S.from_json({"topics": 2.0, "unknown": [1]}) == S(topics=2)  # integral float accepted


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"msg_rate_in": math.nan}, "msgRateIn"),
        ({"msg_throughput_out": math.inf}, "msgThroughputOut"),
        ({"msg_rate_out": -1.0}, "msgRateOut"),
        ({"consumer_count": -1}, "consumerCount"),
        ({"producer_count": 1.5}, "producerCount"),
        ({"topics": "3"}, "topics"),
        ({"cache_size": True}, "cacheSize"),
        ({"msg_throughput_in": None}, "msgThroughputIn"),
    ],
)
def test_validation(kwargs, field):
    with pytest.raises(InvalidLoadDataError) as err:
        S(**kwargs)
    assert err.value.field == field


def test_json_validation_names_the_path():
    with pytest.raises(InvalidLoadDataError) as err:
        S.from_json({"msgRateIn": "NaN"}, "lastStats[t/ns/0x00000000_0xffffffff]")
    assert err.value.field == "lastStats[t/ns/0x00000000_0xffffffff].msgRateIn"


def test_negative_zero_normalised():
    assert math.copysign(1.0, S(msg_rate_in=-0.0).msg_rate_in) == 1.0


def test_java_round_is_half_up():
    assert [java_round(x) for x in (0.5, 1.5, 2.5, -0.5, 1.4999)] == [1, 2, 3, 0, 1]


# ---------------------------------------------------------------- ordering


def test_order_of_criteria():
    # bandwidth in decides first, even against larger values later in the chain
    assert S(msg_throughput_in=300_000).compare_to(S(msg_throughput_out=1e9, msg_rate_in=1e6)) == 1
    # then bandwidth out
    assert S(msg_throughput_out=300_000).compare_to(S(msg_rate_in=1e6, topics=10_000)) == 1
    # then total msg rate (in + out)
    assert S(msg_rate_in=150, msg_rate_out=150).compare_to(S(msg_rate_in=100, topics=10_000)) == 1
    # then topics + producers + consumers
    assert S(topics=400, consumer_count=300, producer_count=300).compare_to(S(cache_size=10**9)) == 1
    # then cache size
    assert S(cache_size=300_000).compare_to(S()) == 1
    assert S().compare_to(S(cache_size=300_000)) == -1


@pytest.mark.parametrize(
    "a, b, expected",
    [
        # throughput resolution 1e5, Math.round: 149_999 -> 1, 150_000 -> 2
        (S(msg_throughput_in=149_999), S(msg_throughput_in=50_000), 0),
        (S(msg_throughput_in=150_000), S(msg_throughput_in=149_999), 1),
        (S(msg_throughput_out=49_999), S(), 0),
        (S(msg_throughput_out=50_000), S(), 1),
        # msg rate resolution 100 on in + out: 49.9 -> 0, 50 -> 1
        (S(msg_rate_in=25, msg_rate_out=24.9), S(), 0),
        (S(msg_rate_in=25, msg_rate_out=25), S(), 1),
        # topics+connections resolution 500, integer division
        (S(topics=499), S(), 0),
        (S(topics=250, consumer_count=250), S(), 1),
        # cache size resolution 100_000, integer division
        (S(cache_size=99_999), S(), 0),
        (S(cache_size=100_000), S(), 1),
    ],
)
def test_resolution_ties(a, b, expected):
    assert a.compare_to(b) == expected
    assert b.compare_to(a) == -expected


def test_legacy_threshold_comparator_is_not_transitive():
    a, b, c = S(msg_throughput_in=0), S(msg_throughput_in=60_000), S(msg_throughput_in=120_000)
    assert compare_with_thresholds(a, b) == 0
    assert compare_with_thresholds(b, c) == 0
    assert compare_with_thresholds(a, c) == -1  # so "equal" is not transitive
    # the current (quantised) ordering is consistent
    assert a.compare_to(b) == -1 and b.compare_to(c) == 0 and a.compare_to(c) == -1


def test_legacy_threshold_edges():
    assert compare_with_thresholds(S(msg_rate_in=100), S()) == 0  # |diff| == resolution: equal
    assert compare_with_thresholds(S(msg_rate_in=100.5), S()) == 1
    assert compare_with_thresholds(S(), S(topics=501)) == -1


stats = st.builds(
    S,
    msg_rate_in=st.floats(0, 1e6),
    msg_throughput_in=st.floats(0, 1e9),
    msg_rate_out=st.floats(0, 1e6),
    msg_throughput_out=st.floats(0, 1e9),
    consumer_count=st.integers(0, 5000),
    producer_count=st.integers(0, 5000),
    topics=st.integers(0, 5000),
    cache_size=st.integers(0, 10**9),
)


@given(stats, stats)
def test_sort_key_agrees_with_compare_to(a, b):
    ka, kb = a.sort_key(), b.sort_key()
    assert a.compare_to(b) == (ka > kb) - (ka < kb)
    assert a.compare_to(b) == -b.compare_to(a)


@given(st.lists(stats, max_size=12))
def test_sorting_by_key_equals_sorting_by_comparator(items):
    by_key = [s.sort_key() for s in sorted(items, key=S.sort_key)]
    by_cmp = [s.sort_key() for s in sorted(items, key=cmp_to_key(S.compare_to))]
    assert by_key == by_cmp


@given(stats)
def test_json_round_trip(s):
    assert S.from_json(s.to_json()) == s


def test_bundle_namespace():
    assert bundle_namespace("pulsar/system/0x00000000_0xffffffff") == "pulsar/system"
    assert bundle_namespace("pulsar/use/broker:8080/0x00000000_0xffffffff") == "pulsar/use/broker:8080"


_JSON_KEYS = (
    "msgRateIn",
    "msgThroughputIn",
    "msgRateOut",
    "msgThroughputOut",
    "consumerCount",
    "producerCount",
    "topics",
    "cacheSize",
)
_ANY_JSON_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 2.0, 2.5, "NaN", "1"]),
)


def _read_or_error(read, data):
    try:
        return read(data)
    except InvalidLoadDataError as exc:
        return ("error", str(exc))


@given(st.dictionaries(st.sampled_from(_JSON_KEYS), _ANY_JSON_VALUE))
def test_the_plain_fast_reader_agrees_with_the_checked_reader(data):
    """The leader reads every sample of every report through a fast path for plain values; it
    must accept exactly what the checked reader accepts and give the same values (or defer)."""
    from brokerlb.model.bundle_stats import _read_plain

    checked = _read_or_error(lambda d: NamespaceBundleStats._read_checked(d, "s"), data)
    fast = _read_plain(data)
    if fast is not None:
        assert fast == checked
        assert all(math.copysign(1.0, getattr(fast, f)) == 1.0 for f in ("msg_rate_in", "msg_rate_out"))
    assert _read_or_error(lambda d: NamespaceBundleStats.from_json(d, "s"), data) == checked


def test_a_stats_map_names_the_bad_entry():
    from brokerlb.model.bundle_stats import stats_map_from_json

    good = {"msgRateIn": 1.0}
    assert stats_map_from_json({"t/ns/0x0_0x1": good}, "lastStats")["t/ns/0x0_0x1"].msg_rate_in == 1.0
    assert stats_map_from_json(None, "lastStats") == {}
    with pytest.raises(InvalidLoadDataError, match=r"lastStats\[t/ns/0x0_0x1\]\.topics"):
        stats_map_from_json({"t/ns/0x0_0x1": {"topics": -1}}, "lastStats")
    with pytest.raises(InvalidLoadDataError, match="expected a JSON object"):
        stats_map_from_json([good], "lastStats")
