"""Ring changes the balancer decides: split a bundle too hot for any broker, merge cold neighbours.

**Split** -- a bundle whose load alone is above the target on every broker it may go to cannot be
balanced by moving it (wherever it lands, that broker is over target): it is split with the
configured ``defaultNamespaceBundleSplitAlgorithm`` (:func:`~brokerlb.loadbalance.split.split_boundaries`),
unless it has fewer than two topics (a topic is the smallest unit, apache/pulsar#3419), its
namespace already has ``loadBalancerNamespaceMaximumBundles`` bundles, or the algorithm gives no
boundary offline. Reason ``OverTarget``.

**Merge** -- a namespace whose load needs fewer bundles than it has: with ``fill`` the largest
fraction of a split threshold a bundle uses (topics, sessions, message rate, throughput), it needs
``ceil(sum(fill) / brokerlbBalancerMergeMaxFill)`` bundles, never fewer than
``defaultNumberOfNamespaceBundles``. Two adjacent bundles on the same broker merge when neither
moved recently and the merged fill stays under ``brokerlbBalancerMergeMaxFill`` (so the split check
will not split it again); at most ``brokerlbBalancerMaxMergesPerCycle`` per cycle, each bundle in at
most one. Reason ``ColdBundles``.

Worked example: namespace ``t/cold`` with 8 bundles of 100 msg/s each on one broker, thresholds of
30,000 msg/s, max fill 0.1, default 4 bundles: fill 8 x 0.0033 = 0.027, so it needs
``max(4, 1) = 4`` bundles; the first two adjacent pairs merge this cycle (max 2), merged fill 0.0067.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from brokerlb.loadbalance.balancer.model import ClusterModel
from brokerlb.loadbalance.decisions import Label, MergeDecision, Reason, SplitDecision
from brokerlb.loadbalance.split.thresholds import (
    SplitThresholds,
    parse_bundle,
    range_bounds,
    split_boundaries,
)
from brokerlb.loadbalance.view import ClusterView

__all__ = ["split_decision", "plan_merges", "bundle_fill", "overlapping"]


def split_decision(
    view: ClusterView, model: ClusterModel, k: int, load: float, target: float
) -> SplitDecision:
    """Split hot bundle ``k`` (``load`` on the lightest broker it may go to, above ``target``)."""
    conf = view.config
    name = model.bundles[k]
    detail = f"load {load:.3f} alone is above the target {target:.3f} on every broker it may go to"
    topics = int(model.topics[k])
    if topics < 2:
        return SplitDecision(
            name, (), Label.SKIP, Reason.SINGLE_TOPIC, f"{detail}; {topics} topic: cannot split"
        )
    namespace = view.namespace_of(name)
    if view.bundle_count(namespace) >= conf.loadBalancerNamespaceMaximumBundles:
        return SplitDecision(
            name,
            (),
            Label.SKIP,
            Reason.TOO_MANY_BUNDLES,
            f"{detail}; {namespace} has loadBalancerNamespaceMaximumBundles bundles",
        )
    parsed = parse_bundle(name)
    boundaries = split_boundaries(parsed, conf) if parsed is not None else None
    if not boundaries:
        return SplitDecision(
            name,
            (),
            Label.FAILURE,
            Reason.INVALID_BUNDLE,
            f"{detail}; {conf.defaultNamespaceBundleSplitAlgorithm} gives no boundary here",
        )
    return SplitDecision(name, tuple(boundaries), Label.SUCCESS, Reason.OVER_TARGET, detail)


def overlapping(bundles: Sequence[str], ranges: Iterable[str]) -> np.ndarray:
    """(m,) whether each of ``bundles`` overlaps one of ``ranges`` (bundle names) of its namespace."""
    out = np.zeros(len(bundles), dtype=bool)
    by_namespace: dict[str, list[tuple[int, int]]] = {}
    for name in ranges:
        bounds = range_bounds(name)
        if bounds is not None:
            by_namespace.setdefault(name.rpartition("/")[0], []).append(bounds)
    if not by_namespace:
        return out
    for k, name in enumerate(bundles):
        recorded = by_namespace.get(name.rpartition("/")[0])
        if not recorded:
            continue
        bounds = range_bounds(name)
        if bounds is not None and any(lo < bounds[1] and bounds[0] < up for lo, up in recorded):
            out[k] = True
    return out


def bundle_fill(model: ClusterModel, thresholds: SplitThresholds) -> np.ndarray:
    """(m,) the largest fraction of a split threshold each bundle uses."""
    fills = [
        model.topics / max(thresholds.max_topics, 1),
        model.msg_rate / max(thresholds.max_msg_rate, 1e-9),
        model.throughput / max(thresholds.max_bandwidth_bytes, 1e-9),
    ]
    if thresholds.max_sessions > 0:
        fills.append(model.sessions / thresholds.max_sessions)
    return np.asarray(np.max(np.vstack(fills), axis=0)) if len(model.bundles) else np.zeros(0)


def plan_merges(
    view: ClusterView,
    model: ClusterModel,
    movable: np.ndarray,
    *,
    limit: int,
    conf: Any,
) -> list[MergeDecision]:
    """Merges of cold adjacent bundles (module docstring), at most ``limit``."""
    if limit <= 0 or not len(model.bundles):
        return []
    thresholds = SplitThresholds.from_config(conf)
    max_fill = conf.brokerlbBalancerMergeMaxFill
    fill = bundle_fill(model, thresholds)
    by_namespace: dict[str, list[int]] = {}
    for k, name in enumerate(model.bundles):
        by_namespace.setdefault(name.rpartition("/")[0], []).append(k)
    merges: list[MergeDecision] = []
    for namespace in sorted(by_namespace):
        if view.is_system_namespace(namespace):
            continue
        ks = by_namespace[namespace]
        count = view.bundle_count(namespace)
        needed = max(conf.defaultNumberOfNamespaceBundles, math.ceil(float(fill[ks].sum()) / max_fill))
        if count <= needed:
            continue
        merges.extend(
            _merges_of(model, ks, fill, movable, max_fill, min(limit - len(merges), count - needed))
        )
        if len(merges) >= limit:
            break
    return merges


def _merges_of(
    model: ClusterModel, ks: Sequence[int], fill: np.ndarray, movable: np.ndarray, max_fill: float, limit: int
) -> list[MergeDecision]:
    ranged = []
    for k in ks:
        bounds = range_bounds(model.bundles[k])
        if bounds is not None:
            ranged.append((bounds, k))
    ranged.sort()
    out: list[MergeDecision] = []
    i = 0
    while i + 1 < len(ranged) and len(out) < limit:
        (lo_a, up_a), a = ranged[i]
        (lo_b, up_b), b = ranged[i + 1]
        merged_fill = _merged_fill(model, a, b, fill)
        if (
            up_a == lo_b
            and model.owner[a] == model.owner[b]
            and movable[a]
            and movable[b]
            and merged_fill <= max_fill
        ):
            out.append(
                MergeDecision(
                    (model.bundles[a], model.bundles[b]),
                    Label.SUCCESS,
                    Reason.COLD_BUNDLES,
                    f"both on {model.brokers[int(model.owner[a])]}; merged fill {merged_fill:.4f} <= "
                    f"{max_fill:g} of the split thresholds",
                )
            )
            i += 2
        else:
            i += 1
    return out


def _merged_fill(model: ClusterModel, a: int, b: int, fill: np.ndarray) -> float:
    """An upper bound of the merged bundle's fill: the sum of the parts' fills (each threshold
    is additive, so the merged fill is at most the sum of the parts' largest ones)."""
    return float(fill[a] + fill[b])
