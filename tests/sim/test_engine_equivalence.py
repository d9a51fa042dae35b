"""The simulator's outcome with the array refresh equals the outcome with Pulsar's scalar loop,
and with reports held as columns the outcome with reports of sample objects.

The reference below is ``updateAll`` written plainly on the model objects (one broker after the
other: new histories, ``BundleData.update`` per bundle, ``TimeAverageBrokerData.reset``, the
preallocation clean-up, ``fillNamespaceToBundlesMap``) and leaves no fold summary, so the split
check runs its plain loop too. Same moves, splits, decisions and per-cycle series, bit for bit.
"""

import pytest

import brokerlb.loadbalance.leader as leader_module
from brokerlb.loadbalance.refresh import (
    LeaderLoadState,
    RefreshResult,
    _clean_preallocations,
    _ReportedLater,
    _update_broker_data,
    bundle_data_or_default,
    namespace_to_bundle_ranges,
)
from brokerlb.loadbalance.tracked import TrackedDict
from brokerlb.model import NamespaceBundleStats
from brokerlb.sim import run_scenario
from brokerlb.sim.brokers import BundleTraffic
from tests.sim.conftest import small_scenario
from tests.sim.test_determinism_and_conservation import EVENTS, SPLITS

_DEFAULT = NamespaceBundleStats.new_default()


def scalar_refresh(
    state: LeaderLoadState,
    reports,
    *,
    stored_bundle_data=None,
    stored_quota=None,
    keep_preallocations=False,
) -> RefreshResult:
    """Pulsar's updateAllBrokerData + updateBundleData, bundle by bundle."""
    state.refreshes += 1
    added, removed = _update_broker_data(state, reports)
    if isinstance(state.load_data.bundle_data, TrackedDict):  # a plain dict: no fold cache involved
        state.load_data.bundle_data = dict(state.load_data.bundle_data)
    bundle_data = state.load_data.bundle_data
    new_bundles, cleared = [], []
    reported_later = _ReportedLater(state)
    for broker, data in state.load_data.broker_data.items():
        stats_map = data.local_data.last_stats
        for bundle, sample in stats_map.items():
            if bundle not in bundle_data:
                bundle_data[bundle] = bundle_data_or_default(bundle, stored_bundle_data, stored_quota)
                new_bundles.append(bundle)
            bundle_data[bundle].update(sample)
        cleared.extend(_clean_preallocations(state, data, keep_preallocations, reported_later))
        data.time_average_data.reset(stats_map, bundle_data, _DEFAULT)
        ranges = namespace_to_bundle_ranges(stats_map)
        for bundle in data.preallocated_bundle_data:
            namespace, _, bundle_range = bundle.rpartition("/")
            ranges.setdefault(namespace, set()).add(bundle_range)
        state.namespace_bundle_ranges[broker] = ranges
    for broker in removed:
        state.namespace_bundle_ranges.pop(broker, None)
    state.fold_summary = None
    return RefreshResult(tuple(added), tuple(removed), tuple(new_bundles), tuple(cleared))


@pytest.mark.parametrize("strategy", ["ThresholdShedder", "OverloadShedder+LeastResourceUsageWithWeight"])
def test_the_array_refresh_decides_as_the_scalar_loop(strategy, monkeypatch):
    scenario = small_scenario(EVENTS)
    fast = run_scenario(scenario, strategy, SPLITS)
    assert fast.summary["moves"] > 0 and fast.summary["splits"] > 0
    assert {"refresh", "split", "place"} <= set(fast.extra["engine_phases"])
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return scalar_refresh(*args, **kwargs)

    monkeypatch.setattr(leader_module, "refresh", counted)  # the name the leader calls
    plain = run_scenario(scenario, strategy, SPLITS)
    assert len(calls) == fast.summary["leader_refreshes"]  # the reference did every refresh
    assert fast.same_outcome(plain)


@pytest.mark.parametrize(
    "strategy", ["ThresholdShedder", "OverloadShedder+LeastResourceUsageWithWeight", "UniformLoadShedder"]
)
def test_reports_held_as_columns_decide_as_reports_of_sample_objects(strategy, monkeypatch):
    """The simulated brokers write their lastStats as columns (the fold reads the arrays); the same
    run with a dict of NamespaceBundleStats per report, as before, has the same decision log."""
    scenario = small_scenario(EVENTS)
    columnar = run_scenario(scenario, strategy, SPLITS)
    assert columnar.summary["moves"] > 0 and columnar.summary["splits"] > 0
    as_columns = BundleTraffic.stats_map

    def as_objects(self, bundles, names):
        return dict(as_columns(self, bundles, names).items())

    monkeypatch.setattr(BundleTraffic, "stats_map", as_objects)
    assert columnar.same_outcome(run_scenario(scenario, strategy, SPLITS))
