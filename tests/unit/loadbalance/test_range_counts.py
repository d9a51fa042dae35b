"""The leader's namespace -> broker -> range counts stay equal to counting the map afresh."""

import random

from brokerlb.loadbalance.range_counts import NamespaceRangeCounts, count_ranges


def random_map(rng: random.Random) -> dict[str, set[str]]:
    return {
        f"t/ns-{n}": {f"0x{r:08x}_0x{r + 1:08x}" for r in rng.sample(range(8), rng.randrange(0, 4))}
        for n in rng.sample(range(6), rng.randrange(0, 5))
    }


def test_incremental_counts_equal_a_fresh_count_through_replacements_joins_and_departures() -> None:
    rng = random.Random(3)
    counts = NamespaceRangeCounts()
    ranges = {f"b{i}": random_map(rng) for i in range(5)}
    for _ in range(300):
        action = rng.random()
        broker = f"b{rng.randrange(8)}"
        if action < 0.6:
            ranges[broker] = random_map(rng)  # replaced (a new report, a preallocation)
        elif action < 0.8:
            ranges.pop(broker, None)  # the broker left
        synced = counts.sync(ranges)
        assert {ns: dict(per) for ns, per in synced.items()} == count_ranges(ranges)
        assert all(synced.values()), "a namespace nobody holds is left out"


def test_a_map_kept_as_the_same_object_is_not_counted_again() -> None:
    counts = NamespaceRangeCounts()
    ranges = {"b1": {"t/a": {"0x0_0x1"}}}
    counts.sync(ranges)
    ranges["b1"]["t/a"].add("0x1_0x2")  # changed in place: against the rule, so not seen
    assert counts.sync(ranges) == {"t/a": {"b1": 1}}
    ranges["b1"] = {"t/a": {"0x0_0x1", "0x1_0x2"}}
    assert counts.sync(ranges) == {"t/a": {"b1": 2}}
