"""The simulator's outcome with the array refresh equals the outcome with Pulsar's scalar loop.

The reference below is ``updateAll`` written plainly on the model objects (one broker after the
other: new histories, ``BundleData.update`` per bundle, ``TimeAverageBrokerData.reset``, the
preallocation clean-up, ``fillNamespaceToBundlesMap``) and leaves no fold summary, so the split
check runs its plain loop too. Same moves, splits, decisions and per-cycle series, bit for bit.
"""

import pytest

import brokerlb.loadbalance.refresh as refresh_module
from brokerlb.loadbalance.refresh import (
    LeaderLoadState,
    RefreshResult,
    _clean_preallocations,
    _update_broker_data,
    bundle_data_or_default,
    namespace_to_bundle_ranges,
)
from brokerlb.model import NamespaceBundleStats
from brokerlb.sim import run_scenario
from tests.sim.conftest import small_scenario
from tests.sim.test_determinism_and_conservation import EVENTS, SPLITS

_DEFAULT = NamespaceBundleStats.new_default()


def scalar_refresh(
    state: LeaderLoadState, reports, *, stored_bundle_data=None, stored_quota=None
) -> RefreshResult:
    """Pulsar's updateAllBrokerData + updateBundleData, bundle by bundle."""
    added, removed = _update_broker_data(state.load_data, reports)
    bundle_data = state.load_data.bundle_data
    new_bundles, cleared = [], []
    for broker, data in state.load_data.broker_data.items():
        stats_map = data.local_data.last_stats
        for bundle, sample in stats_map.items():
            if bundle not in bundle_data:
                bundle_data[bundle] = bundle_data_or_default(bundle, stored_bundle_data, stored_quota)
                new_bundles.append(bundle)
            bundle_data[bundle].update(sample)
        cleared.extend(_clean_preallocations(state, data))
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
    monkeypatch.setattr(refresh_module, "refresh", scalar_refresh)
    plain = run_scenario(scenario, strategy, SPLITS)
    assert fast.same_outcome(plain)
