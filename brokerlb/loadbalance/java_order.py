"""The order in which Java's ``HashMap`` iterates string keys -- Pulsar's tie-breaker.

Where Pulsar walks a hash map and keeps the first of equal candidates (the most loaded
broker, equal-throughput bundles in a stable sort, brokers with equal load), the result
depends on ``java.util.HashMap`` iteration order. brokerlb reproduces that order, so ties
come out as in Pulsar (e.g. TransferShedderTest ``testOverloadOutlier``), and are
deterministic. Where Pulsar draws a random number, brokerlb uses the seeded random source.

A ``HashMap`` filled one key at a time from empty has capacity 16, doubled whenever the
size exceeds 3/4 of it; a key's bucket is ``(h ^ (h >>> 16)) & (capacity - 1)`` with ``h``
Java's ``String.hashCode``; iteration visits buckets in index order and a bucket's keys in
insertion order (``ConcurrentHashMap`` uses the same bucket index). Insertion order is the
order the keys are given in (a snapshot's JSON order).

>>> java_string_hash("hello")  # "hello".hashCode() in Java
99162322
>>> java_hash_map_order([f"broker{i}:8080" for i in range(100)])[0]
'broker83:8080'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

from brokerlb import java_hash

__all__ = ["java_string_hash", "hash_map_capacity", "java_hash_map_order", "JavaOrder"]

_DEFAULT_CAPACITY = 16
_LOAD_FACTOR = 0.75

#: ``String.hashCode`` (unsigned) of broker and bundle names, cached: the same names are
#: ordered cycle after cycle.
java_string_hash = lru_cache(maxsize=1 << 20)(java_hash.java_string_hash)


def hash_map_capacity(size: int) -> int:
    """Table size of a ``HashMap`` that received ``size`` keys one by one."""
    capacity = _DEFAULT_CAPACITY
    while size > capacity * _LOAD_FACTOR:
        capacity *= 2
    return capacity


def _bucket(key: str, capacity: int) -> int:
    h = java_string_hash(key)
    return (h ^ (h >> 16)) & (capacity - 1)


def java_hash_map_order(keys: Iterable[str]) -> list[str]:
    """``keys`` (insertion order) in the order a ``HashMap`` holding them iterates."""
    return list(_hash_map_order(tuple(dict.fromkeys(keys))))


@lru_cache(maxsize=16)
def _hash_map_order(ordered: tuple[str, ...]) -> tuple[str, ...]:
    """The order of distinct keys; the same brokers are ordered cycle after cycle."""
    capacity = hash_map_capacity(len(ordered))
    return tuple(key for _, _, key in sorted((_bucket(k, capacity), i, k) for i, k in enumerate(ordered)))


class JavaOrder:
    """Sort keys for a subset of a map's keys, in the map's ``HashMap`` iteration order.

    Built once per map (``keys`` in insertion order); ``key(name)`` is cheap, so a strategy
    can order a few candidates of a 100 000-entry map without hashing all of them.

    :meth:`lazy` takes the map's size and a way to list its keys: the keys are listed only when
    two names being ordered fall in the same bucket (rare in a map of 100 000 keys), so ordering
    a few names does not walk the map.
    """

    __slots__ = ("_index", "_capacity", "_keys")

    def __init__(self, keys: Sequence[str] | Iterable[str]) -> None:
        self._index: dict[str, int] | None = {k: i for i, k in enumerate(keys)}
        self._capacity = hash_map_capacity(len(self._index))
        self._keys: Callable[[], Iterable[str]] | None = None

    @classmethod
    def lazy(cls, size: int, keys: Callable[[], Iterable[str]]) -> JavaOrder:
        """The order of a map of ``size`` keys that ``keys()`` lists in insertion order."""
        order = cls.__new__(cls)
        order._index = None
        order._capacity = hash_map_capacity(size)
        order._keys = keys
        return order

    def _positions(self) -> dict[str, int]:
        if self._index is None:
            assert self._keys is not None
            self._index = {k: i for i, k in enumerate(self._keys())}
        return self._index

    def key(self, name: str) -> tuple[int, int]:
        """``(bucket, insertion index)`` -- compare to get the iteration order."""
        index = self._positions()
        return _bucket(name, self._capacity), index.get(name, len(index))

    def order(self, names: Iterable[str]) -> list[str]:
        """``names`` (distinct) in the map's iteration order."""
        capacity = self._capacity
        by_bucket = sorted((_bucket(n, capacity), n) for n in names)
        if all(a[0] != b[0] for a, b in zip(by_bucket, by_bucket[1:], strict=False)):
            return [n for _, n in by_bucket]  # distinct buckets: insertion order does not matter
        return sorted((n for _, n in by_bucket), key=self.key)
