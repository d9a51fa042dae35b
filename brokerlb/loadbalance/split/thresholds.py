"""The split thresholds shared by both split strategies, and the boundary of a split.

Config keys read: ``loadBalancerNamespaceBundleMaxTopics`` (1000),
``loadBalancerNamespaceBundleMaxSessions`` (1000; ``<= 0`` disables),
``loadBalancerNamespaceBundleMaxMsgRate`` (30000 msg/s),
``loadBalancerNamespaceBundleMaxBandwidthMbytes`` (100 MB/s),
``loadBalancerNamespaceMaximumBundles`` (128), ``defaultNamespaceBundleSplitAlgorithm`` and
``flowOrQpsDifferenceThresholdPercentage``.

A bundle passes a threshold when it has more topics, more sessions (producers + consumers),
a higher message rate (in + out) or more throughput (in + out, bytes/s) than the limit. The
first one passing, in that order, is the decision's reason (Topics > Sessions > MsgRate >
Bandwidth, as Pulsar's extensible strategy reports it).

Boundaries: the split is cut where the configured default algorithm says
(:mod:`brokerlb.ring.split_algorithms`). ``range_equally_divide`` needs only the range;
``topic_count_equally_divide`` and ``flow_or_qps_equally_divide`` need the bundle's topic
names and per-topic rates, which a snapshot does not carry -- then no boundary is known.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from brokerlb.errors import BrokerLBError
from brokerlb.loadbalance.decisions import Reason
from brokerlb.ring.bundles import NamespaceBundle
from brokerlb.ring.split_algorithms import BundleSplitOption, TopicRates, resolve_split_algorithm

__all__ = ["MIBI", "SplitThresholds", "parse_bundle", "range_bounds", "split_boundaries"]

#: Bytes in a MiB (``LoadManagerShared.MIBI``).
MIBI = 1024 * 1024


@dataclass(frozen=True, slots=True)
class SplitThresholds:
    """The limits of the module docstring, read from a config."""

    max_topics: int = 1000
    max_sessions: int = 1000
    max_msg_rate: float = 30000
    max_bandwidth_bytes: float = 100 * MIBI
    max_bundles: int = 128

    @classmethod
    def from_config(cls, conf: Any) -> SplitThresholds:
        return cls(
            max_topics=conf.loadBalancerNamespaceBundleMaxTopics,
            max_sessions=conf.loadBalancerNamespaceBundleMaxSessions,
            max_msg_rate=conf.loadBalancerNamespaceBundleMaxMsgRate,
            max_bandwidth_bytes=conf.loadBalancerNamespaceBundleMaxBandwidthMbytes * MIBI,
            max_bundles=conf.loadBalancerNamespaceMaximumBundles,
        )

    def reason(self, topics: int, sessions: int, msg_rate: float, throughput: float) -> Reason | None:
        """The first threshold passed (Topics, Sessions, MsgRate, Bandwidth) or ``None``."""
        if topics > self.max_topics:
            return Reason.TOPICS
        if self.max_sessions > 0 and sessions > self.max_sessions:
            return Reason.SESSIONS
        if msg_rate > self.max_msg_rate:
            return Reason.MSG_RATE
        if throughput > self.max_bandwidth_bytes:
            return Reason.BANDWIDTH
        return None

    def describe(self, topics: int, sessions: int, msg_rate: float, throughput: float) -> str:
        """Pulsar's log numbers: ``Topics: 5/1000, Sessions: 3/1000, Message Rate: ..., Throughput: ...``."""
        return (
            f"Topics: {topics}/{self.max_topics}, Sessions: {sessions}/{self.max_sessions}, "
            f"Message Rate: {msg_rate:.2f}/{self.max_msg_rate:g} (msgs/s), "
            f"Message Throughput: {throughput / MIBI:.2f}/{self.max_bandwidth_bytes / MIBI:g} (MB/s)"
        )


_CANONICAL_RANGE = re.compile(r"0[xX]([0-9a-fA-F]{1,8})_0[xX]([0-9a-fA-F]{1,8})")


def range_bounds(bundle: str) -> tuple[int, int] | None:
    """``(lower, upper)`` of a bundle name's range, or ``None`` when it is not a valid range.

    Fast path for the usual ``0x%08x_0x%08x`` form (the split checks look at every bundle);
    other spellings (``Long.decode`` forms) go through :func:`parse_bundle`.
    """
    match = _CANONICAL_RANGE.fullmatch(bundle, bundle.rfind("/") + 1)
    if match is not None:
        lower, upper = int(match.group(1), 16), int(match.group(2), 16)
        return (lower, upper) if lower < upper else None
    parsed = parse_bundle(bundle)
    return None if parsed is None else (parsed.lower, parsed.upper)


def parse_bundle(bundle: str) -> NamespaceBundle | None:
    """The bundle's namespace and range, or ``None`` for an opaque name (e.g. ``bundle-1``)."""
    try:
        return NamespaceBundle.parse(bundle)
    except BrokerLBError:
        return None


def split_boundaries(
    bundle: NamespaceBundle,
    conf: Any,
    *,
    topics: tuple[str, ...] = (),
    topic_rates: Mapping[str, TopicRates] | None = None,
) -> list[int] | None:
    """Boundaries from ``defaultNamespaceBundleSplitAlgorithm`` (``None``: no valid boundary)."""
    algorithm = resolve_split_algorithm(conf.defaultNamespaceBundleSplitAlgorithm)
    option = BundleSplitOption(
        bundle,
        topics=topics,
        topic_rates=dict(topic_rates or {}),
        max_msg_rate=conf.loadBalancerNamespaceBundleMaxMsgRate,
        max_bandwidth_mbytes=conf.loadBalancerNamespaceBundleMaxBandwidthMbytes,
        flow_or_qps_difference_threshold_percentage=conf.flowOrQpsDifferenceThresholdPercentage,
    )
    boundaries = algorithm.split_boundaries(option)
    return list(boundaries) if boundaries else None
