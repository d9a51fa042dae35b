"""BundleStatsColumns: a report's lastStats as arrays -- the same map, validated, read-only,
and a LocalBrokerData holding it reads as one holding the dict of samples."""

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokerlb.errors import InvalidLoadDataError
from brokerlb.model import BundleStatsColumns, LocalBrokerData, NamespaceBundleStats, SystemResourceUsage

NAMES = ("t/ns/0x00000000_0x40000000", "t/ns/0x40000000_0x80000000", "t/ns/0x80000000_0xffffffff")


def sample(i, scale=1.0):
    return NamespaceBundleStats(
        msg_rate_in=10.0 * i * scale,
        msg_throughput_in=1000.0 * i * scale + 0.1,
        msg_rate_out=20.0 * i * scale,
        msg_throughput_out=3000.0 * i * scale,
        consumer_count=i,
        producer_count=2 * i,
        topics=i + 1,
        cache_size=7 * i,
    )


def as_dict():
    return {name: sample(i + 1) for i, name in enumerate(NAMES)}


def test_the_columns_are_the_same_map_as_the_samples():
    samples = as_dict()
    columns = BundleStatsColumns.of(samples)
    assert list(columns) == list(NAMES) and len(columns) == 3
    assert columns == samples and dict(columns.items()) == samples
    assert NAMES[1] in columns and "t/ns/other" not in columns and 5 not in columns
    assert columns[NAMES[2]] == samples[NAMES[2]]
    with pytest.raises(KeyError):
        columns["t/ns/other"]
    rebuilt = BundleStatsColumns(columns.names, columns.rates, columns.counts)  # samples made from arrays
    assert rebuilt == samples and rebuilt[NAMES[0]].cache_size == samples[NAMES[0]].cache_size
    assert pickle.loads(pickle.dumps(rebuilt)) == samples
    assert "BundleStatsColumns" in repr(rebuilt)
    empty = BundleStatsColumns((), np.zeros((4, 0)), np.zeros((4, 0), np.int64))
    assert empty == {} and empty.totals() == (0.0, 0.0, 0.0, 0.0, 0, 0, 0)


def test_read_only():
    columns = BundleStatsColumns.of(as_dict())
    with pytest.raises(ValueError):
        columns.rates[0, 0] = 5.0
    with pytest.raises(TypeError):
        columns["x"] = sample(1)  # type: ignore[index]


@pytest.mark.parametrize(
    ("row", "value", "field", "why"),
    [
        (2, float("nan"), "msgRateIn", "not a finite number"),
        (0, float("inf"), "msgThroughputIn", "not a finite number"),
        (3, -1.0, "msgRateOut", "must not be negative"),
    ],
)
def test_bad_rates_are_named(row, value, field, why):
    rates = np.ones((4, 3))
    rates[row, 1] = value
    with pytest.raises(InvalidLoadDataError, match=rf"lastStats\[{NAMES[1]}\]\.{field}.*{why}"):
        BundleStatsColumns(NAMES, rates, np.ones((4, 3), np.int64))


def test_bad_counts_and_names_are_named():
    with pytest.raises(InvalidLoadDataError, match=rf"lastStats\[{NAMES[2]}\]\.consumerCount"):
        BundleStatsColumns(NAMES, np.ones((4, 3)), [[1, 1, 1], [1, 1, -2], [0, 0, 0], [0, 0, 0]])
    with pytest.raises(InvalidLoadDataError, match="counts must be integers"):
        BundleStatsColumns(NAMES, np.ones((4, 3)), np.full((4, 3), 1.5))
    with pytest.raises(InvalidLoadDataError, match="distinct strings"):
        BundleStatsColumns((NAMES[0], NAMES[0], NAMES[1]), np.ones((4, 3)), np.ones((4, 3), np.int64))
    with pytest.raises(InvalidLoadDataError, match="distinct strings"):
        BundleStatsColumns((NAMES[0], 7, NAMES[1]), np.ones((4, 3)), np.ones((4, 3), np.int64))


def test_negative_zero_reads_as_zero():
    rates = np.ones((4, 3))
    rates[1, 0] = -0.0
    columns = BundleStatsColumns(NAMES, rates, np.ones((4, 3), np.int64))
    assert str(columns[NAMES[0]].msg_throughput_out) == "0.0"


finite = st.floats(min_value=0.0, max_value=1e12, allow_nan=False, allow_infinity=False)


@given(st.lists(st.tuples(finite, finite, finite, finite, st.integers(0, 10**6)), max_size=40))
def test_a_report_updated_with_columns_equals_one_updated_with_the_samples(values):
    names = [f"t/ns/0x{i:08x}_0x{i + 1:08x}" for i in range(len(values))]
    samples = {
        name: NamespaceBundleStats(
            msg_throughput_in=a,
            msg_throughput_out=b,
            msg_rate_in=c,
            msg_rate_out=d,
            topics=k,
            consumer_count=k,
        )
        for name, (a, b, c, d, k) in zip(names, values, strict=True)
    }
    plain, columnar = LocalBrokerData(bundles={"t/ns/gone"}), LocalBrokerData(bundles={"t/ns/gone"})
    plain.update(SystemResourceUsage(), samples)
    columnar.update(SystemResourceUsage(), BundleStatsColumns.of(samples))
    # totals added in report order from 0.0, bit for bit (a running sum, not a pairwise one)
    assert plain == columnar
    assert isinstance(columnar.last_stats, BundleStatsColumns)
    clone = columnar.copy()
    assert clone == columnar and clone.last_stats is columnar.last_stats  # read-only: shared


def test_from_arrays_totals_are_sequential_sums():
    rates = np.array([[1e16, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1e16 + 2e16]] * 4)
    names = [f"b/{i}" for i in range(rates.shape[1])]
    columns = BundleStatsColumns(names, rates, np.ones((4, len(names)), np.int64))
    expected = 0.0
    for value in rates[0].tolist():
        expected += value
    assert columns.totals()[0] == expected and columns.totals()[4:] == (11, 11, 11)


def test_json_is_read_into_columns_with_the_sample_readers_rules():
    from brokerlb.model.bundle_stats import stats_map_from_json
    from brokerlb.model.stats_columns import stats_columns_from_json

    document = {
        NAMES[0]: {"msgRateIn": 1.5, "msgThroughputIn": 10.0, "consumerCount": 2, "topics": 3},
        NAMES[1]: {"msgRateIn": 2, "msgRateOut": -0.0, "producerCount": 1.0, "unknown": "x"},  # checked path
        NAMES[2]: {},
    }
    columns = stats_columns_from_json(document, "lastStats")
    assert isinstance(columns, BundleStatsColumns)
    assert columns == stats_map_from_json(document, "lastStats")
    assert columns[NAMES[1]].producer_count == 1 and str(columns[NAMES[1]].msg_rate_out) == "0.0"
    assert stats_columns_from_json(None, "lastStats") == {}
    for bad, field in (
        ({NAMES[0]: {"msgRateIn": "NaN"}}, rf"lastStats\[{NAMES[0]}\]\.msgRateIn"),
        ({NAMES[0]: {"topics": -1}}, rf"lastStats\[{NAMES[0]}\]\.topics"),
        ({NAMES[0]: {"consumerCount": 2.5}}, rf"lastStats\[{NAMES[0]}\]\.consumerCount"),
        ({NAMES[0]: {"cacheSize": 2**70}}, "count out of range"),
        ([1, 2], "expected a JSON object"),
        ({3: {}}, "keys must be strings"),
    ):
        with pytest.raises(InvalidLoadDataError, match=field):
            stats_columns_from_json(bad, "lastStats")


def test_a_report_read_from_json_holds_columns():
    data = LocalBrokerData()
    data.update(SystemResourceUsage(), as_dict())
    read = LocalBrokerData.from_json(data.to_json())
    assert isinstance(read.last_stats, BundleStatsColumns) and read == data


def test_columns_of_checked_values_equal_checked_columns() -> None:
    names = ["t/ns/0x00000000_0x80000000", "t/ns/0x80000000_0xffffffff"]
    rates = np.array([[1000.0, -0.0], [2000.0, 0.0], [10.0, 0.0], [20.0, 0.5]])
    counts = np.array([[3, 0], [1, 0], [1, 0], [0, 0]], dtype=np.int64)
    checked = BundleStatsColumns(names, rates.copy(), counts.copy())
    trusted = BundleStatsColumns.of_checked(names, rates.copy(), counts.copy())
    assert trusted.names == checked.names and dict(trusted) == dict(checked)
    assert np.array_equal(trusted.rates, checked.rates) and np.array_equal(trusted.counts, checked.counts)
    assert not np.signbit(trusted.rates).any()  # -0.0 read as 0.0
    assert not trusted.rates.flags.writeable and not trusted.counts.flags.writeable
    assert trusted.totals() == checked.totals()
    # counts that are not int64 are checked the usual way (and refused)
    with pytest.raises(InvalidLoadDataError):
        BundleStatsColumns.of_checked(names, rates.copy(), counts.astype(float))
