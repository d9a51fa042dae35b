"""``DefaultNamespaceBundleSplitStrategyImpl``: the extensible load manager's split check (PIP-192).

Goal: as ``BundleSplitterTask``, but each broker checks only the bundles it owns, on their
*current* stats, and a bundle must pass a threshold in several consecutive checks before it
is split -- one traffic spike does not split a bundle.

Config keys read: the thresholds of :mod:`brokerlb.loadbalance.split.thresholds`,
``loadBalancerNamespaceBundleSplitConditionHitCountThreshold`` (3),
``loadBalancerMaxNumberOfBundlesToSplitPerCycle`` (10) and
``defaultNamespaceBundleSplitAlgorithm``.

State kept between cycles (:class:`SplitHitCounts`): per broker, per bundle, the number of
consecutive checks in which the bundle passed a threshold. Each broker's cycle first forgets
the bundles it no longer reports.

One broker's cycle, bundle by bundle (its report order):

1. fewer than 2 topics: skip;
2. not owned by this broker in the service-unit channel: skip;
3. range cannot be divided: ``Failure``;
4. threshold passed (Topics > Sessions > MsgRate > Bandwidth): ``hits += 1``; else the count
   is dropped. ``hits <= threshold``: skip (``HitCount``);
5. namespace bundle count plus bundles picked this cycle ``>= loadBalancerNamespaceMaximumBundles``:
   skip (``TooManyBundles``);
6. a bundle of the same namespace with the same lower or upper bound is ``Splitting``: skip;
7. the default algorithm must give exactly **one** boundary, else ``Failure`` (Pulsar's known
   limitation with ``flow_or_qps_equally_divide``, apache/pulsar#22254);
8. ``Success``: the count is reset; the cycle stops after
   ``loadBalancerMaxNumberOfBundlesToSplitPerCycle`` splits (the rest of the bundles are not
   looked at, so their counts do not move).

Worked example (Pulsar's ``DefaultNamespaceBundleSplitStrategyTest.testMaxMsgRate``: threshold 3,
one split per cycle, two hot bundles): cycles 1-3 split nothing (hits 1, 2, 3); cycle 4 splits
``tenant/namespace/0x00000000_0xFFFFFFFF`` at ``0x7fffffff`` and stops; cycle 5 splits
``tenant/namespace/0x00000000_0x0FFFFFFF`` at ``0x07ffffff`` (its count reached 4).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from brokerlb.loadbalance.decisions import Label, Reason, SplitDecision
from brokerlb.loadbalance.split.thresholds import (
    SplitThresholds,
    parse_bundle,
    range_bounds,
    split_boundaries,
)
from brokerlb.model import NamespaceBundleStats, bundle_namespace

__all__ = ["NAME", "SplitHitCounts", "find_bundles_to_split_extensible", "broker_split_cycle"]

#: Pulsar's class name.
NAME = "org.apache.pulsar.broker.loadbalance.extensions.strategy.DefaultNamespaceBundleSplitStrategyImpl"


@dataclass
class SplitHitCounts:
    """``broker -> bundle -> consecutive hits`` (Pulsar keeps one map per broker).

    JSON: ``{"splitConditionHitCounts": {broker: {bundle: n}}}``.
    """

    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    def of(self, broker: str) -> dict[str, int]:
        return self.counts.setdefault(broker, {})

    def to_json(self) -> dict[str, Any]:
        return {"splitConditionHitCounts": {b: dict(c) for b, c in self.counts.items() if c}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SplitHitCounts:
        raw = data.get("splitConditionHitCounts", {})
        return cls({str(b): {str(k): int(v) for k, v in c.items()} for b, c in raw.items()})


def _overlaps_splitting(bundle: str, namespace: str, splitting: Iterable[str]) -> str | None:
    """A ``Splitting`` bundle of ``namespace`` sharing this bundle's lower or upper bound."""
    mine = parse_bundle(bundle)
    for other in splitting:
        if bundle_namespace(other) != namespace:
            continue
        theirs = parse_bundle(other)
        if mine is not None and theirs is not None:
            if theirs.lower == mine.lower or theirs.upper == mine.upper:
                return other
        else:
            low, _, high = bundle.rpartition("/")[2].partition("_")
            other_range = other.rpartition("/")[2]
            if other_range.startswith(low) or other_range.endswith(high):
                return other
    return None


def broker_split_cycle(
    broker: str,
    bundle_stats: Mapping[str, NamespaceBundleStats],
    hits: dict[str, int],
    *,
    is_owner: Callable[[str], bool],
    splitting: Iterable[str],
    bundle_count_of: Callable[[str], int],
    conf: Any,
) -> list[SplitDecision]:
    """One broker's split cycle (module docstring). ``hits`` is this broker's map; it is updated."""
    thresholds = SplitThresholds.from_config(conf)
    hit_threshold = conf.loadBalancerNamespaceBundleSplitConditionHitCountThreshold
    max_splits = conf.loadBalancerMaxNumberOfBundlesToSplitPerCycle
    splitting = list(splitting)
    for gone in [b for b in hits if b not in bundle_stats]:
        del hits[gone]
    picked_per_namespace: dict[str, int] = {}
    decisions: list[SplitDecision] = []
    successes = 0
    for bundle, stats in bundle_stats.items():
        rate = stats.msg_rate_in + stats.msg_rate_out
        throughput = stats.msg_throughput_in + stats.msg_throughput_out
        sessions = stats.consumer_count + stats.producer_count
        reason = thresholds.reason(stats.topics, sessions, rate, throughput)
        if stats.topics < 2:
            if reason is not None:
                numbers = thresholds.describe(stats.topics, sessions, rate, throughput)
                decisions.append(
                    SplitDecision(
                        bundle, (), Label.SKIP, Reason.SINGLE_TOPIC, f"fewer than 2 topics; {numbers}"
                    )
                )
            continue
        if not is_owner(bundle):
            if reason is not None:
                numbers = thresholds.describe(stats.topics, sessions, rate, throughput)
                decisions.append(
                    SplitDecision(
                        bundle,
                        (),
                        Label.SKIP,
                        Reason.NOT_OWNED,
                        f"{broker} does not own the bundle; {numbers}",
                    )
                )
            continue
        bounds = range_bounds(bundle)
        if bounds is None or bounds[1] - bounds[0] <= 1:
            what = "is not a bundle range" if bounds is None else "has a range that cannot be divided"
            decisions.append(
                SplitDecision(bundle, (), Label.FAILURE, Reason.INVALID_BUNDLE, f"{bundle} {what}")
            )
            continue
        if reason is not None:
            hits[bundle] = hits.get(bundle, 0) + 1
        else:
            hits.pop(bundle, None)
            continue
        numbers = thresholds.describe(stats.topics, sessions, rate, throughput)
        count = hits[bundle]
        if count <= hit_threshold:
            decisions.append(
                SplitDecision(
                    bundle,
                    (),
                    Label.SKIP,
                    Reason.HIT_COUNT,
                    f"{reason.value} threshold passed {count} time(s) in a row, must pass more than "
                    f"{hit_threshold}; {numbers}",
                )
            )
            continue
        namespace = bundle_namespace(bundle)
        bundles = bundle_count_of(namespace)
        picked = picked_per_namespace.get(namespace, 0)
        if bundles + picked >= thresholds.max_bundles:
            decisions.append(
                SplitDecision(
                    bundle,
                    (),
                    Label.SKIP,
                    Reason.TOO_MANY_BUNDLES,
                    f"namespace {namespace} has {bundles} bundles (+{picked} picked this cycle), "
                    f"limit {thresholds.max_bundles}; {numbers}",
                )
            )
            continue
        parent = _overlaps_splitting(bundle, namespace, splitting)
        if parent is not None:
            decisions.append(
                SplitDecision(
                    bundle, (), Label.SKIP, Reason.SPLITTING, f"bundle {parent} is being split; {numbers}"
                )
            )
            continue
        parsed = parse_bundle(bundle)
        if parsed is None:  # a range form the fast path took but the full parser refuses
            decisions.append(
                SplitDecision(
                    bundle, (), Label.FAILURE, Reason.INVALID_BUNDLE, f"{bundle} is not a bundle range"
                )
            )
            continue
        boundaries = split_boundaries(parsed, conf)
        algorithm = conf.defaultNamespaceBundleSplitAlgorithm
        if boundaries is None or len(boundaries) != 1:
            found = "no boundary" if boundaries is None else f"{len(boundaries)} boundaries"
            decisions.append(
                SplitDecision(
                    bundle,
                    tuple(boundaries or ()),
                    Label.FAILURE,
                    Reason.UNKNOWN,
                    f"{algorithm} gave {found}; exactly one is needed"
                    + ("" if boundaries else " (the snapshot has no per-topic data for it)"),
                )
            )
            continue
        decisions.append(
            SplitDecision(
                bundle,
                (boundaries[0],),
                Label.SUCCESS,
                reason,
                f"{numbers}; split by {broker} with {algorithm}",
            )
        )
        picked_per_namespace[namespace] = picked + 1
        hits.pop(bundle, None)
        successes += 1
        if successes == max_splits:
            break
    return decisions


def find_bundles_to_split_extensible(
    reports: Mapping[str, Mapping[str, NamespaceBundleStats]],
    state: SplitHitCounts,
    *,
    is_owner: Callable[[str, str], bool],
    splitting: Iterable[str],
    bundle_count_of: Callable[[str], int],
    conf: Any,
) -> list[SplitDecision]:
    """Every broker's cycle, in report order (each broker decides for itself in Pulsar).

    ``reports`` maps broker -> its current bundle stats (``localData.lastStats``);
    ``is_owner(broker, bundle)`` answers from the service-unit channel; ``splitting`` lists the
    bundles in ``Splitting`` state. Brokers that no longer report lose their counts.
    """
    splitting = list(splitting)
    for broker in [b for b in state.counts if b not in reports]:
        del state.counts[broker]
    decisions: list[SplitDecision] = []
    for broker, stats in reports.items():
        decisions.extend(
            broker_split_cycle(
                broker,
                stats,
                state.of(broker),
                is_owner=functools.partial(is_owner, broker),
                splitting=splitting,
                bundle_count_of=bundle_count_of,
                conf=conf,
            )
        )
    return decisions
