"""``ClusterView``: the read-only input every load-balancing strategy receives.

One object carries everything Pulsar's strategies read from their ``LoadData``,
``ServiceConfiguration`` and ``LoadManagerContext`` (broker registry, load-data stores,
service-unit channel, policies), plus the clock value, so a strategy is a pure function
of ``(view, state, rng)``:

* ``config`` -- the broker configuration (:class:`~brokerlb.config.ServiceConfig`);
* ``now_ms`` -- "now" for grace periods, cool-downs and staleness (never the wall clock);
* ``load_data`` -- the modular leader's :class:`~brokerlb.model.LoadData`: per broker its
  ``LocalBrokerData``, ``TimeAverageBrokerData`` and preallocations, the bundle histories
  (``bundle_data``) and ``recently_unloaded_bundles``;
* ``broker_load_data``, ``top_bundles``, ``broker_lookup_data``, ``ownership`` -- the
  extensible load manager's inputs (load-data stores, broker registry, channel owners);
* ``recently_unloaded_brokers`` -- TransferShedder's cool-down memory (broker -> time);
* ``namespace_policies``, ``isolation_policies``, ``failure_domains`` -- policies;
* ``operator_actions`` -- bundle -> the operator's latest split / unload / transfer / merge of it
  within the grace period (:mod:`brokerlb.loadbalance.operator_actions`); ``recent_splits`` --
  the splits the leader decided lately (ring-change cool-downs).

The view is immutable by convention: strategies must not change it or anything it holds
(the leader's refresh, :mod:`brokerlb.loadbalance.refresh`, is what mutates ``LoadData``
between cycles). Derived indexes (owners, namespace -> bundle ranges per broker, bundle
counts) are computed once on first use.

Ownership: ``ownership`` (bundle -> broker, the extensible manager's channel) wins where it
names a bundle; otherwise a broker owns what it reports -- ``localData.bundles``, the keys of
``localData.lastStats`` and its top-bundles list. Pulsar's modular strategies check
``localData.getBundles().contains(bundle)``; its extensible tests mock the channel to say
"the reporting broker owns it". Both fit this rule.

>>> from brokerlb.testing import broker, load_data
>>> view = ClusterView(load_data=load_data([broker("b1:8080", bundles=["t/ns/0x00000000_0x80000000"]),
...                                         broker("b2:8080")]), now_ms=0)
>>> view.available_brokers, view.owner_of("t/ns/0x00000000_0x80000000")
(('b1:8080', 'b2:8080'), 'b1:8080')
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from functools import cached_property
from operator import methodcaller
from typing import Any

from brokerlb.config import ServiceConfig, is_extensible_load_manager
from brokerlb.loadbalance.broker_lookup import BrokerLookupData
from brokerlb.loadbalance.fold import FoldSummary
from brokerlb.loadbalance.java_order import JavaOrder, java_hash_map_order
from brokerlb.loadbalance.operator_actions import OperatorAction
from brokerlb.loadbalance.policies import (
    FailureDomain,
    NamespaceIsolationData,
    NamespacePolicy,
    policy_for_namespace,
)
from brokerlb.loadbalance.range_counts import count_ranges
from brokerlb.model import (
    BrokerData,
    BrokerLoadData,
    BundleData,
    LoadData,
    TopBundlesLoadData,
    bundle_namespace,
)
from brokerlb.naming import SYSTEM_NAMESPACE_PREFIXES, is_system_service_namespace

__all__ = ["ClusterView", "bundle_range_of"]

#: whether a bundle's name may be in a system-service namespace (a cheap first test)
_may_be_system = methodcaller("startswith", SYSTEM_NAMESPACE_PREFIXES)


def bundle_range_of(bundle: str) -> str:
    """The range part of a bundle name (after the last ``/``): ``t/ns/0x0_0x1`` -> ``0x0_0x1``."""
    return bundle.rpartition("/")[2]


@dataclass(frozen=True, eq=False)
class ClusterView:
    """Everything a strategy may read about the cluster at one instant (see the module docstring)."""

    #: broker configuration (Pulsar key names)
    config: ServiceConfig = field(default_factory=ServiceConfig)
    #: "now" in ms since the epoch
    now_ms: int = 0
    #: the modular leader's load data (brokers, bundle histories, recently unloaded bundles)
    load_data: LoadData = field(default_factory=LoadData)
    #: extensible LM: broker id -> BrokerLoadData (weightedMaxEMA, msgThroughputEMA, updatedAt ...)
    broker_load_data: Mapping[str, BrokerLoadData] = field(default_factory=dict)
    #: extensible LM: broker id -> its top-bundles report (Pulsar order: lightest of the K first)
    top_bundles: Mapping[str, TopBundlesLoadData] = field(default_factory=dict)
    #: extensible LM: broker id -> registry entry (version, flags, load manager class)
    broker_lookup_data: Mapping[str, BrokerLookupData] = field(default_factory=dict)
    #: extensible LM: bundle -> owning broker (service-unit channel)
    ownership: Mapping[str, str] = field(default_factory=dict)
    #: extensible LM: broker id -> time (ms) of the last unload from it (TransferShedder cool-down)
    recently_unloaded_brokers: Mapping[str, int] = field(default_factory=dict)
    #: namespace -> anti-affinity group / bundles
    namespace_policies: Mapping[str, NamespacePolicy] = field(default_factory=dict)
    #: isolation policy name -> policy
    isolation_policies: Mapping[str, NamespaceIsolationData] = field(default_factory=dict)
    #: failure domain name -> brokers
    failure_domains: Mapping[str, FailureDomain] = field(default_factory=dict)
    #: bundle -> the operator's latest action on it within the grace period (the leader's record)
    operator_actions: Mapping[str, OperatorAction] = field(default_factory=dict)
    #: bundle -> when the leader decided to split it (split check or strategy), within
    #: ``brokerlbBalancerNoMergeAfterSplitMinutes``
    recent_splits: Mapping[str, int] = field(default_factory=dict)
    #: broker -> namespace -> bundle ranges, when the caller keeps it (a leader's refresh does);
    #: ``None``: computed from ``load_data`` on first use
    bundle_ranges: Mapping[str, Mapping[str, AbstractSet[str]]] | None = None
    #: namespace -> broker -> number of its ranges there, when the caller keeps it in step with
    #: ``bundle_ranges`` (a leader does: :mod:`brokerlb.loadbalance.range_counts`); ``None``:
    #: computed from ``namespace_bundle_ranges`` on first use
    range_counts: Mapping[str, Mapping[str, int]] | None = None
    #: what the leader's last refresh folded, when the caller keeps it (a split-check prefilter,
    #: used only while it still describes ``load_data``; :mod:`brokerlb.loadbalance.fold`)
    fold_summary: FoldSummary | None = None

    # ------------------------------------------------------------------ copies

    def with_config(self, config: ServiceConfig) -> ClusterView:
        """The same cluster under another configuration."""
        return replace(self, config=config)

    def with_overrides(self, overrides: Mapping[str, Any]) -> ClusterView:
        """The same cluster with some config keys changed (``--set key=value``)."""
        return replace(self, config=self.config.with_overrides(overrides, strict=True))

    # ------------------------------------------------------------------ brokers

    @property
    def brokers(self) -> Mapping[str, BrokerData]:
        """Modular brokers: id -> :class:`~brokerlb.model.BrokerData`."""
        return self.load_data.broker_data

    @cached_property
    def available_brokers(self) -> tuple[str, ...]:
        """Every broker the snapshot knows (keys of ``brokers``, ``broker_load_data``,
        ``broker_lookup_data``), sorted."""
        return tuple(sorted({*self.load_data.broker_data, *self.broker_load_data, *self.broker_lookup_data}))

    @property
    def is_extensible(self) -> bool:
        """Whether ``loadManagerClassName`` names the extensible load manager."""
        return is_extensible_load_manager(self.config.loadManagerClassName)

    # ------------------------------------------------------------------ bundles and owners

    @property
    def bundle_data(self) -> Mapping[str, BundleData]:
        return self.load_data.bundle_data

    @property
    def recently_unloaded_bundles(self) -> Mapping[str, int]:
        """bundle -> time (ms) it was last unloaded by shedding."""
        return self.load_data.recently_unloaded_bundles

    @cached_property
    def bundle_data_for_load_shedding(self) -> Mapping[str, BundleData]:
        """``bundle_data`` without system-service namespaces (Pulsar's ``getBundleDataForLoadShedding``)."""
        system: dict[str, bool] = {}
        out: dict[str, BundleData] = {}
        for bundle, data in self.load_data.bundle_data.items():
            namespace = bundle.rpartition("/")[0]
            excluded = system.get(namespace)
            if excluded is None:
                excluded = system[namespace] = is_system_service_namespace(namespace)
            if not excluded:
                out[bundle] = data
        return out

    @cached_property
    def _shedding_bundle_order(self) -> JavaOrder:
        # the map's size without building it: only system namespaces' bundles are left out, and
        # their names all start with "pulsar/" or "sla-monitor/"
        bundles = self.load_data.bundle_data
        system = sum(
            1
            for bundle in filter(_may_be_system, bundles)
            if self.is_system_namespace(bundle.rpartition("/")[0])
        )
        return JavaOrder.lazy(len(bundles) - system, lambda: self.bundle_data_for_load_shedding)

    def bundle_order(self, bundles: Iterable[str]) -> list[str]:
        """``bundles`` (distinct) in the order Pulsar iterates its bundle-data map for shedding
        (ties in sorts keep this order; see :mod:`~brokerlb.loadbalance.java_order`)."""
        return self._shedding_bundle_order.order(bundles)

    @cached_property
    def modular_broker_order(self) -> tuple[str, ...]:
        """``brokers`` in the order Pulsar iterates its broker-data map."""
        return tuple(java_hash_map_order(self.load_data.broker_data))

    @cached_property
    def broker_load_order(self) -> tuple[str, ...]:
        """``broker_load_data`` brokers in the order Pulsar iterates its load-data store."""
        return tuple(java_hash_map_order(self.broker_load_data))

    @staticmethod
    def namespace_of(bundle: str) -> str:
        """``tenant/ns`` of ``tenant/ns/0x…_0x…`` (everything before the last ``/``)."""
        return bundle_namespace(bundle)

    @staticmethod
    def is_system_bundle(bundle: str) -> bool:
        """Whether the bundle is in ``pulsar/system``, a heartbeat or an SLA-monitor namespace."""
        return is_system_service_namespace(bundle_namespace(bundle))

    @cached_property
    def derived(self) -> dict[str, Any]:
        """What other modules derive from this view and keep with it, by name (its placement
        context: :func:`~brokerlb.loadbalance.placement.context.context_for`). Kept on the view,
        it lives as long as the view and no longer."""
        return {}

    def drop_derived(self) -> None:
        """Forget what was derived from this view. Its placement context refers back to the view:
        a step that is done with the view drops the pair here, so reference counting frees them
        (with the reports the view holds) at once rather than the cyclic collector later -- a
        long-lived process that freezes its state between refreshes (:mod:`brokerlb.broker.leader.collector`)
        would otherwise freeze that garbage. Asking for a derived value again just rebuilds it."""
        self.__dict__.pop("derived", None)

    @cached_property
    def _reported_cache(self) -> dict[str, frozenset[str]]:
        return {}

    @cached_property
    def _system_namespaces(self) -> dict[str, bool]:
        return {}

    def is_system_namespace(self, namespace: str) -> bool:
        """:func:`~brokerlb.naming.is_system_service_namespace`, memoised per view."""
        cache = self._system_namespaces
        excluded = cache.get(namespace)
        if excluded is None:
            excluded = cache[namespace] = is_system_service_namespace(namespace)
        return excluded

    def shedding_bundle_data(self, bundle: str) -> BundleData | None:
        """``bundle_data_for_load_shedding.get(bundle)`` without building that map."""
        data = self.load_data.bundle_data.get(bundle)
        if data is None or self.is_system_namespace(bundle.rpartition("/")[0]):
            return None
        return data

    def reported_bundles(self, broker: str) -> frozenset[str]:
        """Bundles ``broker`` reports (``localData.bundles``, ``lastStats`` keys, top bundles)."""
        cache = self._reported_cache
        reported = cache.get(broker)
        if reported is None:
            names: set[str] = set()
            data = self.load_data.broker_data.get(broker)
            if data is not None:
                names.update(data.local_data.bundles, data.local_data.last_stats)
            top = self.top_bundles.get(broker)
            if top is not None:
                names.update(top.bundle_names())
            reported = cache[broker] = frozenset(names)
        return reported

    def is_owner(self, broker: str, bundle: str) -> bool:
        """Whether ``broker`` owns ``bundle`` (``ownership`` first, else what the broker reports)."""
        owner = self.ownership.get(bundle)
        if owner is not None:
            return owner == broker
        return bundle in self.reported_bundles(broker)

    @cached_property
    def _owned_cache(self) -> dict[str, frozenset[str]]:
        return {}

    @cached_property
    def _owned_by_map(self) -> dict[str, set[str]]:
        owned: dict[str, set[str]] = {}
        for bundle, broker in self.ownership.items():
            owned.setdefault(broker, set()).add(bundle)
        return owned

    def bundles_owned_by(self, broker: str) -> frozenset[str]:
        """Bundles ``broker`` owns under the rule of :meth:`is_owner`."""
        cache = self._owned_cache
        owned = cache.get(broker)
        if owned is None:
            reported = self.reported_bundles(broker)
            ownership = self.ownership
            if ownership:
                owned = frozenset(
                    {b for b in reported if ownership.get(b, broker) == broker}
                    | self._owned_by_map.get(broker, set())
                )
            else:
                owned = reported
            cache[broker] = owned
        return owned

    @cached_property
    def _reporting_brokers(self) -> tuple[str, ...]:
        return tuple(sorted({*self.load_data.broker_data, *self.top_bundles, *self._owned_by_map}))

    @cached_property
    def _owner_index(self) -> dict[str, str]:
        index: dict[str, str] = {}
        for broker in reversed(self._reporting_brokers):  # first broker in sorted order wins
            for bundle in self.bundles_owned_by(broker):
                index[bundle] = broker
        return index

    def owner_of(self, bundle: str) -> str | None:
        """The owner of ``bundle``: ``ownership`` if it names it, else the (first, by id)
        broker reporting it; ``None`` if nobody does."""
        owner = self.ownership.get(bundle)
        return owner if owner is not None else self._owner_index.get(bundle)

    @cached_property
    def namespace_bundle_ranges(self) -> Mapping[str, Mapping[str, AbstractSet[str]]]:
        """broker -> namespace -> bundle ranges it holds: its ``lastStats`` keys plus its
        preallocated bundles (Pulsar's ``brokerToNamespaceToBundleRange``). A leader passes the
        map its refresh keeps (``bundle_ranges``); otherwise it is computed here. Read-only."""
        if self.bundle_ranges is not None:
            return self.bundle_ranges
        out: dict[str, dict[str, set[str]]] = {}
        for broker, data in self.load_data.broker_data.items():
            per_ns = out[broker] = {}
            for names in (data.local_data.last_stats, data.preallocated_bundle_data):
                for bundle in names:
                    namespace, _, bundle_range = bundle.rpartition("/")
                    ranges = per_ns.get(namespace)
                    if ranges is None:
                        ranges = per_ns[namespace] = set()
                    ranges.add(bundle_range)
        return out

    @cached_property
    def namespace_range_counts(self) -> Mapping[str, Mapping[str, int]]:
        """namespace -> broker -> how many of the namespace's ranges the broker holds (brokers
        holding none are absent): :attr:`namespace_bundle_ranges` turned around. A leader passes
        the counts it keeps (``range_counts``); otherwise they are computed here. Read-only."""
        if self.range_counts is not None:
            return self.range_counts
        return count_ranges(self.namespace_bundle_ranges)

    @cached_property
    def _bundles_by_namespace(self) -> dict[str, set[str]]:
        grouped: dict[str, set[str]] = {}

        def add(names: Iterable[str]) -> None:
            for bundle in names:
                namespace = bundle.rpartition("/")[0]
                members = grouped.get(namespace)
                if members is None:
                    members = grouped[namespace] = set()
                members.add(bundle)

        known = self.load_data.bundle_data
        add(known)  # a leader's bundle data already holds every reported and preallocated bundle
        add(b for b in self.ownership if b not in known)
        for broker in self._reporting_brokers:
            add(b for b in self.reported_bundles(broker) if b not in known)
        for data in self.load_data.broker_data.values():
            add(b for b in data.preallocated_bundle_data if b not in known)
        return grouped

    def bundles_of_namespace(self, namespace: str) -> AbstractSet[str]:
        """Every bundle of ``namespace`` the snapshot mentions (histories, reports, owners). Read-only."""
        return self._bundles_by_namespace.get(namespace, frozenset())

    @cached_property
    def _namespace_bundle_counts(self) -> dict[str, int]:
        known = self.load_data.bundle_data
        counts = Counter(bundle.rpartition("/")[0] for bundle in known)
        extra: set[str] = {b for b in self.ownership if b not in known}
        for broker in self._reporting_brokers:
            extra.update(b for b in self.reported_bundles(broker) if b not in known)
        for data in self.load_data.broker_data.values():
            extra.update(b for b in data.preallocated_bundle_data if b not in known)
        counts.update(bundle.rpartition("/")[0] for bundle in extra)
        return counts

    def bundle_count(self, namespace: str) -> int:
        """How many bundles ``namespace`` has: from its policies' ``bundles`` when given,
        else the number of its bundles the snapshot mentions."""
        policy = self.namespace_policies.get(namespace)
        if policy is not None and policy.bundles is not None:
            return policy.bundles.num_bundles
        return self._namespace_bundle_counts.get(namespace, 0)

    def knows_bundle(self, bundle: str) -> bool:
        """Whether the snapshot mentions ``bundle``: a history, a report, an owner, a
        preallocation, or a range of its namespace's ``bundles`` policy."""
        namespace = bundle_namespace(bundle)
        if (
            bundle in self.load_data.bundle_data
            or bundle in self.ownership
            or any(bundle in self.reported_bundles(b) for b in self._reporting_brokers)
            or any(bundle in d.preallocated_bundle_data for d in self.load_data.broker_data.values())
        ):
            return True
        policy = self.namespace_policies.get(namespace)
        return policy is not None and policy.bundles is not None and bundle_range_of(bundle) in policy.bundles

    # ------------------------------------------------------------------ policies

    def anti_affinity_group(self, namespace: str) -> str | None:
        """The namespace's ``namespaceAntiAffinityGroup`` (``None`` = none)."""
        policy = self.namespace_policies.get(namespace)
        return policy.anti_affinity_group if policy is not None else None

    def isolation_policy_for(self, namespace: str) -> tuple[str, NamespaceIsolationData] | None:
        """The isolation policy ``namespace`` falls under (:func:`policy_for_namespace`)."""
        return policy_for_namespace(self.isolation_policies, namespace)

    def failure_domain_of(self, broker: str) -> str | None:
        """The failure domain listing ``broker`` (first by name), ``None`` if none does."""
        for name in sorted(self.failure_domains):
            if broker in self.failure_domains[name].brokers:
                return name
        return None
