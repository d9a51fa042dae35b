"""JavaOrder: the lazy order (listing the map only when two names share a bucket) equals the
eager one, and a few names of a large map are ordered without listing it."""

from __future__ import annotations

import random

from brokerlb.loadbalance.java_order import JavaOrder


def _names(rng: random.Random, n: int) -> list[str]:
    return [
        f"tenant-{rng.randrange(9)}/ns-{rng.randrange(50)}/0x{rng.getrandbits(32):08x}_{i}" for i in range(n)
    ]


def test_lazy_order_equals_the_eager_order_with_and_without_shared_buckets() -> None:
    rng = random.Random(7)
    for size in (3, 12, 40, 700):  # small maps: many names share a bucket
        keys = _names(rng, size)
        eager = JavaOrder(keys)
        lazy = JavaOrder.lazy(size, lambda keys=keys: keys)
        for _ in range(50):
            subset = rng.sample(keys, rng.randrange(1, min(size, 30) + 1))
            expected = sorted(subset, key=eager.key)
            assert eager.order(subset) == expected
            assert lazy.order(subset) == expected


def test_lazy_order_lists_the_map_only_for_a_shared_bucket() -> None:
    listed = []

    def keys() -> list[str]:
        listed.append(1)
        return ["a", "b", "c"]

    order = JavaOrder.lazy(3, keys)  # capacity 16
    assert order.order(["b", "a"]) == ["a", "b"]  # buckets 1 and 2 (String.hashCode 97, 98)
    assert listed == []
    # "a" (97) and "q" (113) share bucket 1 of 16: insertion order decides, the map is listed
    assert order.order(["q", "a"]) == ["a", "q"]
    assert listed == [1]
