"""Latency histogram accuracy and merging; publish pauses from the producer's view."""

from __future__ import annotations

import json
import random

from hypothesis import given
from hypothesis import strategies as st

from brokerlb.perf import LatencyHistogram, PauseTracker


@given(st.lists(st.floats(1e-6, 10.0), min_size=1, max_size=400), st.sampled_from([50, 90, 99, 99.9]))
def test_percentiles_are_within_two_percent_of_the_exact_ones(values: list[float], p: float) -> None:
    h = LatencyHistogram()
    for v in values:
        h.record(v)
    ordered = sorted(values)
    import math

    exact = ordered[max(1, math.ceil(len(ordered) * p / 100)) - 1]
    assert abs(h.percentile(p) - exact) <= 0.021 * exact + 1e-6
    assert h.percentile(100) == max(values) and h.min == min(values) and h.count == len(values)


def test_histograms_merge_and_travel_as_json() -> None:
    rng = random.Random(5)
    a, b, both = LatencyHistogram(), LatencyHistogram(), LatencyHistogram()
    for i in range(5000):
        v = rng.expovariate(1000)
        (a if i % 2 else b).record(v)
        both.record(v)
    merged = LatencyHistogram.from_json(json.loads(json.dumps(a.to_json())))
    merged.merge(b)
    assert merged.buckets == both.buckets and merged.count == both.count
    assert merged.summary_ms()["p99"] == both.summary_ms()["p99"]
    assert LatencyHistogram.from_json(LatencyHistogram().to_json()).percentile(50) == 0.0


def test_pauses_run_from_the_last_ack_to_the_next_while_sends_are_pending() -> None:
    t = PauseTracker(keep_above=0.05)
    for i in range(5):  # a steady producer: one send and its ack every 10 ms
        t.on_send("hot", i * 0.010)
        t.on_done("hot", i * 0.010 + 0.002)
    t.on_send("hot", 1.000)  # the bundle moves: sends pile up, the next ack comes 400 ms later
    t.on_send("hot", 1.010)
    t.on_send("hot", 1.020)
    t.on_done("hot", 1.400)
    t.on_done("hot", 1.401)
    t.on_done("hot", 1.402)
    assert round(t.longest.seconds, 3) == 0.4 and t.longest.topic == "hot"
    assert [round(p.seconds, 3) for p in t.kept] == [0.4]
    t.on_done("unknown", 5.0)  # an ack nobody waited for changes nothing
    t.on_done("hot", 5.0)
    assert round(t.longest.seconds, 3) == 0.4
