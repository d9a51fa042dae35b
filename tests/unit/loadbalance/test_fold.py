"""The vectorised refresh fold agrees bit for bit with the model's scalar arithmetic."""

import random

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance.refresh import LeaderLoadState, bundle_data_or_default, refresh
from brokerlb.loadbalance.split.bundle_splitter_task import find_bundles_to_split_modular
from brokerlb.model import BundleData, NamespaceBundleStats, TimeAverageBrokerData
from brokerlb.testing import broker

BUNDLES = [f"t/ns{i % 3}/0x{i:08x}_0x{i + 1:08x}" for i in range(12)]
DEFAULT = NamespaceBundleStats.new_default()


def _sample(rng: random.Random) -> NamespaceBundleStats:
    return NamespaceBundleStats(
        msg_rate_in=rng.uniform(0, 4e4),
        msg_rate_out=rng.uniform(0, 1e4),
        msg_throughput_in=rng.uniform(0, 1e8),
        msg_throughput_out=rng.uniform(0, 1e8),
        topics=rng.randint(0, 3),
        consumer_count=rng.randint(0, 5),
        producer_count=rng.randint(0, 5),
    )


def _reference(
    reports: dict[str, dict[str, NamespaceBundleStats]], histories: dict[str, BundleData]
) -> dict[str, TimeAverageBrokerData]:
    """Pulsar's updateBundleData, one broker after the other, on the model objects."""
    averages = {}
    for name, stats_map in reports.items():
        for bundle, sample in stats_map.items():
            histories.setdefault(bundle, bundle_data_or_default(bundle)).update(sample)
        averages[name] = TimeAverageBrokerData.of(stats_map, histories, DEFAULT)
    return averages


def test_refresh_matches_the_scalar_model_with_stale_duplicate_reports() -> None:
    """Brokers keep stale reports (the same bundle in two or three reports, the same report
    object across refreshes), bundles come and go, histories are dropped (as after a split)."""
    rng = random.Random(11)
    state = LeaderLoadState()
    reference: dict[str, BundleData] = {}
    reports: dict[str, dict[str, NamespaceBundleStats]] = {}
    objects = {}
    for step in range(1300):  # past both window sizes
        for name in ("b1", "b2", "b3"):
            if name not in reports or rng.random() < 0.3:  # a new report; the others stay as they were
                if name in reports and rng.random() < 0.5:  # the same bundles, new samples
                    reports[name] = {b: _sample(rng) for b in reports[name]}
                else:
                    reports[name] = {b: _sample(rng) for b in rng.sample(BUNDLES, rng.randint(0, 6))}
                objects[name] = broker(name, bundles=reports[name])
        if rng.random() < 0.05:  # the leader forgets a history (split parent): both start again
            gone = rng.choice(BUNDLES)
            state.load_data.bundle_data.pop(gone, None)
            reference.pop(gone, None)
        expected = _reference(reports, reference)
        refresh(state, dict(objects))
        assert state.load_data.bundle_data == reference, step
        for name in reports:
            assert state.load_data.broker_data[name].time_average_data == expected[name], (step, name)


def test_a_history_with_other_window_sizes_and_the_summary() -> None:
    odd = BundleData.with_defaults(3, 7, DEFAULT)
    twin = odd.copy()
    a, b = "t/a/0x00000000_0x00000010", "t/a/0x00000010_0x00000020"
    stats = {
        a: NamespaceBundleStats(msg_rate_in=5.0, topics=4, consumer_count=2),
        b: NamespaceBundleStats(msg_rate_out=9.0),
    }
    other = {a: NamespaceBundleStats(msg_rate_in=7.0, producer_count=1)}
    state = LeaderLoadState()
    state.load_data.bundle_data[a] = odd
    state.load_data.bundle_data[b] = BundleData.new_default()
    reports = {"b1": broker("b1", bundles=stats), "b2": broker("b2", bundles=other)}
    refresh(state, reports)
    twin.update(stats[a])
    twin.update(other[a])
    assert odd == twin and twin == odd and odd.topics == 0  # the last report's topic count
    assert repr(odd) == repr(twin) and odd.copy() == twin
    summary = state.fold_summary
    assert summary is not None
    assert list(summary.topics) == [4, 0, 0] and list(summary.sessions) == [2, 0, 1]
    assert summary.long_term_rate[0] == summary.long_term_rate[2] == 6.0
    data = state.load_data.bundle_data
    assert summary.describes(list(reports.values()), data)
    assert not summary.describes([reports["b1"]], data)
    odd.long_term_data.msg_rate_in = 1.0  # a history changed behind the refresh's back
    assert not summary.describes(list(reports.values()), data)
    refresh(state, reports)
    assert state.fold_summary.describes(list(reports.values()), data)
    data.pop(b)
    assert not state.fold_summary.describes(list(reports.values()), data)


def test_the_split_prefilter_gives_the_same_decisions() -> None:
    rng = random.Random(5)
    conf = ServiceConfig.from_mapping(
        {
            "loadBalancerNamespaceBundleMaxMsgRate": "20000",
            "loadBalancerNamespaceBundleMaxSessions": "8",
            "loadBalancerNamespaceBundleMaxTopics": "2",
        }
    )
    state = LeaderLoadState()
    for _ in range(30):
        reports = {
            name: broker(name, bundles={b: _sample(rng) for b in rng.sample(BUNDLES, 8)})
            for name in ("b1", "b2")
        }
        refresh(state, reports)
        assert state.fold_summary is not None
        args = ({n: r for n, r in reports.items()}, state.load_data.bundle_data, lambda ns: 4, conf)
        assert state.fold_summary.describes(list(reports.values()), state.load_data.bundle_data)
        fast = find_bundles_to_split_modular(*args, state.fold_summary)
        assert fast == find_bundles_to_split_modular(*args) and fast


def test_a_column_window_reads_copies_and_pickles_as_a_plain_window() -> None:
    import copy
    import pickle

    from brokerlb.loadbalance.windows import WindowTable
    from brokerlb.model import TimeAverageMessageData

    plain = TimeAverageMessageData(max_samples=4, num_samples=2, msg_rate_in=3.5, msg_throughput_out=7.0)
    table = WindowTable(capacity=1)
    (view,) = table.adopt_all([plain])
    table.adopt_all([plain])  # the table grows
    assert view == plain and plain == view and repr(view) == repr(plain)
    assert type(copy.deepcopy(view)) is TimeAverageMessageData and pickle.loads(pickle.dumps(view)) == plain
    version = table.version
    view.update_values(1.0, 2.0, 3.0, 4.0)
    plain.update_values(1.0, 2.0, 3.0, 4.0)
    assert view == plain and view.to_json() == plain.to_json() and table.version > version
    assert isinstance(view.num_samples, int) and isinstance(view.msg_rate_in, float)
    many = table.adopt_all([plain] * 5)  # grows past twice the capacity in one batch
    assert all(v == plain for v in many) and view == plain and table.size == 7
