"""Library scenarios beyond the shedding problems of test_pain_points.py: anti-affinity, crashes,
recorded workloads."""

from collections import Counter

import numpy as np
import pytest

from brokerlb.sim import RecordedWorkload, Simulation, run_scenario
from brokerlb.sim.ownership import BundleState
from brokerlb.sim.runner import prepare
from brokerlb.sim.workloads import SyntheticWorkload
from tests.sim.conftest import small_scenario


def group_spread(sim: Simulation, group_prefix: str) -> Counter:
    """broker -> number of the group's namespaces it owns a bundle of."""
    owned = Counter()
    seen = set()
    for b in np.flatnonzero(sim.ownership.state == BundleState.OWNED):
        ns = sim.topology.namespace_of_bundle(int(b))
        broker = sim.broker_ids[int(sim.ownership.owner[b])]
        if ns.startswith(group_prefix) and (ns, broker) not in seen:
            seen.add((ns, broker))
            owned[broker] += 1
    return owned


@pytest.mark.parametrize("strategy", ["ThresholdShedder", "UniformLoadShedder"])
def test_anti_affinity_group_stays_spread_through_shedding_and_a_crash(strategy):
    scenario, config, label = prepare("anti-affinity", strategy, {"duration": "60m"})
    sim = Simulation(scenario, config_overrides=config, label=label, validate=True)
    for _ in range(39):
        sim.step()
    before = group_spread(sim, "payments/")
    assert sum(before.values()) == 6 and max(before.values()) == 1  # one per broker
    while sim.cycle < sim.cycles:
        sim.step()
    after = group_spread(sim, "payments/")
    assert sum(after.values()) == 6 and max(after.values()) == 2 and "broker-6:8080" not in after


def test_crash_orphans_its_bundles_for_the_session_timeout():
    result = run_scenario("broker-failure", "ThresholdShedder", {"duration": "45m"})
    failure = [m for m in result.moves if m["cause"] == "failure"]
    assert len(failure) > 10 and {m["from"] for m in failure} == {"broker-5:8080"}
    waits = [m["unownedMs"] for m in failure]
    assert min(waits) >= 30_000 and max(waits) < 40_000  # session timeout + the next lookup
    crash_cycle = 30  # the sample at 31m, after the crash at 30m and the expiry at 30m30s
    assert result.series["unowned_seconds"][crash_cycle] >= len(failure) * 30
    assert result.series["unserved_throughput"][crash_cycle - 1] > 0  # sampled at the crash instant


def test_recorded_workload_replays_the_same_traffic():
    scenario = small_scenario(minutes=10)
    synthetic = SyntheticWorkload(scenario, np.random.default_rng(9))
    names = [t for ns in synthetic.topics.values() for t in ns]
    records = []
    for minute in range(11):
        tr = synthetic.traffic(minute * 60.0)
        for i in np.flatnonzero(tr.active):
            records.append(
                {
                    "timestamp": 1_000_000 + minute * 60_000,
                    "topic": names[i],
                    "msgRateIn": tr.msg_rate_in[i],
                    "msgRateOut": tr.msg_rate_out[i],
                    "msgThroughputIn": tr.msg_throughput_in[i],
                    "msgThroughputOut": tr.msg_throughput_out[i],
                    "producerCount": int(tr.producers[i]),
                    "consumerCount": int(tr.consumers[i]),
                }
            )
    recorded = RecordedWorkload.from_records(records)
    result = run_scenario(scenario, "OverloadShedder", workload=recorded, validate=True)
    replay = SyntheticWorkload(scenario, np.random.default_rng(9))
    expected = [replay.traffic(0.0).total_throughput()] and [
        replay.traffic(m * 60.0).total_throughput() for m in range(1, 11)
    ]
    assert np.allclose(result.series["offered_throughput"], expected)
    assert result.start_ms == 1_000_000 and result.series["served_throughput"][-1] > 0
