"""``BundleSplitterTask``: which hot bundles the modular leader splits (Pulsar's default split strategy).

Goal: split a bundle that holds too many topics or sessions, or carries too much traffic over
the long term, so its load can spread -- without pushing a namespace past its bundle cap.

Config keys read: see :mod:`brokerlb.loadbalance.split.thresholds`; the leader only runs it
when ``loadBalancerAutoBundleSplitEnabled`` (checked by the caller).

Rules (``BundleSplitterTask.findBundlesToSplit`` + ``ModularLoadManagerImpl.checkNamespaceBundleSplit``),
for every broker, for every bundle of its report's ``lastStats``:

* fewer than 2 topics: never split (a single hot topic cannot be fixed by splitting);
* the message rate and throughput are the bundle's **long-term** averages from the leader's
  bundle data (0 when it has none); topics and sessions come from the report;
* a bundle passing a threshold is split only while the namespace's bundle count plus the
  bundles already picked this round stays below ``loadBalancerNamespaceMaximumBundles``;
* a picked bundle whose range cannot be divided (``upper - lower <= 1``) is skipped.

Stateless. Decisions: ``Success`` for each split (reason = the first threshold passed, boundary
from the default split algorithm when it can be computed); ``Skip`` for a bundle that passed a
threshold but is not split (``SingleTopic``, ``TooManyBundles``, ``InvalidBundle``).

Worked example (Pulsar's ``BundleSplitterTaskTest.testLoadBalancerNamespaceMaximumBundles``):
three bundles of ``ten/ns`` with 5 topics and a long-term rate of twice the 30000 msg/s limit,
``loadBalancerNamespaceMaximumBundles = 3`` and a namespace of 1 bundle: the first two are split
(1 + 0 < 3, 1 + 1 < 3), the third is skipped (1 + 2 = 3).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from brokerlb.loadbalance.decisions import Label, Reason, SplitDecision
from brokerlb.loadbalance.fold import FoldSummary
from brokerlb.loadbalance.split.thresholds import SplitThresholds, parse_bundle, split_boundaries
from brokerlb.model import BundleData, LocalBrokerData, NamespaceBundleStats, bundle_namespace

__all__ = ["NAME", "find_bundles_to_split_modular"]

#: Pulsar's class name.
NAME = "org.apache.pulsar.broker.loadbalance.impl.BundleSplitterTask"


def find_bundles_to_split_modular(
    reports: Mapping[str, LocalBrokerData],
    bundle_data: Mapping[str, BundleData],
    bundle_count_of: Callable[[str], int],
    conf: Any,
    summary: FoldSummary | None = None,
) -> list[SplitDecision]:
    """The split decisions of one round (module docstring), in report order.

    ``reports`` maps broker id -> its report; ``bundle_data`` the leader's bundle histories;
    ``bundle_count_of(namespace)`` the namespace's current number of bundles. ``summary`` --
    the last refresh's :class:`~brokerlb.loadbalance.fold.FoldSummary` -- lets the check reject
    the bundles below every threshold on arrays when it still describes these reports and
    histories (the same comparisons on the same numbers; the decisions do not change).
    """
    thresholds = SplitThresholds.from_config(conf)
    # the limits as locals: this loop visits every bundle of the cluster each cycle
    max_topics, max_sessions = thresholds.max_topics, thresholds.max_sessions
    max_rate, max_bytes = thresholds.max_msg_rate, thresholds.max_bandwidth_bytes
    round_ = _Round(thresholds, bundle_count_of, conf)
    if summary is not None and summary.describes(list(reports.values()), bundle_data):
        passing = summary.topics > max_topics
        if max_sessions > 0:
            passing |= summary.sessions > max_sessions
        passing |= summary.long_term_rate > max_rate
        passing |= summary.long_term_throughput > max_bytes
        for i in np.flatnonzero(passing).tolist():
            bundle, stats, folded = summary.occurrence(i)
            window = folded.long_term_data
            round_.check(
                bundle,
                stats,
                window.msg_rate_in + window.msg_rate_out,
                window.msg_throughput_in + window.msg_throughput_out,
            )
        return round_.decisions
    for local in reports.values():
        for bundle, stats in local.last_stats.items():
            history = bundle_data.get(bundle)
            if history is not None:
                window = history.long_term_data
                rate = window.msg_rate_in + window.msg_rate_out
                throughput = window.msg_throughput_in + window.msg_throughput_out
            else:
                rate = throughput = 0.0
            sessions = stats.consumer_count + stats.producer_count
            if (
                stats.topics <= max_topics
                and (max_sessions <= 0 or sessions <= max_sessions)
                and rate <= max_rate
                and throughput <= max_bytes
            ):
                continue  # below every threshold (the common case)
            round_.check(bundle, stats, rate, throughput)
    return round_.decisions


class _Round:
    """One round's picks: a bundle that passed a threshold is split, or skipped with a reason."""

    def __init__(self, thresholds: SplitThresholds, bundle_count_of: Callable[[str], int], conf: Any) -> None:
        self.thresholds = thresholds
        self.bundle_count_of = bundle_count_of
        self.conf = conf
        self.picked_per_namespace: dict[str, int] = {}
        self.seen: set[str] = set()
        self.decisions: list[SplitDecision] = []

    def check(self, bundle: str, stats: NamespaceBundleStats, rate: float, throughput: float) -> None:
        if bundle in self.seen:
            return
        thresholds = self.thresholds
        sessions = stats.consumer_count + stats.producer_count
        reason = thresholds.reason(stats.topics, sessions, rate, throughput)
        if reason is None:
            return
        numbers = thresholds.describe(stats.topics, sessions, rate, throughput)
        if stats.topics < 2:
            self.decisions.append(
                SplitDecision(bundle, (), Label.SKIP, Reason.SINGLE_TOPIC, f"fewer than 2 topics; {numbers}")
            )
            return
        namespace = bundle_namespace(bundle)
        count = self.bundle_count_of(namespace)
        picked = self.picked_per_namespace.get(namespace, 0)
        if count + picked >= thresholds.max_bundles:
            self.decisions.append(
                SplitDecision(
                    bundle,
                    (),
                    Label.SKIP,
                    Reason.TOO_MANY_BUNDLES,
                    f"namespace {namespace} has {count} bundles (+{picked} picked this round), "
                    f"limit {thresholds.max_bundles}; {numbers}",
                )
            )
            return
        self.seen.add(bundle)
        self.picked_per_namespace[namespace] = picked + 1
        self.decisions.append(_split(bundle, reason, numbers, self.conf))


def _split(bundle: str, reason: Reason, numbers: str, conf: Any) -> SplitDecision:
    parsed = parse_bundle(bundle)
    if parsed is None:
        return SplitDecision(
            bundle,
            (),
            Label.SUCCESS,
            reason,
            f"{numbers}; boundary decided at split time (bundle name is not a range)",
        )
    if not parsed.can_split:
        return SplitDecision(
            bundle,
            (),
            Label.SKIP,
            Reason.INVALID_BUNDLE,
            f"range {parsed.range} cannot be divided; {numbers}",
        )
    boundaries = split_boundaries(parsed, conf)
    algorithm = conf.defaultNamespaceBundleSplitAlgorithm
    if boundaries is None:
        return SplitDecision(
            bundle,
            (),
            Label.SUCCESS,
            reason,
            f"{numbers}; {algorithm} decides the boundary at split time (needs the topic list)",
        )
    return SplitDecision(bundle, tuple(boundaries), Label.SUCCESS, reason, f"{numbers}; {algorithm}")
