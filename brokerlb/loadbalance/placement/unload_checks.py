"""Checks the shedding loop runs before unloading a bundle: can it land anywhere better?

Goal: never unload a bundle that its isolation policy or its anti-affinity group would send
straight back to the broker it came from (a pointless disconnect of its clients).

* :func:`should_namespace_policies_unload` -- modular ``shouldNamespacePoliciesUnload``: with
  an isolation policy for the namespace, unload only if ``applyNamespacePolicies`` allows some
  broker other than the current one. Without a policy: always. (Rule taken from Pulsar's
  ``testLoadSheddingWithNamespaceIsolationPolicies``: a policy naming only an absent broker, or
  only the current broker, keeps the bundle where it is; one naming the current and another
  broker lets it go.)
* :func:`should_anti_affinity_namespace_unload` -- modular ``shouldAntiAffinityNamespaceUnload``:
  for a namespace with an anti-affinity group, the candidates are the isolation candidates and
  the rule is :func:`~brokerlb.loadbalance.placement.anti_affinity.should_anti_affinity_namespace_unload`.
* :func:`anti_affinity_can_unload` -- extensible ``AntiAffinityGroupPolicyHelper.canUnload``
  (TransferShedder): after the anti-affinity filter over the available brokers, an unload needs
  some other broker left, a transfer needs its destination left.
* :func:`has_placement_policies` -- whether a bundle's namespace has an isolation policy or an
  anti-affinity group (TransferShedder skips such bundles unless
  ``loadBalancerSheddingBundlesWithPoliciesEnabled``).

Worked example (Pulsar's ``AntiAffinityNamespaceGroupTest.testLoadSheddingUtilWithAntiAffinityNamespace``):
three brokers, namespaces of one group on broker-0 and broker-1: broker-0 may unload (broker-2
holds none); once broker-2 holds one too, every broker holds one and broker-0 keeps it.
"""

from __future__ import annotations

from brokerlb.loadbalance.placement import anti_affinity
from brokerlb.loadbalance.placement.context import context_for
from brokerlb.loadbalance.view import ClusterView
from brokerlb.model import bundle_namespace

__all__ = [
    "should_namespace_policies_unload",
    "should_anti_affinity_namespace_unload",
    "anti_affinity_can_unload",
    "has_placement_policies",
]


def should_namespace_policies_unload(view: ClusterView, bundle: str, current_broker: str) -> bool:
    """Whether the isolation policy of the bundle's namespace lets it move off ``current_broker``."""
    namespace = bundle_namespace(bundle)
    if view.isolation_policy_for(namespace) is None:
        return True
    candidates = context_for(view).isolation(namespace, False, extensible=view.is_extensible).candidates
    return any(broker != current_broker for broker in candidates)


def should_anti_affinity_namespace_unload(view: ClusterView, bundle: str, current_broker: str) -> bool:
    """Whether unloading ``bundle`` from ``current_broker`` can improve its group's spread."""
    namespace = bundle_namespace(bundle)
    context = context_for(view)
    if not context.group_of(namespace):
        return True
    candidates = context.isolation(namespace, False, extensible=False).candidates
    return anti_affinity.should_anti_affinity_namespace_unload(
        current_broker, candidates, context.anti_affinity_counts(namespace)
    )


def anti_affinity_can_unload(
    view: ClusterView, bundle: str, source_broker: str, destination: str | None = None
) -> bool:
    """Extensible rule (module docstring); true for a namespace without a group."""
    namespace = bundle_namespace(bundle)
    context = context_for(view)
    group = context.group_of(namespace)
    if not group:
        return True
    counts = context.owned_bundle_group_counts(group)
    remaining = anti_affinity.filter_anti_affinity_group_owned_brokers(
        list(view.available_brokers),
        counts,
        broker_domain=context.broker_domain,
        failure_domains_enabled=view.config.failureDomainsEnabled,
    )
    return anti_affinity.anti_affinity_can_unload(remaining, source_broker, destination)


def has_placement_policies(view: ClusterView, bundle: str) -> bool:
    """Whether the bundle's namespace has an isolation policy or an anti-affinity group."""
    namespace = bundle_namespace(bundle)
    return view.isolation_policy_for(namespace) is not None or bool(view.anti_affinity_group(namespace))
