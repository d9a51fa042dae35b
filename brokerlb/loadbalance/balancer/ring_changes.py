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
moved recently, the merged fill stays under ``brokerlbBalancerMergeMaxFill`` (so the split check
will not split it again) and the merged load -- on the broker where it weighs least -- is at most
:data:`MERGE_LOAD_FRACTION` of the load the balancer splits a bundle at (the target, and at least
the idle threshold: so the balancer will not split it again either, where brokers are small for
the split thresholds); at most ``brokerlbBalancerMaxMergesPerCycle`` per cycle, each bundle in at
most one. Reason ``ColdBundles``.

Worked example: namespace ``t/cold`` with 8 bundles of 100 msg/s each on one broker, thresholds of
30,000 msg/s, max fill 0.1, default 4 bundles: fill 8 x 0.0033 = 0.027, so it needs
``max(4, 1) = 4`` bundles; the first two adjacent pairs merge this cycle (max 2), merged fill 0.0067.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
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

__all__ = ["split_decision", "plan_merges", "bundle_fill", "overlapping", "MERGE_LOAD_FRACTION"]

#: a merged bundle weighs at most this fraction of the load the balancer splits a bundle at
MERGE_LOAD_FRACTION = 0.5


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


def overlapping(model: ClusterModel, ranges: Iterable[str]) -> np.ndarray:
    """(m,) whether each of the model's bundles overlaps one of ``ranges`` (bundle names) of its
    namespace."""
    out = np.zeros(len(model.bundles), dtype=bool)
    ids = {name: i for i, name in enumerate(model.namespaces)}
    lower, upper = model.bounds[:, 0], model.bounds[:, 1]
    for name in ranges:
        ns = ids.get(name.rpartition("/")[0])
        bounds = range_bounds(name)
        if ns is None or bounds is None:
            continue
        out |= (model.ns_id == ns) & (lower < bounds[1]) & (bounds[0] < upper)
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
    loads: np.ndarray | None = None,
    max_load: float = math.inf,
) -> list[MergeDecision]:
    """Merges of cold adjacent bundles (module docstring), at most ``limit``: namespaces in name
    order; within one, the adjacent pairs in ring order, a pair taken unless its first bundle is
    the second of the pair taken just before. ``loads``: each bundle's load where it weighs least
    (:meth:`ClusterModel.lightest_contributions`); a pair whose summed load is above ``max_load``
    is not merged."""
    if limit <= 0 or not len(model.bundles):
        return []
    thresholds = SplitThresholds.from_config(conf)
    max_fill = conf.brokerlbBalancerMergeMaxFill
    fill = bundle_fill(model, thresholds)
    count = len(model.namespaces)
    fill_sum = np.bincount(model.ns_id, weights=fill, minlength=count)
    reported = np.bincount(model.ns_id, minlength=count)
    needed = np.maximum(conf.defaultNumberOfNamespaceBundles, np.ceil(fill_sum / max_fill)).astype(np.int64)
    surplus: dict[int, int] = {}
    for ns in map(int, np.flatnonzero(reported)):
        namespace = model.namespaces[ns]
        if view.is_system_namespace(namespace):
            continue
        extra = view.bundle_count(namespace) - int(needed[ns])
        if extra > 0:
            surplus[ns] = extra
    if not surplus:
        return []
    order = model.layout.merge_order()
    a, b = order[:-1], order[1:]
    ok = (
        (model.ns_id[a] == model.ns_id[b])
        & (model.bounds[a, 1] == model.bounds[b, 0])
        & (model.owner[a] == model.owner[b])
        & movable[a]
        & movable[b]
        & (fill[a] + fill[b] <= max_fill)
    )
    if loads is not None:
        ok &= loads[a] + loads[b] <= max_load
    by_namespace: dict[int, list[int]] = {}
    for p in map(int, np.flatnonzero(ok)):
        ns = int(model.ns_id[a[p]])
        if ns in surplus:
            by_namespace.setdefault(ns, []).append(p)
    merges: list[MergeDecision] = []
    for ns in sorted(by_namespace, key=lambda i: model.namespaces[i]):
        cap = min(limit - len(merges), surplus[ns])
        taken = -2
        for p in by_namespace[ns]:
            if cap <= 0:
                break
            if p == taken + 1:
                continue
            first, second = int(a[p]), int(b[p])
            merges.append(
                MergeDecision(
                    (model.bundles[first], model.bundles[second]),
                    Label.SUCCESS,
                    Reason.COLD_BUNDLES,
                    f"both on {model.brokers[int(model.owner[first])]}; merged fill "
                    f"{float(fill[first] + fill[second]):.4f} <= {max_fill:g} of the split thresholds"
                    + (
                        f"; merged load {float(loads[first] + loads[second]):.4f} <= {max_load:.4f}"
                        if loads is not None
                        else ""
                    ),
                )
            )
            taken = p
            cap -= 1
        if len(merges) >= limit:
            break
    return merges
