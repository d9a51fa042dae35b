"""``PlacementContext``: the placement indexes of one cluster view, plus the leader's preallocations.

Placing a bundle looks at every broker several times (isolation, topic counts,
anti-affinity, even spread, scores). A :class:`PlacementContext` computes what does not
change between placements once per :class:`~brokerlb.loadbalance.view.ClusterView` --
per-broker usage and long-term rates, topic counts, the broker -> namespace -> bundle-range
map, isolation answers per namespace, anti-affinity counts per group -- so one placement
costs a few passes over the candidate list.

It is also the leader's working memory between two refreshes: :meth:`PlacementContext.preallocate`
records an assignment the way Pulsar's ``selectBrokerForAssignment`` does (the bundle's data
is added to the broker's ``preallocatedBundleData``, its range to the broker -> namespace map),
so the next placement counts it. The view itself is never modified.

:func:`context_for` returns a cached, never-preallocated context per view (what the pure
:func:`~brokerlb.loadbalance.placement.pipeline.select_broker_for_assignment` uses).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from brokerlb.config import (
    EXTENSIBLE_LOAD_MANAGER_CLASS,
    MODULAR_LOAD_MANAGER_CLASS,
    is_extensible_load_manager,
    short_class_name,
)
from brokerlb.loadbalance.placement.anti_affinity import DEFAULT_DOMAIN, anti_affinity_bundle_counts
from brokerlb.loadbalance.placement.isolation import (
    IsolationPolicy,
    IsolationResult,
    apply_namespace_policies,
    is_shared_broker,
)
from brokerlb.loadbalance.placement.strategies.least_resource_usage_with_weight import (
    restarts_history,
    weighted_usage,
)
from brokerlb.loadbalance.view import ClusterView, bundle_range_of
from brokerlb.model import BrokerData, BundleData, ResourceWeights, bundle_namespace

if TYPE_CHECKING:
    from brokerlb.loadbalance.broker_lookup import BrokerLookupData

__all__ = ["PlacementContext", "context_for"]

_MISSING = object()
_NO_COUNTS: Mapping[str, int] = {}


class PlacementContext:
    """Per-view placement indexes (module docstring). Not thread-safe."""

    def __init__(self, view: ClusterView, *, previous: PlacementContext | None = None) -> None:
        """``previous``: the context of an earlier view of the same leader; a broker's usage
        figures are taken from it when the broker's report is the same object (reports are not
        changed in place once handed to the leader), so a rebuild after a refresh computes them
        only for the brokers that wrote a new report."""
        self.view = view
        conf = view.config
        self.config = conf
        self.weights = ResourceWeights.from_config(conf)
        self.overload_threshold = conf.loadBalancerBrokerOverloadedThresholdPercentage / 100.0
        brokers = view.brokers
        #: modular available brokers: those with a load report (children of /loadbalance/brokers)
        self.modular_brokers: tuple[str, ...] = tuple(b for b in view.available_brokers if b in brokers)
        #: extensible available brokers: every broker the snapshot knows
        self.extensible_brokers: tuple[str, ...] = view.available_brokers
        #: every broker of the snapshot, as a set
        self.available_set: frozenset[str] = frozenset(view.available_brokers)

        self.max_usage: dict[str, float] = {}
        self.weighted_usage: dict[str, float] = {}
        self.long_term_rate: dict[str, float] = {}
        self.reported_topics: dict[str, int] = {}
        #: brokers with preallocations only (absent: none)
        self.preallocated_rate: dict[str, float] = {}
        self.preallocated_topics: dict[str, int] = {}
        self.preallocated: dict[str, str] = {}
        self.preallocated_data: dict[str, dict[str, BundleData]] = {}
        w = self.weights
        #: broker -> (its report, max usage, weighted usage, simple name of its load manager
        #: class or None): what a later context may reuse
        self._usage: dict[str, tuple[object, float, float, str | None]] = {}
        reusable = previous._usage if previous is not None and previous.weights == w else {}
        for broker, data in brokers.items():
            local = data.local_data
            usage = reusable.get(broker)
            if usage is None or usage[0] is not local:
                name = local.load_manager_class_name
                usage = (
                    local,
                    local.max_resource_usage(),
                    local.max_resource_usage_with_weight(
                        w.cpu, w.memory, w.direct_memory, w.bandwidth_in, w.bandwidth_out
                    ),
                    short_class_name(name) if name and name.strip() else None,
                )
            self._usage[broker] = usage
            self.max_usage[broker] = usage[1]
            self.weighted_usage[broker] = usage[2]
            average = data.time_average_data
            self.long_term_rate[broker] = average.long_term_msg_rate_in + average.long_term_msg_rate_out
            self.reported_topics[broker] = local.num_topics
            preallocated = data.preallocated_bundle_data
            if not preallocated:
                continue
            self.preallocated_data[broker] = dict(preallocated)
            self.preallocated_rate[broker] = sum(
                d.long_term_data.msg_rate_in + d.long_term_data.msg_rate_out for d in preallocated.values()
            )
            self.preallocated_topics[broker] = sum(d.topics for d in preallocated.values())
            for bundle in preallocated:
                self.preallocated.setdefault(bundle, broker)

        #: LeastLongTermMessageRate score and topic count (with preallocations) per broker
        self.scores: dict[str, float] = {}
        self.total_topics: dict[str, int] = {}
        for broker in brokers:
            self._rescore(broker)

        #: broker -> namespace -> ranges (lastStats keys + preallocated) of the (broker, namespace)
        #: pairs a bundle was preallocated to: the view's set, copied the first time (copy on
        #: write; the other pairs are the view's)
        self._view_ranges = view.namespace_bundle_ranges
        self.broker_ranges: dict[str, dict[str, set[str]]] = {}
        #: namespace -> broker -> number of its ranges there: the view's counts, with a namespace's
        #: entry copied the first time a bundle of it is preallocated (copy on write)
        self._view_counts = view.namespace_range_counts
        self._own_counts: dict[str, dict[str, int]] = {}

        self._usage_samples: dict[str, tuple[float, bool]] | None = None
        self._shared_hosts: dict[str, bool] | None = None
        self._isolation: dict[tuple[object, bool, bool], IsolationResult] = {}
        self._policy_of: dict[str, object] = {}
        self._policies: dict[str, IsolationPolicy] | None = None
        self._class_matches: dict[str, frozenset[str]] = {}
        self._extensible_topics: dict[str, int] | None = None
        self._owners: dict[str, str] | None = None
        self._group_counts: dict[str, dict[str, int]] = {}
        self._members: dict[str, list[str]] | None = None
        self._group_of: dict[str, str | None] = {}
        self.broker_domain: dict[str, str] = {}
        for name in sorted(view.failure_domains, reverse=True):  # first domain by name wins
            for broker in view.failure_domains[name].brokers:
                self.broker_domain[broker] = name

    def prepare(self) -> None:
        """Compute now what nearly every modular placement asks first, rather than in the first
        lookup after a refresh: the isolation answer of a namespace without a policy
        (persistent), whether each broker is shared, the brokers running the configured load
        manager, and every anti-affinity group's counts. Only caches are filled: what a
        placement decides is unchanged."""
        key = (None, False, False)
        if key not in self._isolation:
            self._isolation[key] = self._apply_policies("", None, non_persistent=False, extensible=False)
        self.brokers_running(self.running_load_manager(extensible=False))
        for group in self._group_members():
            self._counts_of_group(group)

    def running_load_manager(self, *, extensible: bool) -> str:
        """The load manager whose pipeline runs: ``loadManagerClassName`` when it is of that kind,
        else Pulsar's class of that kind (a planner asked for the other kind's strategy)."""
        configured = self.config.loadManagerClassName
        if is_extensible_load_manager(configured) == extensible:
            return configured
        return EXTENSIBLE_LOAD_MANAGER_CLASS if extensible else MODULAR_LOAD_MANAGER_CLASS

    # ------------------------------------------------------------------ per-broker values

    def broker_data(self, broker: str) -> BrokerData | None:
        return self.view.brokers.get(broker)

    def lookup_data(self, broker: str) -> BrokerLookupData | None:
        return self.view.broker_lookup_data.get(broker)

    def topics_with_preallocated(self, broker: str) -> int:
        """Reported topics plus preallocated topics (0 for a broker without load data)."""
        return self.total_topics.get(broker, 0)

    def long_term_message_rate_score(self, broker: str) -> float:
        """``LeastLongTermMessageRate``'s score (``+inf`` when overloaded or unknown)."""
        return self.scores.get(broker, math.inf)

    def _rescore(self, broker: str) -> None:
        usage = self.weighted_usage[broker]
        self.scores[broker] = (
            math.inf
            if usage > self.overload_threshold
            else self.preallocated_rate.get(broker, 0.0) + self.long_term_rate[broker]
        )
        self.total_topics[broker] = self.reported_topics[broker] + self.preallocated_topics.get(broker, 0)

    @property
    def usage_samples(self) -> dict[str, tuple[float, bool]]:
        """``LeastResourceUsageWithWeight``'s input per broker: (4-weight usage, restart its EMA?)."""
        if self._usage_samples is None:
            self._usage_samples = {
                b: (weighted_usage(d, self.weights), restarts_history(d))
                for b, d in self.view.brokers.items()
            }
        return self._usage_samples

    # ------------------------------------------------------------------ policies

    def group_of(self, namespace: str) -> str | None:
        group = self._group_of.get(namespace, "")
        if group == "":
            group = self._group_of[namespace] = self.view.anti_affinity_group(namespace) or None
        return group

    def isolation(self, namespace: str, non_persistent: bool, *, extensible: bool) -> IsolationResult:
        """``applyNamespacePolicies`` over the available brokers.

        The answer depends only on the namespace's policy (or on having none), so it is cached
        per policy: one pass over the brokers per policy and topic domain, not per namespace.
        """
        policies = self._ordered_policies()
        found = self._policy_of.get(namespace, _MISSING)
        if found is _MISSING:
            match = self.view.isolation_policy_for(namespace) if policies else None
            found = self._policy_of[namespace] = None if match is None else match[0]
        key = (found, non_persistent, extensible)
        result = self._isolation.get(key)
        if result is None:
            result = self._isolation[key] = self._apply_policies(
                namespace, found, non_persistent=non_persistent, extensible=extensible
            )
        return result

    def _apply_policies(
        self, namespace: str, policy: object, *, non_persistent: bool, extensible: bool
    ) -> IsolationResult:
        """``applyNamespacePolicies`` for ``namespace``, whose policy is ``policy`` (``None``: no
        policy matches it, so the policies are not searched again)."""
        return apply_namespace_policies(
            namespace,
            self.extensible_brokers if extensible else self.modular_brokers,
            self._ordered_policies() if policy is not None else {},
            non_persistent=non_persistent,
            serves_domain=self.serves_domain_extensible if extensible else self.serves_domain_modular,
            shared_hosts=self._shared(),
        )

    def _ordered_policies(self) -> Mapping[str, IsolationPolicy]:
        if self._policies is None:
            policies = self.view.isolation_policies
            self._policies = {name: policies[name] for name in sorted(policies)}
        return self._policies

    def _shared(self) -> dict[str, bool]:
        if self._shared_hosts is None:
            policies = self._ordered_policies()
            ids = {*self.modular_brokers, *self.extensible_brokers}
            self._shared_hosts = {b: is_shared_broker(policies, b) if policies else True for b in ids}
        return self._shared_hosts

    def serves_domain_modular(self, broker: str, non_persistent: bool) -> bool:
        data = self.view.brokers.get(broker)
        if data is None:
            return False
        local = data.local_data
        return local.non_persistent_topics_enabled if non_persistent else local.persistent_topics_enabled

    def serves_domain_extensible(self, broker: str, non_persistent: bool) -> bool:
        lookup = self.view.broker_lookup_data.get(broker)
        if lookup is None:  # no registry entry in the snapshot: both domains
            return True
        return lookup.non_persistent_topics_enabled if non_persistent else lookup.persistent_topics_enabled

    def domain_of(self, broker: str) -> str:
        return self.broker_domain.get(broker, DEFAULT_DOMAIN)

    def namespace_counts(self, namespace: str) -> Mapping[str, int]:
        """broker -> how many ranges of ``namespace`` it holds, preallocations included (even spread)."""
        own = self._own_counts.get(namespace)
        return own if own is not None else self._view_counts.get(namespace, _NO_COUNTS)

    def anti_affinity_counts(self, namespace: str) -> dict[str, int] | None:
        """Modular ``getAntiAffinityNamespaceOwnedBrokers``: broker -> namespaces of the group it holds."""
        group = self.group_of(namespace)
        if not group:
            return None
        return self._counts_of_group(group.casefold())

    def _counts_of_group(self, key: str) -> dict[str, int]:
        counts = self._group_counts.get(key)
        if counts is None:
            counts = {}
            for ns in self._group_members().get(key, ()):
                for broker, n in self.namespace_counts(ns).items():
                    if n:
                        counts[broker] = counts.get(broker, 0) + 1
            self._group_counts[key] = counts
        return counts

    def _group_members(self) -> dict[str, list[str]]:
        """Anti-affinity group (case-folded) -> its namespaces, in the policies' order: one pass
        over the namespace policies for every group."""
        members = self._members
        if members is None:
            members = self._members = {}
            for ns, policy in self.view.namespace_policies.items():
                if policy.anti_affinity_group:
                    members.setdefault(policy.anti_affinity_group.casefold(), []).append(ns)
        return members

    def owned_bundle_group_counts(self, group: str) -> dict[str, int]:
        """Extensible ``getAntiAffinityNamespaceOwnedBrokers``: broker -> owned bundles of the group.

        Owners follow the view's rule: the service-unit channel (``ownership``) where it names a
        bundle, else the broker reporting it.
        """
        key = "owned:" + group.casefold()
        counts = self._group_counts.get(key)
        if counts is None:
            counts = anti_affinity_bundle_counts(group, self.owners, self.group_of, bundle_namespace) or {}
            self._group_counts[key] = counts
        return counts

    @property
    def owners(self) -> dict[str, str]:
        """bundle -> owner under the view's ownership rule (channel first, else the reporter)."""
        if self._owners is None:
            view = self.view
            brokers = sorted({*view.available_brokers, *view.ownership.values()}, reverse=True)
            owners: dict[str, str] = {}
            for broker in brokers:  # the first broker by id wins a bundle two brokers report
                for bundle in view.bundles_owned_by(broker):
                    owners[bundle] = broker
            owners.update(view.ownership)
            self._owners = owners
        return self._owners

    def registered_running(self, wanted: str) -> frozenset[str]:
        """Extensible brokers whose registry entry names the load manager ``wanted`` (simple name);
        a broker without an entry in the snapshot counts as running it."""
        key = "lookup:" + wanted
        matches = self._class_matches.get(key)
        if matches is None:
            lookup = self.view.broker_lookup_data
            matches = frozenset(
                b
                for b in self.extensible_brokers
                if b not in lookup
                or (
                    (name := lookup[b].load_manager_class_name)
                    and name.strip()
                    and short_class_name(name) == wanted
                )
            )
            self._class_matches[key] = matches
        return matches

    @property
    def extensible_topics(self) -> dict[str, int]:
        """Topics each broker's extensible load data reports."""
        if self._extensible_topics is None:
            self._extensible_topics = {b: d.topics for b, d in self.view.broker_load_data.items()}
        return self._extensible_topics

    def brokers_running(self, load_manager: str) -> frozenset[str]:
        """Modular brokers whose report names ``load_manager`` (simple class names compared)."""
        wanted = short_class_name(load_manager)
        matches = self._class_matches.get(wanted)
        if matches is None:
            usage = self._usage
            matches = frozenset(b for b in self.modular_brokers if usage[b][3] == wanted)
            self._class_matches[wanted] = matches
        return matches

    # ------------------------------------------------------------------ preallocation

    def preallocated_broker(self, bundle: str) -> str | None:
        return self.preallocated.get(bundle)

    def bundle_data(self, bundle: str) -> BundleData:
        """``getBundleDataOrDefault``: the bundle's history, or Pulsar's default (50 msg/s, 50 KB/s)."""
        data = self.view.bundle_data.get(bundle)
        return data if data is not None else BundleData.new_default()

    def preallocate(self, bundle: str, broker: str, data: BundleData | None = None) -> None:
        """Record that ``bundle`` was assigned to ``broker`` (Pulsar's step after selection)."""
        if bundle in self.preallocated:
            return
        data = data if data is not None else self.bundle_data(bundle)
        self.preallocated[bundle] = broker
        self.preallocated_data.setdefault(broker, {})[bundle] = data
        self.preallocated_rate[broker] = (
            self.preallocated_rate.get(broker, 0.0)
            + data.long_term_data.msg_rate_in
            + data.long_term_data.msg_rate_out
        )
        self.preallocated_topics[broker] = self.preallocated_topics.get(broker, 0) + data.topics
        if broker in self.weighted_usage:
            self._rescore(broker)
        namespace = bundle_namespace(bundle)
        per_ns = self.broker_ranges.setdefault(broker, {})
        ranges = per_ns.get(namespace)
        if ranges is None:
            ranges = per_ns[namespace] = set(self._view_ranges.get(broker, {}).get(namespace, ()))
        new_namespace_here = not ranges
        before = len(ranges)
        ranges.add(bundle_range_of(bundle))
        if len(ranges) != before:
            per_broker = self._own_counts.get(namespace)
            if per_broker is None:
                per_broker = self._own_counts[namespace] = dict(self._view_counts.get(namespace, _NO_COUNTS))
            per_broker[broker] = per_broker.get(broker, 0) + 1
        group = self.group_of(namespace)
        if new_namespace_here and group:
            counts = self._group_counts.get(group.casefold())
            if counts is not None:
                counts[broker] = counts.get(broker, 0) + 1


def context_for(view: ClusterView) -> PlacementContext:
    """The view's cached context (never preallocated into: use a fresh one to preallocate). It is
    kept on the view (:attr:`ClusterView.derived`), so it goes when the view goes -- a cache
    outside the view would keep every view alive through its context."""
    context = view.derived.get("placement_context")
    if context is None:
        context = view.derived["placement_context"] = PlacementContext(view)
    return context
