"""Perf workload: skew weights, seeded picks, pulsar-perf topic names, pacing."""

from __future__ import annotations

import collections

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokerlb.errors import InvalidInputError, InvalidTopicNameError
from brokerlb.perf import Pacer, Picker, skew_weights, topic_names


@given(st.integers(1, 500), st.sampled_from(["uniform", "zipf"]), st.floats(0.1, 3.0))
def test_weights_are_a_distribution_and_zipf_is_decreasing(n: int, skew: str, s: float) -> None:
    w = skew_weights(n, skew, s)
    assert len(w) == n and abs(sum(w) - 1) < 1e-9
    assert all(a >= b for a, b in zip(w, w[1:], strict=False))
    if skew == "uniform":
        assert max(w) - min(w) < 1e-12


def test_zipf_with_s_1_over_200_topics_matches_the_docstring() -> None:
    w = skew_weights(200, "zipf", 1.0)
    assert round(w[0], 2) == 0.17 and round(sum(w[100:]), 2) == 0.12


def test_picks_follow_the_weights_and_repeat_with_the_seed() -> None:
    a = Picker(10, "zipf", 1.2, seed=3)
    draws = [a.pick() for _ in range(50_000)]
    again = Picker(10, "zipf", 1.2, seed=3)
    assert draws[:200] == [again.pick() for _ in range(200)]
    counts = collections.Counter(draws)
    for i, w in enumerate(a.weights):
        assert abs(counts[i] / 50_000 - w) < 0.01
    uniform = Picker(7, "uniform", seed=1)
    assert {uniform.pick() for _ in range(2000)} == set(range(7))


@pytest.mark.parametrize(
    "args, match",
    [((0, "uniform"), "at least one"), ((3, "pareto"), "unknown skew"), ((3, "zipf", 0.0), "exponent")],
)
def test_bad_skews_are_refused(args: tuple, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        skew_weights(*args)


def test_topic_names_follow_pulsar_perf() -> None:
    assert topic_names("my-topic", 1) == ["persistent://public/default/my-topic"]
    assert topic_names("non-persistent://t/ns/x", 2) == [
        "non-persistent://t/ns/x-0",
        "non-persistent://t/ns/x-1",
    ]
    with pytest.raises(InvalidInputError):
        topic_names("t", 0)
    with pytest.raises(InvalidTopicNameError):
        topic_names("bad://x", 2)


def test_pacer_keeps_the_rate_without_drift_and_limits_catch_up_to_a_second() -> None:
    p = Pacer(1000.0, start=0.0)
    total = sum(p.due(t / 1000) for t in range(1, 10_001))  # 10 s in 1 ms steps
    assert total == 10_000
    assert p.due(20.0) == 1000  # stalled for 10 s: only one second of backlog is sent
    assert p.due(20.0) == 0
    assert Pacer(0, start=0.0).due(5.0, cap=77) == 77  # unlimited: as many as allowed


def test_negative_message_counts_and_durations_are_refused() -> None:
    from brokerlb.perf.runner import ConsumeOptions, ProduceOptions

    with pytest.raises(InvalidInputError, match="--num-messages"):
        ProduceOptions("http://b:8080", "t", num_messages=-1).check()
    with pytest.raises(InvalidInputError, match="--num-messages"):
        ConsumeOptions("http://b:8080", "t", num_messages=-1).check()
    with pytest.raises(InvalidInputError, match="--test-duration"):
        ConsumeOptions("http://b:8080", "t", duration=-1).check()
    ProduceOptions("http://b:8080", "t", num_messages=900).check()
