"""The uniform assignor's counts (a compiled min-cost flow) against an independent exact solver.

The brute-force oracle (``test_uniform_assignor.py``) judges small groups; here random groups of
up to 40 members x 25 topics, with random previous ownership, are solved by the product's
:func:`balanced_counts` and by the pure-Python primal-dual solver kept in
``tests/kafka/flow_reference.py``: both must reach the same optimum -- the same ``sum c**2``, then
the same number of moved partitions -- and a valid flow (every partition once, only to
subscribers).
"""

from __future__ import annotations

import random

import pytest

from brokerlb.kafka.assignors.balanced_flow import balanced_counts
from tests.kafka.flow_reference import balanced_counts as reference_counts


def objective(x, owned, num_members):
    counts = [0] * num_members
    moved = 0
    for t, given in enumerate(x):
        for m, n in given.items():
            counts[m] += n
        moved += sum(n - min(n, given.get(m, 0)) for m, n in owned[t].items())
    return sum(c * c for c in counts), moved


def random_case(rng: random.Random):
    members = rng.randint(2, 40)
    topics = rng.randint(1, 25)
    partitions = [rng.choice([0, 1, 2, 3, 5, 8, 13, 40]) for _ in range(topics)]
    subscribers = []
    for _ in range(topics):
        k = rng.choice([1, 1, 2, 3, members // 2 or 1, members])
        subscribers.append(sorted(rng.sample(range(members), min(k, members))))
    owned = []
    for t in range(topics):
        left = partitions[t]
        mine: dict[int, int] = {}
        for m in subscribers[t]:
            n = rng.randint(0, left) if rng.random() < 0.6 else 0
            if n:
                mine[m] = n
                left -= n
        owned.append(mine)
    return partitions, subscribers, owned, members


@pytest.mark.parametrize("seed", range(300))
def test_same_optimum_as_the_reference_solver(seed: int) -> None:
    partitions, subscribers, owned, members = random_case(random.Random(seed))
    x = balanced_counts(partitions, subscribers, owned, members)
    for t, given in enumerate(x):
        assert sum(given.values()) == partitions[t]
        assert set(given) <= set(subscribers[t]) and all(n > 0 for n in given.values())
    expected = reference_counts(partitions, subscribers, owned, members)
    assert objective(x, owned, members) == objective(expected, owned, members)


def test_a_sole_subscriber_takes_its_topic_and_caps_are_raised_when_needed() -> None:
    # member 0 alone on a big topic, and on a shared one with 50 others: far above the mean
    partitions = [1000, 60]
    subscribers = [[0], list(range(51))]
    x = balanced_counts(partitions, subscribers, [{}, {}], 51)
    assert x[0] == {0: 1000} and 0 not in x[1] and sum(x[1].values()) == 60
    # one member on a topic of 500 with one other member who owns nothing else: 250/250
    x = balanced_counts([500, 10], [[0, 1], list(range(10))], [{0: 500}, {}], 10)
    counts = [x[0].get(m, 0) + x[1].get(m, 0) for m in range(10)]
    assert sorted(counts)[-2:] == [250, 250] and counts[0] == 250


def test_a_topic_with_partitions_needs_a_subscriber() -> None:
    with pytest.raises(ValueError, match="no subscriber"):
        balanced_counts([3], [[]], [{}], 2)
