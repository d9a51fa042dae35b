"""brokerlb's own balancer on the scenario library, through the simulator (same seeds as the
Pulsar strategies): no flapping, new and restarted brokers filled within three shedding
cycles, heterogeneous brokers balanced relative to capacity, ring changes executed.

The full comparison with Pulsar's five shedders is benchmarks/bench_balancer.py (docs/balancer.md).
"""

import numpy as np
import pytest

from brokerlb.sim import run_scenario


def cycles_to_fair_share(result, broker: str) -> list[int]:
    """For each time ``broker`` (re)joined: shedding cycles (one a minute here) until its load is
    within 10 points of the mean."""
    column = result.broker_load[:, result.brokers.index(broker)]
    live = ~np.isnan(column)
    mean = result.series["load_mean"]
    out = []
    for first in [i for i in range(1, len(column)) if live[i] and not live[i - 1]]:
        fair = [i for i in range(first, len(column)) if live[i] and column[i] >= mean[i] - 0.10]
        out.append(fair[0] - first if fair else len(column))
    return out


@pytest.mark.parametrize(
    ("scenario", "broker", "duration"),
    [
        ("ten-busy-one-idle", "broker-11:8080", "25m"),
        ("scale-out", "broker-5:8080", "25m"),
        ("threshold-overshoot", "broker-2:8080", "25m"),
        ("restart-idle-broker", "broker-3:8080", "40m"),
    ],
)
def test_new_or_restarted_broker_reaches_its_fair_share_within_three_cycles(scenario, broker, duration):
    result = run_scenario(scenario, "brokerlb", {"duration": duration}, validate=True)
    assert cycles_to_fair_share(result, broker) and max(cycles_to_fair_share(result, broker)) <= 3
    assert result.summary["flaps"] == 0 and result.summary["returns"] == 0
    assert result.summary["moves_by_cause"]["transfer"] > 0  # brokerlb moves are transfers


def test_nearer_the_lower_bound_than_threshold_shedder_with_less_moved_throughput():
    ours = run_scenario("steady-zipf", "brokerlb", {"duration": "60m"})
    theirs = run_scenario("steady-zipf", "ThresholdShedder", {"duration": "60m"})
    assert ours.summary["distance_mean"] < 0.7 * theirs.summary["distance_mean"]
    assert ours.summary["moved_throughput"] < theirs.summary["moved_throughput"]
    assert ours.summary["flaps"] == 0 and ours.summary["returns"] == 0
    shed = ours.summary["decisions"]
    assert shed.get("unload/Success/Overloaded", 0) > 0


def test_heterogeneous_brokers_stay_within_fifteen_points():
    result = run_scenario("heterogeneous-brokers", "brokerlb", {"duration": "40m"})
    loads = result.broker_load[10:]  # once the first cycles corrected the blind first placement
    spread = np.nanmax(loads, axis=1) - np.nanmin(loads, axis=1)
    assert spread.max() <= 0.15
    assert result.summary["flaps"] == 0


def test_an_idle_cluster_is_left_alone():
    # one broker at 1,500 msg/s, a second joins: at about 1 % load nothing is worth a reconnect
    result = run_scenario("uniform-hidden-minimums", "brokerlb", {"duration": "45m"}, validate=True)
    assert result.summary["moves_by_cause"]["transfer"] == 0
    assert result.summary["moves_by_cause"]["merge"] == 0 and result.summary["splits"] == 0
    assert result.summary["decisions"]["unload/Skip/Idle"] > 0


def test_cold_bundles_merge_in_the_simulator_and_the_ring_stays_whole():
    # the same cluster with the idle threshold off: cold neighbours merge once the leader has
    # watched the ring for brokerlbBalancerNoMergeAfterSplitMinutes
    overrides = {"duration": "45m", "brokerlbBalancerIdleThresholdPercentage": 0}
    result = run_scenario("uniform-hidden-minimums", "brokerlb", overrides, validate=True)
    assert result.summary["moves_by_cause"]["merge"] > 0
    assert result.summary["decisions"]["merge/Success/ColdBundles"] > 0
    assert result.summary["final_bundles"] < 16
    assert result.summary["flaps"] == 0 and result.summary["returns"] == 0


def test_same_seed_same_outcome():
    a = run_scenario("hot-topic", "brokerlb", {"duration": "45m"})
    b = run_scenario("hot-topic", "brokerlb", {"duration": "45m"})
    assert a.same_outcome(b)
