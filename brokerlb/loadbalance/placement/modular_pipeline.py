"""The modular load manager's ``selectBrokerForAssignment``, step by step.

Goal: put an unowned bundle on a broker its namespace's policies allow, away from brokers
that hold too many topics, its anti-affinity peers or many bundles of its namespace, and not
on an overloaded broker while another one is fine.

Config keys read: ``loadBalancerBrokerMaxTopics``, ``failureDomainsEnabled``,
``loadBalancerDistributeBundlesEvenlyEnabled``, ``loadManagerClassName``,
``preferLaterVersions``, ``loadBalancerBrokerOverloadedThresholdPercentage``, and what the
placement strategy reads (``loadBalancerLoadPlacementStrategy`` picks it).

Steps (``ModularLoadManagerImpl.selectBrokerForAssignment``, Pulsar 3.x/4.x):

1. a bundle already preallocated goes to that broker;
2. the bundle's data: its history, or Pulsar's default (50 msg/s, 50 KB/s in and out);
3. ``applyNamespacePolicies`` over the available brokers (isolation policies, shared brokers,
   persistent / non-persistent flags) -- the *base* set;
4. drop brokers above ``loadBalancerBrokerMaxTopics`` (reported + preallocated topics),
   unless that drops everybody;
5. anti-affinity: spread the namespace's group over failure domains and brokers;
6. with ``loadBalancerDistributeBundlesEvenlyEnabled``: keep the brokers with the fewest
   bundles of the namespace;
7. filters: ``BrokerLoadManagerClassFilter`` then ``BrokerVersionFilter``; a filter that cannot
   decide restores the base set;
8. nobody left: back to the base set;
9. the strategy picks one (none: no broker -- a lookup then answers 503);
10. if the pick's max resource usage is above the overload threshold, pick again among the
    base set (keeping the first pick if the second finds none);
11. the caller preallocates the bundle to the pick (:meth:`PlacementContext.preallocate`).

Each decision's ``detail`` lists how many candidates every step left, so "why this broker"
and "why none" can be read off it.

Worked example (Pulsar's ``testMaxTopicDistributionToBroker``): the first bundle of a
namespace carries more topics than ``loadBalancerBrokerMaxTopics``; once it is preallocated,
step 4 removes its broker from the candidates of every later bundle while another broker is
under the limit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from brokerlb.loadbalance.decisions import PlacementDecision, Reason
from brokerlb.loadbalance.placement.anti_affinity import filter_anti_affinity_group_owned_brokers
from brokerlb.loadbalance.placement.context import PlacementContext
from brokerlb.loadbalance.placement.filters import (
    broker_version_filter,
    filter_brokers_with_large_topic_count,
    remove_most_servicing_brokers_for_namespace,
)
from brokerlb.loadbalance.state import StrategyState
from brokerlb.model import bundle_namespace

__all__ = ["select_modular", "modular_candidates", "ModularCandidates"]


@dataclass(frozen=True, slots=True)
class ModularCandidates:
    """What steps 3-8 leave for a bundle: ``candidates``, the policy ``base`` set they fall back
    to, and a note per step."""

    candidates: tuple[str, ...]
    base: tuple[str, ...]
    steps: tuple[str, ...]


def modular_candidates(
    context: PlacementContext,
    bundle: str,
    *,
    non_persistent: bool = False,
    even_spread: bool | None = None,
) -> ModularCandidates:
    """Steps 3-8 of the module docstring: the brokers the strategy may choose among for ``bundle``.

    ``even_spread`` overrides ``loadBalancerDistributeBundlesEvenlyEnabled`` (a balancer that
    plans load, not bundle counts, asks without it; every other filter applies as configured).
    """
    conf = context.config
    steps: list[str] = []
    namespace = bundle_namespace(bundle)
    isolation = context.isolation(namespace, non_persistent, extensible=False)
    base = list(isolation.candidates)
    steps.append(f"isolation {isolation.describe()}: {len(base)}")
    candidates = filter_brokers_with_large_topic_count(
        base, context.total_topics, conf.loadBalancerBrokerMaxTopics
    )
    steps.append(f"max topics {conf.loadBalancerBrokerMaxTopics}: {len(candidates)}")

    counts = context.anti_affinity_counts(namespace)
    if counts is not None:
        candidates = filter_anti_affinity_group_owned_brokers(
            candidates,
            counts,
            broker_domain=context.broker_domain,
            failure_domains_enabled=conf.failureDomainsEnabled,
        )
        steps.append(f"anti-affinity group '{context.group_of(namespace)}': {len(candidates)}")

    spread = conf.loadBalancerDistributeBundlesEvenlyEnabled if even_spread is None else even_spread
    if spread:
        candidates = remove_most_servicing_brokers_for_namespace(
            candidates, context.namespace_counts(namespace)
        )
        steps.append(f"even spread of {namespace}: {len(candidates)}")

    running = context.brokers_running(context.running_load_manager(extensible=False))
    candidates = [b for b in candidates if b in running]  # BrokerLoadManagerClassFilter
    steps.append(f"load manager class: {len(candidates)}")
    version = broker_version_filter(candidates, _version_of(context), conf.preferLaterVersions)
    if version.failure is not None:
        candidates = list(base)
        steps.append(f"{version.failure}; back to the {len(base)} policy candidates")
    else:
        candidates = version.kept
        if conf.preferLaterVersions:
            steps.append(f"latest version: {len(candidates)}")

    if not candidates:
        candidates = list(base)
        steps.append(f"none left, back to the {len(base)} policy candidates")
    return ModularCandidates(tuple(candidates), tuple(base), tuple(steps))


def _select(
    strategy: Any,
    context: PlacementContext,
    candidates: list[str],
    bundle: str,
    state: StrategyState,
    rng: random.Random,
) -> str | None:
    in_context = getattr(strategy, "select_in_context", None)
    if in_context is not None:
        return in_context(context, candidates, bundle, state, rng)  # type: ignore[no-any-return]
    return strategy.select_broker(context.view, candidates, bundle, state, rng)  # type: ignore[no-any-return]


def select_modular(
    context: PlacementContext,
    bundle: str,
    strategy: Any,
    state: StrategyState,
    rng: random.Random,
    *,
    non_persistent: bool = False,
) -> PlacementDecision:
    """Steps 1-10 of the module docstring (no preallocation: the caller decides)."""
    steps: list[str] = []
    preallocated = context.preallocated_broker(bundle)
    if preallocated is not None:
        return PlacementDecision(
            bundle,
            preallocated,
            (preallocated,),
            Reason.PREALLOCATED,
            f"already preallocated to {preallocated}",
        )
    if not context.modular_brokers:
        return PlacementDecision(bundle, None, (), Reason.NO_BROKERS, "no broker has a load report")
    filtered = modular_candidates(context, bundle, non_persistent=non_persistent)
    candidates, base = list(filtered.candidates), list(filtered.base)
    steps.extend(filtered.steps)
    broker = _select(strategy, context, candidates, bundle, state, rng)
    name = type(strategy).__name__
    if broker is None:
        reason = Reason.NO_CANDIDATES if context.modular_brokers else Reason.NO_BROKERS
        steps.append(f"{name} found no broker")
        return PlacementDecision(bundle, None, tuple(sorted(candidates)), reason, "; ".join(steps))
    steps.append(f"{name} picked {broker}")

    usage = context.max_usage.get(broker)
    threshold = context.overload_threshold
    if usage is not None and usage > threshold:
        second = _select(strategy, context, list(base), bundle, state, rng)
        steps.append(
            f"{broker} is overloaded ({usage:.1%} > {threshold:.0%}); re-selected among the "
            f"{len(base)} policy candidates: {second if second is not None else 'none, kept it'}"
        )
        if second is not None:
            broker = second
            candidates = list(base)
    return PlacementDecision(bundle, broker, tuple(sorted(candidates)), Reason.SELECTED, "; ".join(steps))


def _version_of(context: PlacementContext):  # type: ignore[no-untyped-def]
    def version_of(broker: str) -> str | None:
        data = context.broker_data(broker)
        return None if data is None else data.local_data.broker_version_string

    return version_of
