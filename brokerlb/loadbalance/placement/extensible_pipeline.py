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
   bundles* per broker (service-unit channel ``ownership``, else what the broker reports);
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
from brokerlb.loadbalance.placement.anti_affinity import filter_anti_affinity_group_owned_brokers
from brokerlb.loadbalance.placement.context import PlacementContext
from brokerlb.loadbalance.placement.filters import broker_version_filter
from brokerlb.loadbalance.state import StrategyState
from brokerlb.model import bundle_namespace

__all__ = ["select_extensible", "extensible_filter_pipeline"]


def _class_filter(context: PlacementContext, candidates: list[str]) -> list[str]:
    wanted = short_class_name(context.running_load_manager(extensible=True))
    running = context.registered_running(wanted)
    return [b for b in candidates if b in running]


def _max_topic_filter(context: PlacementContext, candidates: list[str]) -> list[str]:
    limit = context.config.loadBalancerBrokerMaxTopics
    topics = context.extensible_topics
    return [b for b in candidates if topics.get(b, 0) < limit]


def _isolation_filter(
    context: PlacementContext, namespace: str, candidates: list[str], non_persistent: bool
) -> tuple[list[str], str]:
    """``BrokerIsolationPoliciesFilter`` on the remaining brokers.

    Each broker's class (primary, secondary, shared, excluded) does not depend on the others, so
    the classes come from the cached pass over all brokers; only the ``min_available`` failover is
    decided on what is left.
    """
    full = context.isolation(namespace, non_persistent, extensible=True)
    if full.policy is None:
        allowed = set(full.candidates)
        return [b for b in candidates if b in allowed], f"isolation {full.describe()}"
    primary, secondary = set(full.primaries), set(full.secondaries)
    primaries = [b for b in candidates if b in primary]
    min_limit = context.view.isolation_policies[full.policy].auto_failover_policy.min_limit
    failover = len(primaries) < min_limit
    kept = set(primaries) | ({b for b in candidates if b in secondary} if failover else set())
    note = (
        f"isolation policy '{full.policy}' ({len(primaries)} primary"
        f"{', failover to secondaries' if failover else ''})"
    )
    return [b for b in candidates if b in kept], note


def extensible_filter_pipeline(
    context: PlacementContext, bundle: str, *, non_persistent: bool = False
) -> tuple[list[str], list[str]]:
    """The brokers left by the five filters, and a note per filter."""
    conf = context.config
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
        counts = context.owned_bundle_group_counts(group)
        candidates = filter_anti_affinity_group_owned_brokers(
            candidates,
            counts,
            broker_domain=context.broker_domain,
            failure_domains_enabled=conf.failureDomainsEnabled,
        )
        notes.append(f"anti-affinity group '{group}': {len(candidates)}")

    if candidates:
        candidates, note = _isolation_filter(context, namespace, candidates, non_persistent)
        notes.append(f"{note}: {len(candidates)}")
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
        return PlacementDecision(
            bundle, None, tuple(sorted(candidates)), Reason.NO_CANDIDATES, "; ".join(notes)
        )
    notes.append(f"{name} picked {broker}")
    return PlacementDecision(bundle, broker, tuple(sorted(candidates)), Reason.SELECTED, "; ".join(notes))
