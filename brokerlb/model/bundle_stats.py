"""Per-bundle traffic sample: Pulsar's ``NamespaceBundleStats``, and its ordering.

A broker reports one :class:`NamespaceBundleStats` per bundle it owns (the
``lastStats`` map of its load report). JSON keys, in Pulsar's order::

    {"msgRateIn": 0.0, "msgThroughputIn": 0.0, "msgRateOut": 0.0, "msgThroughputOut": 0.0,
     "consumerCount": 2, "producerCount": 0, "topics": 1, "cacheSize": 0}

Rates are messages/s, throughputs bytes/s, ``cacheSize`` bytes. All default to 0.

Ordering ("which bundle is heavier", used to pick the top-K bundles of a
report). Pulsar compares, in turn: throughput in, throughput out, total message
rate, topics + producers + consumers, cache size. Each step ignores small
differences, with resolutions 100 KB/s (1e5), 100 msg/s, 500, and 100 000 bytes.

* Current Pulsar (4.x; the fix for "Comparison method violates its general
  contract") **quantises** each value before comparing: doubles with
  ``Math.round(v / resolution)``, longs with ``v / resolution`` (integer division).
  That is a total preorder, so :meth:`NamespaceBundleStats.sort_key` is a real sort key.
* Pulsar up to 3.x compared with a **threshold**: equal when ``|a - b| <= resolution``.
  That relation is not transitive (0 ~ 60k ~ 120k but 0 < 120k), so sorting with it is
  ill-defined. :func:`compare_with_thresholds` keeps it for reference and tests; nothing
  in brokerlb sorts with it.

>>> a = NamespaceBundleStats(msg_throughput_in=140_000.0)
>>> b = NamespaceBundleStats(msg_throughput_in=160_000.0)
>>> a.compare_to(b), compare_with_thresholds(a, b)   # 1 vs 2 buckets; 20 KB/s apart
(-1, 0)

Validation: rates/throughputs must be finite and ``>= 0``; counts must be integers
``>= 0`` (an integral float such as ``2.0`` is accepted); anything else raises
:class:`~brokerlb.errors.InvalidLoadDataError` naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from brokerlb.model._validate import JsonObject, check_count, check_non_negative, invalid

__all__ = [
    "NamespaceBundleStats",
    "DEFAULT_MESSAGE_RATE",
    "DEFAULT_MESSAGE_THROUGHPUT",
    "THROUGHPUT_RESOLUTION",
    "MSG_RATE_RESOLUTION",
    "TOPIC_CONNECTION_RESOLUTION",
    "CACHE_SIZE_RESOLUTION",
    "bundle_namespace",
    "compare_with_thresholds",
    "java_round",
    "stats_map_from_json",
]

#: Messages/s assumed, in and out, for a bundle with no history (``ModularLoadManagerImpl``).
DEFAULT_MESSAGE_RATE = 50.0
#: Bytes/s assumed, in and out, for a bundle with no history.
DEFAULT_MESSAGE_THROUGHPUT = 50_000.0

THROUGHPUT_RESOLUTION = 1e5
MSG_RATE_RESOLUTION = 100.0
TOPIC_CONNECTION_RESOLUTION = 500
CACHE_SIZE_RESOLUTION = 100_000

# (python attribute, JSON key, is a count)
_FIELDS = (
    ("msg_rate_in", "msgRateIn", False),
    ("msg_throughput_in", "msgThroughputIn", False),
    ("msg_rate_out", "msgRateOut", False),
    ("msg_throughput_out", "msgThroughputOut", False),
    ("consumer_count", "consumerCount", True),
    ("producer_count", "producerCount", True),
    ("topics", "topics", True),
    ("cache_size", "cacheSize", True),
)


def bundle_namespace(bundle: str) -> str:
    """The namespace of a bundle name (``LoadManagerShared.getNamespaceNameFromBundleName``).

    >>> bundle_namespace("my-tenant/my-ns/0x00000000_0x40000000")
    'my-tenant/my-ns'
    """
    return bundle.rpartition("/")[0]


def java_round(value: float) -> int:
    """Java's ``Math.round(double)``: ``floor(value + 0.5)`` (half rounds up, unlike Python's ``round``)."""
    return math.floor(value + 0.5)


def _sign(a: float | int, b: float | int) -> int:
    return (a > b) - (a < b)


@dataclass(frozen=True, slots=True)
class NamespaceBundleStats:
    """One bundle's traffic sample. Immutable; validated on construction."""

    msg_rate_in: float = 0.0
    msg_throughput_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_out: float = 0.0
    consumer_count: int = 0
    producer_count: int = 0
    topics: int = 0
    cache_size: int = 0

    def __post_init__(self) -> None:
        for attr, key, is_count in _FIELDS:
            value = getattr(self, attr)
            checked = check_count(value, key) if is_count else check_non_negative(value, key)
            object.__setattr__(self, attr, checked)

    @classmethod
    def new_default(cls) -> NamespaceBundleStats:
        """Pulsar's ``newDefaultNamespaceBundleStats()``: 50 msg/s and 50 000 B/s, in and out."""
        return cls(
            msg_rate_in=DEFAULT_MESSAGE_RATE,
            msg_throughput_in=DEFAULT_MESSAGE_THROUGHPUT,
            msg_rate_out=DEFAULT_MESSAGE_RATE,
            msg_throughput_out=DEFAULT_MESSAGE_THROUGHPUT,
        )

    # ------------------------------------------------------------------ totals

    def total_msg_rate(self) -> float:
        return self.msg_rate_in + self.msg_rate_out

    def total_msg_throughput(self) -> float:
        return self.msg_throughput_in + self.msg_throughput_out

    def topics_and_connections(self) -> int:
        return self.topics + self.consumer_count + self.producer_count

    # ------------------------------------------------------------------ ordering

    def sort_key(self) -> tuple[int, int, int, int, int]:
        """Pulsar 4.x ``compareTo`` as a key: ``a.compare_to(b) == sign(a.sort_key() vs b.sort_key())``.

        Use ``sorted(stats, key=NamespaceBundleStats.sort_key, reverse=True)`` for heaviest first.
        """
        floor = math.floor  # java_round inlined: this key is computed for every bundle of a report
        return (
            floor(self.msg_throughput_in / THROUGHPUT_RESOLUTION + 0.5),
            floor(self.msg_throughput_out / THROUGHPUT_RESOLUTION + 0.5),
            floor((self.msg_rate_in + self.msg_rate_out) / MSG_RATE_RESOLUTION + 0.5),
            (self.topics + self.consumer_count + self.producer_count) // TOPIC_CONNECTION_RESOLUTION,
            self.cache_size // CACHE_SIZE_RESOLUTION,
        )

    def compare_to(self, other: NamespaceBundleStats) -> int:
        """-1, 0 or 1 as Pulsar 4.x ``NamespaceBundleStats.compareTo``."""
        a, b = self.sort_key(), other.sort_key()
        return (a > b) - (a < b)

    # ------------------------------------------------------------------ JSON

    def to_json(self) -> dict[str, Any]:
        return {key: getattr(self, attr) for attr, key, _ in _FIELDS}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> NamespaceBundleStats:
        """Read Pulsar's JSON; missing keys are 0, unknown keys are ignored."""
        stats = _read_plain(data)
        return stats if stats is not None else cls._read_checked(data, path)

    @classmethod
    def _read_checked(cls, data: Mapping[str, Any], path: str) -> NamespaceBundleStats:
        obj = JsonObject(data, path)
        stats = object.__new__(cls)  # every value is checked by the reader: skip __post_init__
        for attr, key, is_count in _FIELDS:
            object.__setattr__(stats, attr, obj.count(key) if is_count else obj.rate(key))
        return stats


_new = object.__new__
_INF = math.inf
(
    _set_rate_in,
    _set_throughput_in,
    _set_rate_out,
    _set_throughput_out,
    _set_consumers,
    _set_producers,
    _set_topics,
    _set_cache_size,
) = (getattr(NamespaceBundleStats, attr).__set__ for attr, _, _ in _FIELDS)


def _read_plain(data: Any) -> NamespaceBundleStats | None:
    """The sample of a JSON object whose values are all plain (:func:`plain_values`); ``None``
    for anything else (the checked reader then accepts it or names what is wrong)."""
    values = plain_values(data)
    if values is None:
        return None
    rate_in, throughput_in, rate_out, throughput_out, consumers, producers, topics, cache_size = values
    stats: NamespaceBundleStats = _new(NamespaceBundleStats)  # frozen: the slots are set directly
    _set_rate_in(stats, rate_in)
    _set_throughput_in(stats, throughput_in)
    _set_rate_out(stats, rate_out)
    _set_throughput_out(stats, throughput_out)
    _set_consumers(stats, consumers)
    _set_producers(stats, producers)
    _set_topics(stats, topics)
    _set_cache_size(stats, cache_size)
    return stats


def plain_values(data: Any) -> tuple[float, float, float, float, int, int, int, int] | None:
    """A sample's values in JSON key order (``msgRateIn, msgThroughputIn, msgRateOut,
    msgThroughputOut, consumerCount, producerCount, topics, cacheSize``) when its JSON object is
    plain -- rates finite non-negative floats, counts non-negative ints, missing keys 0 -- as
    Pulsar and brokerlb write them; ``None`` for anything else (:meth:`NamespaceBundleStats.from_json`
    then accepts it or names what is wrong). A report holds a sample per bundle, and the leader
    reads every report a broker writes: this is its hot path."""
    if type(data) is not dict:
        return None
    get = data.get
    rate_in = get("msgRateIn", 0.0)
    throughput_in = get("msgThroughputIn", 0.0)
    rate_out = get("msgRateOut", 0.0)
    throughput_out = get("msgThroughputOut", 0.0)
    consumers = get("consumerCount", 0)
    producers = get("producerCount", 0)
    topics = get("topics", 0)
    cache_size = get("cacheSize", 0)
    if not (
        type(rate_in) is float
        and type(throughput_in) is float
        and type(rate_out) is float
        and type(throughput_out) is float
        and 0.0 <= rate_in < _INF  # NaN fails every comparison
        and 0.0 <= throughput_in < _INF
        and 0.0 <= rate_out < _INF
        and 0.0 <= throughput_out < _INF
        and type(consumers) is int
        and type(producers) is int
        and type(topics) is int
        and type(cache_size) is int
        and consumers >= 0
        and producers >= 0
        and topics >= 0
        and cache_size >= 0
    ):
        return None
    # + 0.0 turns -0.0 into 0.0, as check_non_negative does
    return (
        rate_in + 0.0,
        throughput_in + 0.0,
        rate_out + 0.0,
        throughput_out + 0.0,
        consumers,
        producers,
        topics,
        cache_size,
    )


def stats_map_from_json(value: Any, path: str) -> dict[str, NamespaceBundleStats]:
    """A ``lastStats`` JSON object (bundle -> sample) read with :meth:`NamespaceBundleStats.from_json`;
    ``path`` names it in errors (a missing map is empty)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise invalid(path, value, "expected a JSON object")
    out: dict[str, NamespaceBundleStats] = {}
    for name, item in value.items():
        if not isinstance(name, str):
            raise invalid(path, name, "keys must be strings")
        stats = _read_plain(item)
        out[name] = (
            stats if stats is not None else NamespaceBundleStats._read_checked(item, f"{path}[{name}]")
        )
    return out


def compare_with_thresholds(a: NamespaceBundleStats, b: NamespaceBundleStats) -> int:
    """Pulsar <= 3.x ``NamespaceBundleStats.compareTo``: a step decides only if ``|diff| > resolution``.

    Not transitive (see the module docstring); do not sort with it.
    """
    steps: tuple[tuple[float | int, float | int, float | int], ...] = (
        (a.msg_throughput_in, b.msg_throughput_in, THROUGHPUT_RESOLUTION),
        (a.msg_throughput_out, b.msg_throughput_out, THROUGHPUT_RESOLUTION),
        (a.total_msg_rate(), b.total_msg_rate(), MSG_RATE_RESOLUTION),
        (a.topics_and_connections(), b.topics_and_connections(), TOPIC_CONNECTION_RESOLUTION),
        (a.cache_size, b.cache_size, CACHE_SIZE_RESOLUTION),
    )
    for left, right, resolution in steps:
        if abs(left - right) > resolution:
            return _sign(left, right)
    return 0
