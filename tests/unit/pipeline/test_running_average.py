"""The closed-form folds of the capped running average agree with the model's step-by-step folds."""

from __future__ import annotations

import random

import pytest

import brokerlb.pipeline.running_average as ra
from brokerlb.history import replay_load_data
from brokerlb.history.replay import ordered_cycles
from brokerlb.model import TimeAverageMessageData
from brokerlb.pipeline.running_average import Window, sweep_bundle
from tests.history_data import broker_samples

REL = 1e-9  # the tolerance the pipeline promises (observed: ~1e-14)


def model_fold(max_samples, xs, cycles):
    w = TimeAverageMessageData(max_samples)
    for _ in range(cycles):
        for x in xs:
            w.update_values(*x)
    return w


@pytest.mark.parametrize("max_samples", [1, 2, 10, 1000])
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("cycles", [1, 5, 70, 2500])
def test_advance_equals_stepwise_model(monkeypatch, max_samples, k, cycles):
    monkeypatch.setattr(ra, "STEPWISE_FOLDS", 0)  # always the closed forms
    rng = random.Random(max_samples * 100 + k * 10 + cycles)
    w = Window(max_samples)
    w.fold((5.0, 6.0, 7.0, 8.0))
    xs = [tuple(rng.random() * 1000 for _ in range(4)) for _ in range(k)]
    w.advance(xs, cycles)
    ref = model_fold(max_samples, [(5.0, 6.0, 7.0, 8.0)], 1)
    for _ in range(cycles):
        for x in xs:
            ref.update_values(*x)
    assert w.num_samples == ref.num_samples
    got = w.values
    want = [ref.msg_throughput_in, ref.msg_throughput_out, ref.msg_rate_in, ref.msg_rate_out]
    assert got == pytest.approx(want, rel=REL)


def test_short_runs_are_bit_identical_to_the_model():
    w = Window(10)
    ref = TimeAverageMessageData(10)
    rng = random.Random(1)
    for _ in range(40):
        x = tuple(rng.random() for _ in range(4))
        w.advance([x], 1)
        ref.update_values(*x)
    assert w.values == [ref.msg_throughput_in, ref.msg_throughput_out, ref.msg_rate_in, ref.msg_rate_out]


def contributions(samples, mode):
    """The pipeline's contributions, built in plain Python from the samples (as the Spark job does)."""
    cyc = ordered_cycles(samples)
    total = len(cyc)
    following: dict[str, int] = {}
    ends = [total] * total
    for i in range(total - 1, -1, -1):
        ends[i] = following.get(cyc[i].broker_id, total)
        following[cyc[i].broker_id] = i
    per: dict[str, list] = {}
    for i, s in enumerate(cyc):
        if s.local_data is None:
            continue
        for bundle, st in s.local_data.last_stats.items():
            values = (st.msg_throughput_in, st.msg_throughput_out, st.msg_rate_in, st.msg_rate_out)
            per.setdefault(bundle, []).append(
                (i, ends[i] if mode == "leader" else i + 1, s.broker_id, values, st.topics)
            )
    return per


@pytest.mark.parametrize("mode", ["leader", "report"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sweep_equals_replay(mode, seed):
    samples = broker_samples(seed, cycles=600, brokers=12, bundles=15)
    ref = replay_load_data(samples, cycles=mode)
    for bundle, rows in contributions(samples, mode).items():
        rows.sort(key=lambda r: (r[0], r[2]))
        result = sweep_bundle(*[[r[j] for r in rows] for j in range(5)])
        data = ref.bundle_data[bundle]
        short, long_ = data.short_term_data, data.long_term_data
        want = (
            short.msg_throughput_in,
            short.msg_throughput_out,
            short.msg_rate_in,
            short.msg_rate_out,
            short.num_samples,
            long_.msg_throughput_in,
            long_.msg_throughput_out,
            long_.msg_rate_in,
            long_.msg_rate_out,
            long_.num_samples,
            data.topics,
        )
        assert result.final[:11] == pytest.approx(want, rel=REL)
        history = {(h.cycle, h.bundle): h.data for h in ref.bundle_history if h.bundle == bundle}
        for (cycle, *_), snap in zip(rows, result.after_start, strict=True):
            h = history[(cycle, bundle)]
            assert snap[2] == pytest.approx(h.short_term_data.msg_rate_in, rel=REL)
            assert snap[9] == h.long_term_data.num_samples
