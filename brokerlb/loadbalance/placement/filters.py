"""Candidate filters of the modular load manager's placement (``selectBrokerForAssignment``).

Each filter takes the candidates (in order) and returns the ones it keeps; none reads the
clock or draws random numbers. The pipeline (:mod:`brokerlb.loadbalance.placement.pipeline`)
applies them in Pulsar's order and records what each removed.

* :func:`filter_brokers_with_large_topic_count` -- ``loadBalancerBrokerMaxTopics``: keep
  brokers whose reported topics plus preallocated topics are ``<= max``; if that keeps
  nobody, keep everybody (``LoadManagerShared.filterBrokersWithLargeTopicCount``).
* :func:`remove_most_servicing_brokers_for_namespace` --
  ``loadBalancerDistributeBundlesEvenlyEnabled``: keep the brokers holding the fewest bundles
  of the bundle's namespace (owned or preallocated).
* :func:`load_manager_class_filter` -- ``loadManagerClassName``: drop brokers that run
  another load manager (``BrokerLoadManagerClassFilter``, used while migrating between the
  modular and the extensible load manager).
* :func:`broker_version_filter` -- ``preferLaterVersions``: keep only the brokers running the
  newest version (``BrokerVersionFilter``); a broker without a parseable version makes the
  filter *fail*, and the pipeline then restores the isolation-policy candidates.

Worked example (``LoadManagerSharedTest.testRemoveMostServicingBrokersForNamespace``): broker1
holds 1 bundle of ``tenant1/ns1``, broker2 holds 2, broker3 holds 1; candidates
``[broker1, broker2, broker3]`` keep ``[broker1, broker3]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from brokerlb.config import short_class_name
from brokerlb.loadbalance.placement.semver import Version, build_aware_key, parse_version

__all__ = [
    "FilterResult",
    "filter_brokers_with_large_topic_count",
    "remove_most_servicing_brokers_for_namespace",
    "load_manager_class_filter",
    "broker_version_filter",
    "latest_version",
]


@dataclass(frozen=True, slots=True)
class FilterResult:
    """What a filter kept; ``failure`` is set when the filter could not decide (Pulsar's
    ``BrokerFilterException``), in which case ``kept`` is the input unchanged."""

    kept: list[str]
    failure: str | None = None


def filter_brokers_with_large_topic_count(
    candidates: Sequence[str], topics: Mapping[str, int], max_topics: int
) -> list[str]:
    """Brokers with ``topics[broker] <= max_topics`` (absent = 0), or all candidates if none qualifies.

    ``topics`` holds each broker's reported ``numTopics`` plus the topics of its preallocated
    bundles (a broker without load data counts 0), as in Pulsar.
    """
    get = topics.get
    kept = [b for b in candidates if get(b, 0) <= max_topics]
    return kept if kept else list(candidates)


def remove_most_servicing_brokers_for_namespace(
    candidates: Sequence[str], namespace_bundle_counts: Mapping[str, int]
) -> list[str]:
    """The candidates holding the fewest bundles of the namespace (absent = 0)."""
    if not candidates:
        return []
    get = namespace_bundle_counts.get
    least = min(get(b, 0) for b in candidates)
    return [b for b in candidates if get(b, 0) <= least]


def load_manager_class_filter(
    candidates: Sequence[str], class_of: Callable[[str], str | None], configured: str
) -> list[str]:
    """Drop brokers whose reported ``loadManagerClassName`` differs from ``configured``.

    Names compare by simple class name, so ``ModularLoadManagerImpl`` and
    ``org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl`` are the same. A broker
    reporting no class name is dropped, as in Pulsar (``Objects.equals(null, configured)``).
    """
    wanted = short_class_name(configured)
    kept = []
    for broker in candidates:
        reported = class_of(broker)
        if reported is not None and reported.strip() and short_class_name(reported) == wanted:
            kept.append(broker)
    return kept


def latest_version(candidates: Sequence[str], version_of: Callable[[str], str | None]) -> Version | str:
    """The newest version among the candidates, or a message saying why it is undefined."""
    if not candidates:
        return "Unable to determine latest version since broker set was empty"
    latest: Version | None = None
    for broker in candidates:
        text = version_of(broker)
        if not text:
            return f'No version string in load report for broker "{broker}"'
        version = parse_version(text)
        if version is None:
            return f'Invalid version string in load report for broker "{broker}": "{text}"'
        if latest is None or build_aware_key(latest) < build_aware_key(version):
            latest = version
    assert latest is not None
    return latest


def broker_version_filter(
    candidates: Sequence[str], version_of: Callable[[str], str | None], prefer_later_versions: bool
) -> FilterResult:
    """Keep the brokers whose version equals the newest one (``preferLaterVersions``).

    Equality ignores build metadata (jsemver ``equals``). Without ``preferLaterVersions`` the
    candidates pass unchanged.
    """
    if not prefer_later_versions:
        return FilterResult(list(candidates))
    latest = latest_version(candidates, version_of)
    if isinstance(latest, str):
        return FilterResult(list(candidates), f"Cannot determine newest broker version: {latest}")
    key = latest.precedence_key()
    kept = []
    for broker in candidates:
        version = parse_version(version_of(broker))
        if version is not None and version.precedence_key() == key:
            kept.append(broker)
    return FilterResult(kept)
