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

from brokerlb.loadbalance.decisions import Label, Reason, SplitDecision
from brokerlb.loadbalance.split.thresholds import SplitThresholds, parse_bundle, split_boundaries
from brokerlb.model import BundleData, LocalBrokerData, bundle_namespace

__all__ = ["NAME", "find_bundles_to_split_modular"]

#: Pulsar's class name.
NAME = "org.apache.pulsar.broker.loadbalance.impl.BundleSplitterTask"


def find_bundles_to_split_modular(
    reports: Mapping[str, LocalBrokerData],
    bundle_data: Mapping[str, BundleData],
    bundle_count_of: Callable[[str], int],
    conf: Any,
) -> list[SplitDecision]:
    """The split decisions of one round (module docstring), in report order.

    ``reports`` maps broker id -> its report; ``bundle_data`` the leader's bundle histories;
    ``bundle_count_of(namespace)`` the namespace's current number of bundles.
    """
    thresholds = SplitThresholds.from_config(conf)
    # the limits as locals: this loop visits every bundle of the cluster each cycle
    max_topics, max_sessions = thresholds.max_topics, thresholds.max_sessions
    max_rate, max_bytes = thresholds.max_msg_rate, thresholds.max_bandwidth_bytes
    picked_per_namespace: dict[str, int] = {}
    seen: set[str] = set()
    decisions: list[SplitDecision] = []
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
            if (stats.topics <= max_topics and (max_sessions <= 0 or sessions <= max_sessions)
                    and rate <= max_rate and throughput <= max_bytes):
                continue  # below every threshold (the common case)
            if bundle in seen:
                continue
            reason = thresholds.reason(stats.topics, sessions, rate, throughput)
            if reason is None:
                continue
            numbers = thresholds.describe(stats.topics, sessions, rate, throughput)
            if stats.topics < 2:
                decisions.append(SplitDecision(bundle, (), Label.SKIP, Reason.SINGLE_TOPIC,
                                               f"fewer than 2 topics; {numbers}"))
                continue
            namespace = bundle_namespace(bundle)
            count = bundle_count_of(namespace)
            picked = picked_per_namespace.get(namespace, 0)
            if count + picked >= thresholds.max_bundles:
                decisions.append(SplitDecision(
                    bundle, (), Label.SKIP, Reason.TOO_MANY_BUNDLES,
                    f"namespace {namespace} has {count} bundles (+{picked} picked this round), "
                    f"limit {thresholds.max_bundles}; {numbers}"))
                continue
            seen.add(bundle)
            picked_per_namespace[namespace] = picked + 1
            decisions.append(_split(bundle, reason, numbers, conf))
    return decisions


def _split(bundle: str, reason: Reason, numbers: str, conf: Any) -> SplitDecision:
    parsed = parse_bundle(bundle)
    if parsed is None:
        return SplitDecision(bundle, (), Label.SUCCESS, reason,
                             f"{numbers}; boundary decided at split time (bundle name is not a range)")
    if not parsed.can_split:
        return SplitDecision(bundle, (), Label.SKIP, Reason.INVALID_BUNDLE,
                             f"range {parsed.range} cannot be divided; {numbers}")
    boundaries = split_boundaries(parsed, conf)
    algorithm = conf.defaultNamespaceBundleSplitAlgorithm
    if boundaries is None:
        return SplitDecision(bundle, (), Label.SUCCESS, reason,
                             f"{numbers}; {algorithm} decides the boundary at split time (needs the topic list)")
    return SplitDecision(bundle, tuple(boundaries), Label.SUCCESS, reason, f"{numbers}; {algorithm}")
