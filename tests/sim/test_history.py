"""The simulated cluster's load history, in the pipeline's input format (docs/load-history.md)."""

import numpy as np
import pytest

history = pytest.importorskip("brokerlb.history")

from brokerlb.sim import RecordedWorkload, run_scenario  # noqa: E402
from tests.sim.conftest import small_scenario  # noqa: E402


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp("history")
    scenario = small_scenario([{"at": "5m", "type": "fail_broker", "broker": "b2"}], minutes=20)
    result = run_scenario(
        scenario,
        "OverloadShedder",
        {"loadBalancerNamespaceBundleMaxTopics": "20"},
        history_dir=root,
        history_topic_interval=300,
    )
    return scenario, result, root


def test_broker_samples_are_the_reports_written(recorded):
    _, result, root = recorded
    samples = history.read_history(root, history.BROKER_SAMPLES)
    reports = [s for s in samples if not s.is_removal]
    assert len(reports) == result.summary["reports_written"] + 4  # + the reports written at registration
    assert {s.broker_id for s in reports} == {"b1:8080", "b2:8080", "b3:8080", "b4:8080"}
    assert all(s.local_data.last_update == s.timestamp for s in reports)
    removals = [s for s in samples if s.is_removal]
    assert [s.broker_id for s in removals] == ["b2:8080"]  # its registration vanished after the crash


def test_bundle_boundaries_follow_the_splits(recorded):
    _, result, root = recorded
    boundaries = history.read_history(root, history.BUNDLE_BOUNDARIES)
    first = {
        b.namespace: b.num_bundles for b in boundaries if b.timestamp == min(x.timestamp for x in boundaries)
    }
    assert first == {"t/ns-1": 8, "t/ns-2": 8, "t/ns-3": 8}
    last = {}
    for b in boundaries:
        last[b.namespace] = b.num_bundles
    assert sum(last.values()) == result.summary["final_bundles"] > 24


def test_topic_samples_replay_as_a_recorded_workload(recorded):
    scenario, result, root = recorded
    samples = history.read_history(root, history.TOPIC_SAMPLES)
    times = sorted({s.timestamp for s in samples})
    assert len(times) == 4  # every 5 minutes over 20 minutes
    replay = RecordedWorkload.from_history(root)
    again = run_scenario(scenario, "OverloadShedder", workload=replay)
    # the replay starts at the first dump (the end of cycle 1) and holds each dump for 5 minutes
    assert again.series["offered_throughput"][0] == pytest.approx(
        sum(s.msg_throughput_in + s.msg_throughput_out for s in samples if s.timestamp == times[0])
    )
    assert np.isfinite(again.series["load_max"]).all()
