"""Bundle advice from topic-level load (pure numpy): balanced splits, merges of cold bundles, bundle counts.

Goal: one plan that leaves every bundle of a namespace under Pulsar's split thresholds with
headroom, in one round, instead of the several rounds ``range_equally_divide`` or
``topic_count_equally_divide`` need when one topic dominates (Pulsar #13761, #16782).

**Load.** Each topic's load is a vector of four fractions of the bundle limits (config keys
read, Pulsar's names; a limit ``<= 0`` disables its dimension):

==============================================  ==============================================
msg rate in + out                               ``loadBalancerNamespaceBundleMaxMsgRate``
throughput in + out                             ``loadBalancerNamespaceBundleMaxBandwidthMbytes`` (MiB/s)
1 (the topic itself)                            ``loadBalancerNamespaceBundleMaxTopics``
producers + consumers                           ``loadBalancerNamespaceBundleMaxSessions``
==============================================  ==============================================

A set of topics has the load of its vector sum, and its *fill* is the largest component: a
bundle is **hot** when its fill is above 1 (any threshold passed, Pulsar's ``BundleSplitterTask``
rule), **cold** when below ``cold_fill``.

**Splits.** Topics with equal hashes cannot be separated; they form one unit. A unit whose
fill is at least ``isolate_fraction`` gets a bundle of its own (a hot topic ends up alone).
The others are cut into contiguous runs (by hash) with the fewest children that keep each child
at most ``target_fill``; then, for that number of children, the largest child is made as small
as possible (bisection on the cap, greedy packing with cumulative sums -- optimal for contiguous
runs). Boundaries sit between neighbouring topic hashes, ``h[i-1] + (h[i] - h[i-1]) // 2 + 1``
(as ``flow_or_qps_equally_divide``). The namespace never goes beyond
``loadBalancerNamespaceMaximumBundles``; with too small a budget, the split uses the children
it may have and balances them. A hot bundle with a single unit cannot be split: the advice
says to partition the topic (Pulsar #3419).

**Merges.** Runs of adjacent cold bundles (that are not being split) merge while the merged
fill stays at most ``merge_fill``; the namespace keeps at least its floor: ``min_bundles``, and
no fewer bundles than the brokers eligible for it (``brokers``) can share -- fewer bundles than
brokers leaves brokers the namespace cannot use (Pulsar itself never merges).

**Bundle count.** ``advisedBundles = ceil(namespace fill / target_fill)``, at least the floor,
within ``[1, loadBalancerNamespaceMaximumBundles]``.

Worked example (limits 30 000 msg/s, 100 MiB/s, 1000 topics, 1000 sessions; ``target_fill`` 0.8):
bundle ``0x00000000_0x40000000`` holds topic A at 25 000 msg/s and 20 topics at 1 000 msg/s,
10 on each side of A's hash: fill 1.5, hot. A's fill is 0.83 ≥ ``isolate_fraction`` 0.5, so A
is alone; each side (10 000 msg/s, fill 0.33) fits one child: 3 children at fills 0.33, 0.83,
0.33. ``range_equally_divide`` would leave A with one side (fill 1.17, still hot) and need a
second round; ``topic_count_equally_divide`` likewise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brokerlb.naming import is_system_service_namespace
from brokerlb.plan.format import MergeOp, SplitOp
from brokerlb.ring import format_range

__all__ = [
    "BundleLimits",
    "AdvisorOptions",
    "TopicLoads",
    "ChildLoad",
    "NamespacePlan",
    "plan_namespace",
    "split_points",
    "children_loads",
]

_MIB = 1024 * 1024
_EPS = 1e-12


@dataclass(frozen=True)
class BundleLimits:
    """Pulsar's bundle split thresholds (defaults = broker.conf defaults)."""

    max_topics: int = 1000
    max_sessions: int = 1000
    max_msg_rate: float = 30000
    max_bandwidth_mbytes: float = 100
    max_bundles: int = 128

    @classmethod
    def from_config(cls, config: Any) -> BundleLimits:
        """From a :class:`brokerlb.config.ServiceConfig` (Pulsar's key names)."""
        return cls(
            max_topics=config.loadBalancerNamespaceBundleMaxTopics,
            max_sessions=config.loadBalancerNamespaceBundleMaxSessions,
            max_msg_rate=config.loadBalancerNamespaceBundleMaxMsgRate,
            max_bandwidth_mbytes=config.loadBalancerNamespaceBundleMaxBandwidthMbytes,
            max_bundles=config.loadBalancerNamespaceMaximumBundles,
        )

    def divisors(self) -> np.ndarray:
        """Per dimension (rate, throughput, topics, sessions); ``inf`` disables a dimension."""
        values = (self.max_msg_rate, self.max_bandwidth_mbytes * _MIB, self.max_topics, self.max_sessions)
        return np.array([v if v > 0 else math.inf for v in values], dtype=np.float64)

    def to_json(self) -> dict[str, Any]:
        return {
            "loadBalancerNamespaceBundleMaxTopics": self.max_topics,
            "loadBalancerNamespaceBundleMaxSessions": self.max_sessions,
            "loadBalancerNamespaceBundleMaxMsgRate": self.max_msg_rate,
            "loadBalancerNamespaceBundleMaxBandwidthMbytes": self.max_bandwidth_mbytes,
            "loadBalancerNamespaceMaximumBundles": self.max_bundles,
        }


@dataclass(frozen=True)
class AdvisorOptions:
    """Tuning of the advice (fractions of the bundle limits)."""

    target_fill: float = 0.8
    isolate_fraction: float = 0.5
    cold_fill: float = 0.1
    merge_fill: float = 0.5
    min_bundles: int = 1
    #: brokers eligible for the namespace's bundles: it keeps at least this many (0: not known)
    brokers: int = 0
    unload: bool = True
    #: ``recommend`` places each split's children on the lightest brokers (transfers in the plan)
    #: instead of unloading them for the cluster's placement (``brokerlb.pipeline.placement``)
    place: bool = True

    def __post_init__(self) -> None:
        from brokerlb.errors import InvalidInputError

        if not 0 < self.target_fill <= 1:
            raise InvalidInputError(f"target_fill must be in (0, 1], got {self.target_fill}")
        if not 0 < self.isolate_fraction:
            raise InvalidInputError(f"isolate_fraction must be positive, got {self.isolate_fraction}")
        if not 0 <= self.cold_fill <= self.merge_fill <= 1:
            raise InvalidInputError(
                f"need 0 <= cold_fill <= merge_fill <= 1, got {self.cold_fill}, {self.merge_fill}"
            )
        if self.min_bundles < 1:
            raise InvalidInputError(f"min_bundles must be at least 1, got {self.min_bundles}")
        if self.brokers < 0:
            raise InvalidInputError(f"brokers must be at least 0, got {self.brokers}")

    @property
    def floor(self) -> int:
        """The fewest bundles a namespace is advised to keep: ``min_bundles``, and one per eligible broker."""
        return max(self.min_bundles, self.brokers)

    def to_json(self) -> dict[str, Any]:
        return {
            "targetFill": self.target_fill,
            "isolateFraction": self.isolate_fraction,
            "coldFill": self.cold_fill,
            "mergeFill": self.merge_fill,
            "minBundles": self.min_bundles,
            "brokers": self.brokers,
            "unload": self.unload,
            "place": self.place,
        }


@dataclass(frozen=True)
class TopicLoads:
    """Per-topic load of one namespace (arrays of equal length)."""

    hashes: np.ndarray  #: ``crc32`` of the full name
    msg_rate: np.ndarray  #: msgRateIn + msgRateOut
    throughput: np.ndarray  #: msgThroughputIn + msgThroughputOut (bytes/s)
    sessions: np.ndarray  #: producers + consumers
    names: Sequence[str] | None = None

    @classmethod
    def of(
        cls,
        hashes: Sequence[int],
        msg_rate: Sequence[float],
        throughput: Sequence[float],
        sessions: Sequence[float],
        names: Sequence[str] | None = None,
    ) -> TopicLoads:
        return cls(
            np.asarray(hashes, dtype=np.int64),
            np.asarray(msg_rate, dtype=np.float64),
            np.asarray(throughput, dtype=np.float64),
            np.asarray(sessions, dtype=np.float64),
            names,
        )

    def vectors(self, limits: BundleLimits) -> np.ndarray:
        """``(n, 4)`` loads as fractions of the limits."""
        raw = np.column_stack([self.msg_rate, self.throughput, np.ones(len(self.hashes)), self.sessions])
        return raw / limits.divisors()


@dataclass(frozen=True)
class ChildLoad:
    """Expected load of a bundle (child of a split, or result of a merge)."""

    range: str
    topics: int
    msg_rate: float
    throughput: float
    sessions: float
    fill: float

    def to_json(self) -> dict[str, Any]:
        return {
            "range": self.range,
            "topics": self.topics,
            "msgRate": round(self.msg_rate, 6),
            "msgThroughput": round(self.throughput, 3),
            "sessions": round(self.sessions, 3),
            "fill": round(self.fill, 6),
        }


@dataclass
class NamespacePlan:
    namespace: str
    splits: list[SplitOp] = field(default_factory=list)
    merges: list[MergeOp] = field(default_factory=list)
    advice: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- splitting one bundle


def _segments(cum: np.ndarray, lo: int, hi: int, cap: float) -> list[int]:
    """Greedy maximal runs of units ``[lo, hi)`` with every dimension's sum <= cap; returns the run ends."""
    ends = []
    s = lo
    while s < hi:
        limit = cum[s] + cap + _EPS
        e = min(int(np.searchsorted(cum[:, d], limit[d], side="right")) - 1 for d in range(cum.shape[1]))
        e = min(max(e, s + 1), hi)  # a unit above the cap stands alone
        ends.append(e)
        s = e
    return ends


def _runs(forced: np.ndarray) -> tuple[list[tuple[int, int]], list[int]]:
    """Runs of non-forced units and the forced unit indices."""
    runs, start = [], 0
    forced_idx = np.flatnonzero(forced).tolist()
    for f in forced_idx:
        if f > start:
            runs.append((start, f))
        start = f + 1
    if start < len(forced):
        runs.append((start, len(forced)))
    return runs, forced_idx


def _count(cum: np.ndarray, runs: list[tuple[int, int]], cap: float) -> int:
    return sum(len(_segments(cum, a, b, cap)) for a, b in runs)


def _partition(units: np.ndarray, forced: np.ndarray, target: float, max_children: int) -> list[int] | None:
    """Unit indices where a new child starts (excluding 0), or ``None`` when no split helps."""
    runs, forced_idx = _runs(forced)
    cum = np.vstack([np.zeros((1, units.shape[1])), np.cumsum(units, axis=0)])
    needed = len(forced_idx) + _count(cum, runs, target)
    if needed > max_children:
        if len(forced_idx) + len(runs) > max_children:  # no room to isolate: balance all units instead
            return _partition(units, np.zeros(len(units), dtype=bool), target, max_children)
        needed = max_children
    if needed < 2:
        return None
    lo = max((float(units[i].max()) for a, b in runs for i in range(a, b)), default=0.0)
    hi = max((float((cum[b] - cum[a]).max()) for a, b in runs), default=0.0)
    hi = max(hi, lo)
    if runs and _count(cum, runs, lo) + len(forced_idx) <= needed:
        hi = lo
    for _ in range(60):
        if hi - lo <= 1e-9 * max(hi, 1e-300):
            break
        mid = (lo + hi) / 2
        if _count(cum, runs, mid) + len(forced_idx) <= needed:
            hi = mid
        else:
            lo = mid
    starts: set[int] = set()
    for a, b in runs:
        starts.add(a)
        starts.update(e for e in _segments(cum, a, b, hi)[:-1])
    for f in forced_idx:
        starts.add(f)
        if f + 1 < len(units):
            starts.add(f + 1)
    starts.discard(0)
    return sorted(starts)


def split_points(
    lower: int,
    upper: int,
    hashes: np.ndarray,
    loads: np.ndarray,
    *,
    max_children: int,
    options: AdvisorOptions,
) -> list[int] | None:
    """Split boundaries for a bundle ``[lower, upper)`` holding topics with ``hashes`` and ``loads`` (``(n, 4)`` fractions).

    ``None`` when no useful split exists (fewer than two units, or ``max_children < 2``).
    """
    if len(hashes) == 0 or max_children < 2:
        return None
    order = np.argsort(hashes, kind="stable")
    h = hashes[order]
    unit_hashes, first = np.unique(h, return_index=True)
    if len(unit_hashes) < 2:
        return None
    units = np.add.reduceat(loads[order], first, axis=0)
    forced = units.max(axis=1) >= options.isolate_fraction
    starts = _partition(units, forced, options.target_fill, max_children)
    if not starts:
        return None
    points = []
    for i in starts:
        a, b = int(unit_hashes[i - 1]), int(unit_hashes[i])
        point = a + (b - a) // 2 + 1
        if lower < point < upper:
            points.append(point)
    return sorted(set(points)) or None


def children_loads(
    lower: int, upper: int, points: Sequence[int], hashes: np.ndarray, topics: TopicLoads, vectors: np.ndarray
) -> list[ChildLoad]:
    """The expected load of each child of ``[lower, upper)`` split at ``points``."""
    edges = [lower, *points, upper]
    out = []
    for a, b in zip(edges, edges[1:], strict=False):
        last = b == edges[-1]
        mask = (hashes >= a) & ((hashes <= b) if last and b == 0xFFFFFFFF else (hashes < b))
        out.append(_load(format_range(a, b), mask, topics, vectors))
    return out


def _load(name: str, mask: np.ndarray, topics: TopicLoads, vectors: np.ndarray) -> ChildLoad:
    total = vectors[mask].sum(axis=0) if mask.any() else np.zeros(4)
    return ChildLoad(
        name,
        int(mask.sum()),
        float(topics.msg_rate[mask].sum()),
        float(topics.throughput[mask].sum()),
        float(topics.sessions[mask].sum()),
        float(total.max()),
    )


# --------------------------------------------------------------------------- a namespace


def _bundle_masks(boundaries: Sequence[int], hashes: np.ndarray) -> np.ndarray:
    """Bundle index of each hash (the last bundle includes 0xffffffff)."""
    bounds = np.asarray(boundaries, dtype=np.int64)
    idx = np.searchsorted(bounds, hashes, side="right") - 1
    return np.minimum(idx, len(bounds) - 2)


def plan_namespace(
    namespace: str,
    boundaries: Sequence[int],
    topics: TopicLoads,
    limits: BundleLimits = BundleLimits(),
    options: AdvisorOptions = AdvisorOptions(),
) -> NamespacePlan:
    """Splits, merges and bundle-count advice for one namespace (see the module docstring)."""
    plan = NamespacePlan(namespace)
    bounds = [int(b) for b in boundaries]
    n_bundles = len(bounds) - 1
    vectors = topics.vectors(limits)
    which = _bundle_masks(bounds, topics.hashes) if len(topics.hashes) else np.zeros(0, dtype=np.int64)
    loads = [
        _load(format_range(bounds[i], bounds[i + 1]), which == i, topics, vectors) for i in range(n_bundles)
    ]
    notes: list[str] = []
    system = is_system_service_namespace(namespace)
    budget = max(0, limits.max_bundles - n_bundles)
    split_idx: set[int] = set()
    for i in sorted(range(n_bundles), key=lambda k: -loads[k].fill):
        load = loads[i]
        if system or load.fill <= 1.0:
            break
        mask = which == i
        points = split_points(
            bounds[i],
            bounds[i + 1],
            topics.hashes[mask],
            vectors[mask],
            max_children=budget + 1,
            options=options,
        )
        if points is None:
            if len(np.unique(topics.hashes[mask])) < 2:
                hot = _hottest(topics, mask, vectors)
                notes.append(
                    f"bundle {load.range} is over the limits (fill {load.fill:.2f}) with a single topic {hot}: "
                    "splitting cannot help, partition the topic"
                )
            else:
                notes.append(
                    f"bundle {load.range} is over the limits (fill {load.fill:.2f}) but the namespace is at "
                    f"loadBalancerNamespaceMaximumBundles ({limits.max_bundles})"
                )
            continue
        kids = children_loads(
            bounds[i], bounds[i + 1], points, topics.hashes[mask], _subset(topics, mask), vectors[mask]
        )
        budget -= len(points)
        split_idx.add(i)
        isolated = [k for k in kids if k.topics == 1 and k.fill >= options.isolate_fraction]
        reason = (
            f"fill {load.fill:.2f} > 1 ({_dominant(load, limits)}); {len(kids)} children, "
            f"max fill {max(k.fill for k in kids):.2f}"
        )
        if isolated:
            reason += f"; {len(isolated)} hot topic(s) alone"
        plan.splits.append(
            SplitOp(namespace, load.range, tuple(points), options.unload, reason, [k.to_json() for k in kids])
        )
        for k in kids:
            if k.fill > 1.0 and k.topics == 1:
                notes.append(
                    f"topic {_hottest(topics, _range_mask(topics.hashes, k.range), vectors)} alone is over "
                    f"the limits (fill {k.fill:.2f}): partition it"
                )
    after = n_bundles + sum(len(s.boundaries) for s in plan.splits)
    if not system:
        after = _merges(plan, bounds, loads, split_idx, after, topics, vectors, options)
    total = vectors.sum(axis=0) if len(vectors) else np.zeros(4)
    fill = float(total.max())
    plan.advice = {
        "namespace": namespace,
        "currentBundles": n_bundles,
        "advisedBundles": int(
            min(max(1, options.floor, math.ceil(fill / options.target_fill - 1e-9)), limits.max_bundles)
        ),
        "floor": options.floor,
        "bundlesAfterPlan": after,
        "hotBundles": sum(1 for x in loads if x.fill > 1.0),
        "coldBundles": sum(1 for x in loads if x.fill < options.cold_fill),
        "load": {
            "topics": len(topics.hashes),
            "msgRate": round(float(topics.msg_rate.sum()), 6),
            "msgThroughput": round(float(topics.throughput.sum()), 3),
            "sessions": round(float(topics.sessions.sum()), 3),
            "fill": round(fill, 6),
        },
        "notes": notes,
    }
    if system:
        plan.advice["notes"].append("system namespace: never split or merged")
    return plan


def _merges(
    plan: NamespacePlan,
    bounds: list[int],
    loads: list[ChildLoad],
    split_idx: set[int],
    count: int,
    topics: TopicLoads,
    vectors: np.ndarray,
    options: AdvisorOptions,
) -> int:
    i = 0
    n = len(loads)
    while i < n:
        if i in split_idx or loads[i].fill >= options.cold_fill:
            i += 1
            continue
        j = i + 1
        while (
            j < n
            and j not in split_idx
            and loads[j].fill < options.cold_fill
            and count - (j - i) >= options.floor
        ):
            mask = (topics.hashes >= bounds[i]) & _upper_mask(topics.hashes, bounds[j + 1])
            if float(vectors[mask].sum(axis=0).max() if mask.any() else 0.0) > options.merge_fill:
                break
            j += 1
        if j - i >= 2:
            ranges = tuple(format_range(bounds[k], bounds[k + 1]) for k in range(i, j))
            mask = (topics.hashes >= bounds[i]) & _upper_mask(topics.hashes, bounds[j])
            merged = _load(format_range(bounds[i], bounds[j]), mask, topics, vectors)
            plan.merges.append(
                MergeOp(
                    plan.namespace,
                    ranges,
                    f"{j - i} adjacent cold bundles (fill < {options.cold_fill}); merged fill {merged.fill:.3f}",
                    merged.to_json(),
                )
            )
            count -= j - i - 1
        i = j
    return count


def _upper_mask(hashes: np.ndarray, upper: int) -> np.ndarray:
    return hashes <= upper if upper == 0xFFFFFFFF else hashes < upper


def _range_mask(hashes: np.ndarray, rng: str) -> np.ndarray:
    lo_s, _, hi_s = rng.partition("_")
    lo, hi = int(lo_s, 16), int(hi_s, 16)
    return (hashes >= lo) & _upper_mask(hashes, hi)


def _subset(topics: TopicLoads, mask: np.ndarray) -> TopicLoads:
    names = None if topics.names is None else [n for n, m in zip(topics.names, mask, strict=True) if m]
    return TopicLoads(
        topics.hashes[mask], topics.msg_rate[mask], topics.throughput[mask], topics.sessions[mask], names
    )


def _hottest(topics: TopicLoads, mask: np.ndarray, vectors: np.ndarray) -> str:
    idx = np.flatnonzero(mask)
    if len(idx) == 0:
        return "?"
    best = int(idx[np.argmax(vectors[idx].max(axis=1))])
    return topics.names[best] if topics.names is not None else f"hash 0x{int(topics.hashes[best]):08x}"


def _dominant(load: ChildLoad, limits: BundleLimits) -> str:
    parts = []
    if limits.max_msg_rate > 0 and load.msg_rate > limits.max_msg_rate:
        parts.append(f"msg rate {load.msg_rate:.0f} > {limits.max_msg_rate:g}")
    if limits.max_bandwidth_mbytes > 0 and load.throughput > limits.max_bandwidth_mbytes * _MIB:
        parts.append(f"throughput {load.throughput / _MIB:.1f} MiB/s > {limits.max_bandwidth_mbytes:g}")
    if limits.max_topics > 0 and load.topics > limits.max_topics:
        parts.append(f"topics {load.topics} > {limits.max_topics}")
    if limits.max_sessions > 0 and load.sessions > limits.max_sessions:
        parts.append(f"sessions {load.sessions:.0f} > {limits.max_sessions}")
    return ", ".join(parts) or "limits"
