import numpy as np
import pytest

from brokerlb.errors import InvalidScenarioError
from brokerlb.sim.loader import parse_scenario
from brokerlb.sim.workloads import SyntheticWorkload


def scenario(workload=None, events=(), topics=200, **ns):
    return parse_scenario(
        {
            "seed": 3,
            "duration": "2d",
            "brokers": ["b"],
            "namespaces": [
                {"name": "t/a", "topics": topics, "workload": workload or {}, **ns},
                {"name": "t/b", "topics": 10},
            ],
            "events": list(events),
        }
    )


def workload(s, seed=5):
    return SyntheticWorkload(s, np.random.default_rng(seed))


def test_rates_sum_to_the_namespace_rate_and_zipf_skews():
    w = workload(scenario({"msg_rate": 50_000, "zipf": 1.2, "fanout": 3, "msg_size": 2000}))
    tr = w.traffic(0.0)
    a = slice(0, 200)
    assert tr.msg_rate_in[a].sum() == pytest.approx(50_000)
    assert np.allclose(tr.msg_rate_out[a], 3 * tr.msg_rate_in[a])
    assert np.allclose(tr.msg_throughput_in[a], 2000 * tr.msg_rate_in[a])
    assert np.allclose(tr.msg_rate_out[200:], tr.msg_rate_in[200:])  # the other namespace's defaults
    top = np.sort(tr.msg_rate_in[a])[::-1]
    assert top[0] / top[-1] == pytest.approx(200**1.2, rel=1e-9)
    flat = workload(scenario({"msg_rate": 1000}))
    assert np.allclose(flat.traffic(0.0).msg_rate_in[a], 5.0)


def test_diurnal_curve_peaks_at_peak():
    w = workload(scenario({"msg_rate": 1000, "diurnal": {"amplitude": 0.5, "peak": "14h"}}))
    at = lambda h: w.traffic(h * 3600).msg_rate_in[:200].sum()  # noqa: E731
    assert at(14) == pytest.approx(1500) and at(2) == pytest.approx(500) and at(38) == pytest.approx(1500)


def test_hot_topic_ramps_and_ends():
    hot = {
        "at": "1h",
        "type": "hot_topic",
        "namespace": "t/a",
        "topic": 7,
        "factor": 11,
        "ramp": "10m",
        "duration": "1h",
    }
    w = workload(scenario({"msg_rate": 2000}, [hot]))
    base = w.traffic(0).msg_rate_in[7]
    assert w.traffic(3600 + 300).msg_rate_in[7] == pytest.approx(base * 6)
    assert w.traffic(3600 + 900).msg_rate_in[7] == pytest.approx(base * 11)
    assert w.traffic(2 * 3600 + 1).msg_rate_in[7] == pytest.approx(base)
    with pytest.raises(InvalidScenarioError, match="no topic 500"):
        workload(scenario(events=[{**hot, "topic": 500}]))


def test_namespace_growth_activates_topics_evenly():
    grow = {"at": "1h", "type": "namespace_growth", "namespace": "t/a", "topics": 100, "over": "100m"}
    w = workload(scenario({"msg_rate": 1000}, [grow], topics=50))
    assert len(w.topics["t/a"]) == 150
    assert w.traffic(0).active[:150].sum() == 50
    assert w.traffic(3600 + 50 * 60 - 1).active[:150].sum() == 100
    tr = w.traffic(10 * 3600)
    assert tr.active[:150].all() and tr.msg_rate_in[:150].sum() == pytest.approx(3000)
    assert tr.producers[:150].sum() == 150


def test_scale_traffic_ramps_per_namespace():
    ev = {"at": "1h", "type": "scale_traffic", "namespace": "t/a", "factor": 3, "ramp": "1h"}
    w = workload(scenario({"msg_rate": 1000}, [ev]))
    assert w.traffic(5400).msg_rate_in[:200].sum() == pytest.approx(2000)
    assert w.traffic(9000).msg_rate_in[:200].sum() == pytest.approx(3000)
    assert w.traffic(9000).msg_rate_in[200:].sum() == pytest.approx(10_000)


def test_noise_is_mean_one_and_seeded():
    s = scenario({"msg_rate": 100_000, "noise": 0.3})
    a, b, c = workload(s, 1), workload(s, 1), workload(s, 2)
    for t in (60.0, 120.0):
        ta, tb, tc = a.traffic(t), b.traffic(t), c.traffic(t)
        assert np.array_equal(ta.msg_rate_in, tb.msg_rate_in)
        assert not np.array_equal(ta.msg_rate_in, tc.msg_rate_in)
    big = workload(scenario({"msg_rate": 100_000, "noise": 0.3}, topics=20_000))
    assert big.traffic(0).msg_rate_in[:20_000].sum() == pytest.approx(100_000, rel=0.02)


def test_hot_topic_to_a_target_rate():
    hot = {"at": "1h", "type": "hot_topic", "namespace": "t/a", "topic": 7, "rate": "40k"}
    w = workload(scenario({"msg_rate": 2000, "zipf": 1.0}, [hot]))
    assert w.traffic(3600).msg_rate_in[7] == pytest.approx(40_000)
    assert w.traffic(0).msg_rate_in[7] < 2000
