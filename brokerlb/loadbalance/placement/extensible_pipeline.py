"""The extensible load manager's assignment (``ExtensibleLoadManagerImpl.selectAsync``, PIP-192).

Goal: as the modular pipeline, but each filter is a pluggable ``BrokerFilter`` working on the
broker registry, a filter that fails is ignored, and nothing is restored: if the filters leave
no broker, the bundle gets none.

Config keys read: ``loadManagerClassName``, ``loadBalancerBrokerMaxTopics``,
``preferLaterVersions``, ``failureDomainsEnabled`` and what the strategy reads.

Filters, in Pulsar's order, each on what the previous ones left:

1. ``BrokerLoadManagerClassFilter`` -- the registry entry's ``loadManagerClassName`` must be
   the configured one (a null class name is dropped; when ``loadManagerClassName`` names the
   modular manager but the extensible strategy was asked for, ``ExtensibleLoadManagerImpl``);
2. ``BrokerMaxTopicCountFilter`` -- drop brokers whose load data reports
   ``topics >= loadBalancerBrokerMaxTopics`` (no load data counts 0);
3. ``BrokerVersionFilter`` -- with ``preferLaterVersions``, keep the newest ``brokerVersion``;
   a missing or unparsable version makes the filter fail (ignored, nothing removed);
4. ``AntiAffinityGroupPolicyFilter`` -- as the modular rule, counting the group's *owned
   bundles* per broker from the service-unit channel (``ownership``);
5. ``BrokerIsolationPoliciesFilter`` -- ``applyNamespacePolicies`` over the remaining brokers
   (topic-domain flags from the registry entries).

Then the strategy (``LeastResourceUsageWithWeight`` of the extensions package by default)
picks one. Brokers are those of the snapshot; one without a ``brokerLookupData`` entry is
taken as registered with the configured load manager, both topic domains enabled and no
version (the snapshot just did not list its registry entry).

Worked example (Pulsar's ``BrokerMaxTopicCountFilterTest``): with
``loadBalancerBrokerMaxTopics = 10``, brokers reporting 10 and 20 topics are dropped, brokers
reporting 9 or no load data stay.
"""

from __future__ import annotations

import random
from typing import Any

from brokerlb.config import short_class_name
from brokerlb.loadbalance.decisions import PlacementDecision, Reason
from brokerlb.loadbalance.placement.anti_affinity import (
    anti_affinity_bundle_counts,
    filter_anti_affinity_group_owned_brokers,
)
from brokerlb.loadbalance.placement.context import PlacementContext
from brokerlb.loadbalance.placement.filters import broker_version_filter
from brokerlb.loadbalance.placement.isolation import apply_namespace_policies
from brokerlb.loadbalance.state import StrategyState
from brokerlb.model import bundle_namespace

__all__ = ["select_extensible", "extensible_filter_pipeline"]


def _class_filter(context: PlacementContext, candidates: list[str]) -> list[str]:
    wanted = short_class_name(context.running_load_manager(extensible=True))
    kept = []
    for broker in candidates:
        lookup = context.lookup_data(broker)
        if lookup is None:
            kept.append(broker)
            continue
        reported = lookup.load_manager_class_name
        if reported is not None and reported.strip() and short_class_name(reported) == wanted:
            kept.append(broker)
    return kept


def _max_topic_filter(context: PlacementContext, candidates: list[str]) -> list[str]:
    limit = context.config.loadBalancerBrokerMaxTopics
    loads = context.view.broker_load_data
    return [b for b in candidates if (loads[b].topics if b in loads else 0) < limit]


def extensible_filter_pipeline(
    context: PlacementContext, bundle: str, *, non_persistent: bool = False
) -> tuple[list[str], list[str]]:
    """The brokers left by the five filters, and a note per filter."""
    conf = context.config
    view = context.view
    namespace = bundle_namespace(bundle)
    candidates = list(context.extensible_brokers)
    notes = [f"available: {len(candidates)}"]

    candidates = _class_filter(context, candidates)
    notes.append(f"load manager class: {len(candidates)}")
    candidates = _max_topic_filter(context, candidates)
    notes.append(f"max topics {conf.loadBalancerBrokerMaxTopics}: {len(candidates)}")

    def version_of(broker: str) -> str | None:
        lookup = context.lookup_data(broker)
        return None if lookup is None else lookup.broker_version

    if candidates:
        version = broker_version_filter(candidates, version_of, conf.preferLaterVersions)
        if version.failure is not None:
            notes.append(f"{version.failure} (filter ignored)")
        else:
            candidates = version.kept
            if conf.preferLaterVersions:
                notes.append(f"latest version: {len(candidates)}")

    group = context.group_of(namespace)
    if group and candidates:
        counts = anti_affinity_bundle_counts(group, view.ownership, context.group_of, bundle_namespace)
        candidates = filter_anti_affinity_group_owned_brokers(
            candidates, counts, broker_domain=context.broker_domain,
            failure_domains_enabled=conf.failureDomainsEnabled)
        notes.append(f"anti-affinity group '{group}': {len(candidates)}")

    if candidates:
        isolation = apply_namespace_policies(
            namespace, candidates, {n: view.isolation_policies[n] for n in sorted(view.isolation_policies)},
            non_persistent=non_persistent, serves_domain=context.serves_domain_extensible,
        )
        allowed = set(isolation.candidates)
        candidates = [b for b in candidates if b in allowed]
        notes.append(f"isolation {isolation.describe()}: {len(candidates)}")
    return candidates, notes


def select_extensible(
    context: PlacementContext,
    bundle: str,
    strategy: Any,
    state: StrategyState,
    rng: random.Random,
    *,
    non_persistent: bool = False,
) -> PlacementDecision:
    """Filters, then the strategy (module docstring)."""
    if not context.extensible_brokers:
        return PlacementDecision(bundle, None, (), Reason.NO_BROKERS, "no broker in the snapshot")
    candidates, notes = extensible_filter_pipeline(context, bundle, non_persistent=non_persistent)
    if not candidates:
        notes.append("no broker left")
        return PlacementDecision(bundle, None, (), Reason.NO_CANDIDATES, "; ".join(notes))
    broker = strategy.select_broker(context.view, candidates, bundle, state, rng)
    name = type(strategy).__name__
    if broker is None:
        notes.append(f"{name} found no broker")
        return PlacementDecision(bundle, None, tuple(sorted(candidates)), Reason.NO_CANDIDATES, "; ".join(notes))
    notes.append(f"{name} picked {broker}")
    return PlacementDecision(bundle, broker, tuple(sorted(candidates)), Reason.SELECTED, "; ".join(notes))
