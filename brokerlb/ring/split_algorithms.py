"""Where to split a bundle: Pulsar's four ``NamespaceBundleSplitAlgorithm``\\ s, by name.

Each algorithm takes a :class:`BundleSplitOption` and returns the split boundaries
(a sorted list) or ``None`` when it finds no valid boundary -- in Pulsar the split
then completes as a no-op ("No valid boundary found"). Applying the boundaries
(``NamespaceBundles.split``) is separate and rejects points not strictly inside.

==============================  ===========================================================
name                            rule
==============================  ===========================================================
``range_equally_divide``        ``lower + (upper - lower) // 2``
``topic_count_equally_divide``  midpoint between the two middle topic hashes; ``None`` when
                                the bundle has ≤ 1 topic
``specified_positions_divide``  the given positions strictly inside the bundle; ``None``
                                when the bundle has ≤ 1 topic or no position fits
``flow_or_qps_equally_divide``  PIP-169: walk topics by hash, cut where the accumulated
                                rate or throughput would pass the bundle limits (``+1``)
==============================  ===========================================================

>>> from brokerlb.ring.bundles import NamespaceBundles
>>> full = NamespaceBundles.create("t/ns", 1).bundles[0]
>>> hex(RangeEquallyDivide().split_boundaries(BundleSplitOption(full))[0])
'0x7fffffff'

:func:`split_boundaries` is the one-call form: an algorithm by Pulsar's name, a bundle, the
inputs as keywords.

>>> [hex(b) for b in split_boundaries("specified_positions_divide", "t/ns/0x00000000_0xffffffff",
...                                    topics=["a", "b"], positions=[0x40000000, 0x80000000])]
['0x40000000', '0x80000000']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from brokerlb.errors import InvalidSplitError, UnknownStrategyError
from brokerlb.naming import TopicName
from brokerlb.ring.bundles import NamespaceBundle
from brokerlb.ring.hashing import topic_hash

__all__ = [
    "RANGE_EQUALLY_DIVIDE",
    "TOPIC_COUNT_EQUALLY_DIVIDE",
    "SPECIFIED_POSITIONS_DIVIDE",
    "SPECIFIED_POSITIONS_DIVIDE_FORCE",
    "FLOW_OR_QPS_EQUALLY_DIVIDE",
    "SUPPORTED_SPLIT_ALGORITHMS",
    "TopicRates",
    "BundleSplitOption",
    "NamespaceBundleSplitAlgorithm",
    "RangeEquallyDivide",
    "TopicCountEquallyDivide",
    "SpecifiedPositionsDivide",
    "FlowOrQpsEquallyDivide",
    "get_split_algorithm",
    "resolve_split_algorithm",
    "split_boundaries",
]

RANGE_EQUALLY_DIVIDE = "range_equally_divide"
TOPIC_COUNT_EQUALLY_DIVIDE = "topic_count_equally_divide"
SPECIFIED_POSITIONS_DIVIDE = "specified_positions_divide"
SPECIFIED_POSITIONS_DIVIDE_FORCE = "specified_positions_divide_force"
FLOW_OR_QPS_EQUALLY_DIVIDE = "flow_or_qps_equally_divide"

#: Pulsar's default ``supportedNamespaceBundleSplitAlgorithms``.
SUPPORTED_SPLIT_ALGORITHMS = (
    RANGE_EQUALLY_DIVIDE,
    TOPIC_COUNT_EQUALLY_DIVIDE,
    SPECIFIED_POSITIONS_DIVIDE,
    FLOW_OR_QPS_EQUALLY_DIVIDE,
)

_MBYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class TopicRates:
    """A topic's traffic: ``msgRateIn + msgRateOut`` and ``msgThroughputIn + msgThroughputOut``."""

    msg_rate: float
    msg_throughput: float


@dataclass(frozen=True)
class BundleSplitOption:
    """What an algorithm may look at.

    ``topics``: full names of the bundle's topics (Pulsar's
    ``getOwnedTopicListForNamespaceBundle``); names outside the bundle are ignored.
    ``positions``: admin-given positions (``specified_positions_divide``).
    ``topic_rates``: per-topic traffic (``flow_or_qps_equally_divide``).
    The limits default to Pulsar's broker.conf defaults.
    """

    bundle: NamespaceBundle
    topics: Sequence[str] = ()
    positions: Sequence[int] = ()
    topic_rates: Mapping[str, TopicRates] = field(default_factory=dict)
    max_msg_rate: int = 30000  # loadBalancerNamespaceBundleMaxMsgRate
    max_bandwidth_mbytes: int = 100  # loadBalancerNamespaceBundleMaxBandwidthMbytes
    flow_or_qps_difference_threshold_percentage: int = 10  # flowOrQpsDifferenceThresholdPercentage

    def topics_in_bundle(self) -> list[str]:
        """De-duplicated full names of the given topics whose hash falls in the bundle."""
        seen: dict[str, None] = {}
        for name in self.topics:
            full = str(TopicName.parse(name))
            if full not in seen and self.bundle.includes_hash(topic_hash(full)):
                seen[full] = None
        return list(seen)


class NamespaceBundleSplitAlgorithm(Protocol):
    name: str

    def split_boundaries(self, option: BundleSplitOption) -> list[int] | None:
        """Sorted boundaries, or ``None`` when there is no valid boundary."""


class RangeEquallyDivide:
    """Cut the range in half: ``lower + (upper - lower) // 2``."""

    name = RANGE_EQUALLY_DIVIDE

    def split_boundaries(self, option: BundleSplitOption) -> list[int] | None:
        b = option.bundle
        return [b.lower + (b.upper - b.lower) // 2]


class TopicCountEquallyDivide:
    """Cut between the two middle topic hashes so each half holds half the topics.

    Hashes sorted ``h``; ``n = len(h)``; ``start = h[max(n//2 - 1, 0)]``,
    ``end = h[n//2]``; boundary ``start + (end - start) // 2``. ≤ 1 topic → ``None``.
    Equal hashes can put the boundary on a topic hash or the lower bound; applying
    such a boundary is then refused, as in Pulsar.
    """

    name = TOPIC_COUNT_EQUALLY_DIVIDE

    def split_boundaries(self, option: BundleSplitOption) -> list[int] | None:
        topics = option.topics_in_bundle()
        if len(topics) <= 1:
            return None
        hashes = sorted(topic_hash(t) for t in topics)
        n = len(hashes)
        start, end = hashes[max(n // 2 - 1, 0)], hashes[n // 2]
        return [start + (end - start) // 2]


class SpecifiedPositionsDivide:
    """The admin's positions that lie strictly inside the bundle (PIP-143).

    Empty positions are an error; ≤ 1 topic in the bundle, or no position inside,
    gives ``None``. ``force=True`` (the extensible load manager's internal
    ``specified_positions_divide_force``) skips the topic-count check.
    """

    def __init__(self, force: bool = False) -> None:
        self.force = force
        self.name = SPECIFIED_POSITIONS_DIVIDE_FORCE if force else SPECIFIED_POSITIONS_DIVIDE

    def split_boundaries(self, option: BundleSplitOption) -> list[int] | None:
        if not option.positions:
            raise InvalidSplitError("SplitBoundaries can't be empty")
        if not self.force and len(option.topics_in_bundle()) <= 1:
            return None
        b = option.bundle
        inside = sorted({int(p) for p in option.positions if b.lower < int(p) < b.upper})
        return inside or None


class FlowOrQpsEquallyDivide:
    """Cut so no child exceeds the bundle's message-rate or throughput limit (PIP-169).

    ``maxRate = loadBalancerNamespaceBundleMaxMsgRate``,
    ``maxBytes = loadBalancerNamespaceBundleMaxBandwidthMbytes * 2**20``,
    ``diff = flowOrQpsDifferenceThresholdPercentage / 100``.
    Topics with no traffic are ignored; fewer than 2 busy topics, or a bundle below
    both ``limit * (1 + diff)``, gives ``None``. Walking the busy topics by hash, the
    accumulated load is cut before topic ``i`` when it already exceeds a limit or
    would with topic ``i``; the boundary is ``h[i-1] + (h[i] - h[i-1]) // 2 + 1``
    (Pulsar's ``+1``). As in Pulsar, topics with equal hashes share one entry (the
    last one wins) but all count toward the bundle totals.
    """

    name = FLOW_OR_QPS_EQUALLY_DIVIDE

    def split_boundaries(self, option: BundleSplitOption) -> list[int] | None:
        topics = option.topics_in_bundle()
        if len(topics) <= 1:
            return None
        max_rate = option.max_msg_rate
        max_bytes = option.max_bandwidth_mbytes * _MBYTES
        diff = option.flow_or_qps_difference_threshold_percentage / 100.0
        bundle_rate = bundle_tput = 0.0
        info: dict[int, TopicRates] = {}
        hashes: list[int] = []
        for name in topics:
            rates = option.topic_rates.get(name)
            if rates is None or (rates.msg_rate <= 0 and rates.msg_throughput <= 0):
                continue
            h = topic_hash(name)
            hashes.append(h)
            info[h] = rates
            bundle_rate += rates.msg_rate
            bundle_tput += rates.msg_throughput
        if len(info) < 2 or (bundle_rate < max_rate * (1 + diff) and bundle_tput < max_bytes * (1 + diff)):
            return None
        hashes.sort()
        acc_rate, acc_tput = info[hashes[0]].msg_rate, info[hashes[0]].msg_throughput
        cuts: list[int] = []
        for i in range(1, len(hashes)):
            rate, tput = info[hashes[i]].msg_rate, info[hashes[i]].msg_throughput
            if (
                acc_rate > max_rate
                or acc_tput > max_bytes
                or acc_rate + rate > max_rate
                or acc_tput + tput > max_bytes
            ):
                start, end = hashes[i - 1], hashes[i]
                cuts.append(start + (end - start) // 2 + 1)
                acc_rate, acc_tput = rate, tput
            else:
                acc_rate += rate
                acc_tput += tput
        return cuts


_ALGORITHMS: dict[str, NamespaceBundleSplitAlgorithm] = {
    RANGE_EQUALLY_DIVIDE: RangeEquallyDivide(),
    TOPIC_COUNT_EQUALLY_DIVIDE: TopicCountEquallyDivide(),
    SPECIFIED_POSITIONS_DIVIDE: SpecifiedPositionsDivide(),
    SPECIFIED_POSITIONS_DIVIDE_FORCE: SpecifiedPositionsDivide(force=True),
    FLOW_OR_QPS_EQUALLY_DIVIDE: FlowOrQpsEquallyDivide(),
}


def get_split_algorithm(
    name: str, supported: Iterable[str] = SUPPORTED_SPLIT_ALGORITHMS
) -> NamespaceBundleSplitAlgorithm:
    """The algorithm named ``name``; :class:`UnknownStrategyError` when it is not supported.

    This is the admin REST check (Pulsar answers 412 "Unsupported namespace bundle
    split algorithm"); ``supported`` is ``supportedNamespaceBundleSplitAlgorithms``.
    """
    allowed = list(supported)
    if name not in allowed or name not in _ALGORITHMS:
        raise UnknownStrategyError(name, "bundle split", allowed)
    return _ALGORITHMS[name]


def resolve_split_algorithm(
    name: str | None, default: str = RANGE_EQUALLY_DIVIDE
) -> NamespaceBundleSplitAlgorithm:
    """Pulsar's lenient ``getNamespaceBundleSplitAlgorithmByName``.

    Exact name → that algorithm; ``None`` or unknown → ``default``; an unknown
    default → ``range_equally_divide``.
    """
    if name in _ALGORITHMS:
        return _ALGORITHMS[name]
    return _ALGORITHMS.get(default, _ALGORITHMS[RANGE_EQUALLY_DIVIDE])


def split_boundaries(
    algorithm: str,
    bundle: NamespaceBundle | str,
    *,
    topics: Sequence[str] = (),
    positions: Sequence[int] = (),
    topic_rates: Mapping[str, TopicRates] | None = None,
    max_msg_rate: int = 30000,
    max_bandwidth_mbytes: int = 100,
    flow_or_qps_difference_threshold_percentage: int = 10,
) -> list[int] | None:
    """The boundaries ``algorithm`` (Pulsar's name: ``range_equally_divide``,
    ``topic_count_equally_divide``, ``specified_positions_divide``,
    ``specified_positions_divide_force``, ``flow_or_qps_equally_divide``) finds for ``bundle``
    (a bundle or its full name) from the given inputs (:class:`BundleSplitOption`'s fields;
    the limits default to Pulsar's broker.conf defaults). ``None``: no valid boundary. An
    unknown name raises :class:`~brokerlb.errors.UnknownStrategyError`.
    """
    chosen = _ALGORITHMS.get(algorithm)
    if chosen is None:
        raise UnknownStrategyError(algorithm, "bundle split", list(_ALGORITHMS))
    option = BundleSplitOption(
        NamespaceBundle.parse(bundle) if isinstance(bundle, str) else bundle,
        topics=topics,
        positions=positions,
        topic_rates=topic_rates or {},
        max_msg_rate=max_msg_rate,
        max_bandwidth_mbytes=max_bandwidth_mbytes,
        flow_or_qps_difference_threshold_percentage=flow_or_qps_difference_threshold_percentage,
    )
    return chosen.split_boundaries(option)
