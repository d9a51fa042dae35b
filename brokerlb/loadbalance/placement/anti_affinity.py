"""Anti-affinity groups: spread the namespaces of a group over brokers and failure domains.

Goal: namespaces sharing a ``namespaceAntiAffinityGroup`` (e.g. the primary and the
backup of an application) should not sit on the same broker -- or, with
``failureDomainsEnabled``, in the same failure domain -- while others are free.

Config keys read: ``failureDomainsEnabled``.

Rules (``LoadManagerShared``):

* **Counting** (:func:`anti_affinity_namespace_counts`): for every broker, the number of
  namespaces it serves (owned or preallocated bundles) whose group equals the target's
  group, compared case-insensitively. Brokers serving none are absent from the map. A
  target namespace without a group means "no anti-affinity": ``None``.
  The extensible load manager counts owned *bundles* instead of namespaces
  (:func:`anti_affinity_bundle_counts`, from the service-unit channel).
* **Filtering** (:func:`filter_anti_affinity_group_owned_brokers`): with failure domains,
  first keep only the candidates of the domains whose summed count is the least (a broker
  in no domain belongs to domain ``default``). Then, if some candidate counts 0 (or is
  absent), drop every candidate with a count above 0; otherwise keep the candidates with
  the least count.
* **Unloading** (:func:`should_anti_affinity_namespace_unload`): shedding may unload a
  bundle of a grouped namespace only if it can land somewhere better: true when some
  candidate counts 0 or the current broker counts more than the least; false when every
  candidate counts the same.

Worked example (Pulsar's ``filterAntiAffinityGroupOwnedBrokers`` javadoc): domains
``d1 = {b1: 2, b2: 1}``, ``d2 = {b3: 2, b4: 1}``, ``d3 = {b5: 2, b6: 2}``. Domain sums are
3, 3, 4, so ``d3`` goes; inside the rest the least count is 1, so the candidates are
``b2`` and ``b4``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = [
    "DEFAULT_DOMAIN",
    "anti_affinity_namespace_counts",
    "anti_affinity_bundle_counts",
    "filter_anti_affinity_group_owned_brokers",
    "filter_domains_not_having_least_anti_affinity_namespaces",
    "should_anti_affinity_namespace_unload",
    "anti_affinity_can_unload",
]

#: Failure domain of a broker listed in no domain (``LoadManagerShared.DEFAULT_DOMAIN``).
DEFAULT_DOMAIN = "default"


def _same_group(a: str | None, b: str) -> bool:
    return a is not None and a.casefold() == b.casefold()


def anti_affinity_namespace_counts(
    group: str | None,
    broker_namespaces: Mapping[str, Iterable[str]],
    group_of: Callable[[str], str | None],
) -> dict[str, int] | None:
    """``broker -> number of namespaces of `group` it serves`` (modular load manager).

    ``broker_namespaces`` maps each broker to the namespaces it has at least one bundle of
    (owned or preallocated). ``None`` when ``group`` is ``None`` (no anti-affinity).
    """
    if not group:
        return None
    counts: dict[str, int] = {}
    for broker, namespaces in broker_namespaces.items():
        for namespace in namespaces:
            if _same_group(group_of(namespace), group):
                counts[broker] = counts.get(broker, 0) + 1
    return counts


def anti_affinity_bundle_counts(
    group: str | None,
    ownership: Mapping[str, str],
    group_of: Callable[[str], str | None],
    namespace_of: Callable[[str], str],
) -> dict[str, int] | None:
    """``broker -> number of owned bundles whose namespace is in `group``` (extensible load manager).

    ``ownership`` maps bundle -> owner broker (the ``Owned`` entries of the service-unit channel).
    """
    if not group:
        return None
    counts: dict[str, int] = {}
    for bundle, broker in ownership.items():
        if broker and _same_group(group_of(namespace_of(bundle)), group):
            counts[broker] = counts.get(broker, 0) + 1
    return counts


def filter_domains_not_having_least_anti_affinity_namespaces(
    candidates: Sequence[str], counts: Mapping[str, int], broker_domain: Mapping[str, str] | None
) -> list[str]:
    """Keep the candidates of the failure domains whose summed count is the least.

    Without a broker -> domain map nothing is filtered (Pulsar returns early).
    """
    if not broker_domain:
        return list(candidates)
    domain_counts: dict[str, int] = {}
    for broker in candidates:
        domain = broker_domain.get(broker, DEFAULT_DOMAIN)
        domain_counts[domain] = domain_counts.get(domain, 0) + counts.get(broker, 0)
    if not domain_counts:
        return list(candidates)
    least = min(domain_counts.values())
    return [b for b in candidates if domain_counts[broker_domain.get(b, DEFAULT_DOMAIN)] == least]


def filter_anti_affinity_group_owned_brokers(
    candidates: Sequence[str],
    counts: Mapping[str, int] | None,
    *,
    broker_domain: Mapping[str, str] | None = None,
    failure_domains_enabled: bool = False,
) -> list[str]:
    """The candidates left after the anti-affinity rules (module docstring); ``counts`` from above."""
    if not candidates or counts is None:
        return list(candidates)
    kept = list(candidates)
    if failure_domains_enabled:
        kept = filter_domains_not_having_least_anti_affinity_namespaces(kept, counts, broker_domain)
    if not kept:
        return kept
    if any(counts.get(b, 0) == 0 for b in kept):
        return [b for b in kept if counts.get(b, 0) == 0]
    least = min(counts[b] for b in kept)
    return [b for b in kept if counts[b] == least]


def should_anti_affinity_namespace_unload(
    current_broker: str, candidates: Iterable[str], counts: Mapping[str, int] | None
) -> bool:
    """Whether shedding may unload a bundle of a grouped namespace from ``current_broker``.

    ``candidates`` are the brokers the namespace's isolation rules allow; ``counts`` as from
    :func:`anti_affinity_namespace_counts` (``None`` or empty: always true).
    """
    if not counts:
        return True
    brokers = list(candidates)
    if not brokers:  # Pulsar: no candidate counts the least, so "all the same" -> cannot unload
        return False
    values = [counts.get(b, 0) for b in brokers]
    least = min(values)
    current = counts.get(current_broker, 0) if current_broker in brokers else 0
    if least == 0 or current > least:
        return True
    return values.count(least) != len(brokers)


def anti_affinity_can_unload(
    candidates_after_filter: Iterable[str], source_broker: str, destination: str | None
) -> bool:
    """Extensible load manager (``AntiAffinityGroupPolicyHelper.canUnload``), for a grouped namespace.

    ``candidates_after_filter`` are the available brokers after
    :func:`filter_anti_affinity_group_owned_brokers`. An unload (no destination) is allowed when a
    broker other than the source remains; a transfer when the destination remains.
    """
    remaining = set(candidates_after_filter)
    remaining.discard(source_broker)
    if destination is None:
        return bool(remaining)
    return destination in remaining
