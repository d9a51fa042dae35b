"""What the live leader reads: :class:`~brokerlb.loadbalance.leader.ClusterInputs` from the
broker's watch-fed caches (memory reads; nothing here waits on the store).

* **reports** -- every registered broker's ``LocalBrokerData`` from the registry cache
  (``/loadbalance/brokers/*``, :meth:`~brokerlb.coordination.registry.BrokerRegistry.report`:
  decoded once per node version and the same object until the broker writes again -- the
  leader's refresh reuses what it already folded for an unchanged report); a draining broker is
  left out; the mapping itself is the same object until the registry changes, so a placement
  does not walk the registry. A node that is empty, not JSON, or not a valid report counts as
  having no report (``None``, one log line per version), and the cycle goes on for the others.
* **namespace policies** -- a live view of the namespace bundles cache (anti-affinity group and
  bundles of every namespace a lookup or a report has loaded);
* **isolation policies and failure domains** -- the cluster policies cache;
* **policies version** -- changes when any of the above changes in a way placement must see
  (the leader rebuilds its placement indexes then);
* **owner of** -- who owns a bundle now (the ownership table): the leader skips a strategy's
  move of a bundle its source no longer owns (``NotOwned``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping

from brokerlb.broker.leader.policies_cache import ClusterPoliciesCache
from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
from brokerlb.coordination import BrokerRegistry
from brokerlb.loadbalance.leader import ClusterInputs
from brokerlb.loadbalance.policies import NamespacePolicy
from brokerlb.model import LocalBrokerData

__all__ = ["LeaderInputs", "NamespacePoliciesView"]

logger = logging.getLogger(__name__)


class NamespacePoliciesView(Mapping[str, NamespacePolicy]):
    """``namespace -> NamespacePolicy`` read through to the bundles cache (always current)."""

    def __init__(self, bundles: NamespaceBundlesCache) -> None:
        self._bundles = bundles

    def __getitem__(self, namespace: str) -> NamespacePolicy:
        found = self._bundles.policy_of(namespace)
        if found is None:
            raise KeyError(namespace)
        bundles, group = found
        return NamespacePolicy(group, bundles)

    def __iter__(self) -> Iterator[str]:
        return iter(self._bundles.namespaces())

    def __len__(self) -> int:
        return len(self._bundles.namespaces())


class LeaderInputs:
    """Builds the leader's inputs from the registry, bundles and cluster-policies caches."""

    def __init__(
        self,
        registry: BrokerRegistry,
        bundles: NamespaceBundlesCache,
        policies: ClusterPoliciesCache,
        *,
        owner_of: Callable[[str], str | None] | None = None,
    ) -> None:
        self._owner_of = owner_of
        self._registry = registry
        self._bundles = bundles
        self._policies = policies
        self._namespaces = NamespacePoliciesView(bundles)
        #: the last mapping returned, and the registry version it was built at
        self._reports: dict[str, LocalBrokerData | None] = {}
        self._reports_version = -1

    def reports(self) -> Mapping[str, LocalBrokerData | None]:
        """Every registered broker's latest report (``None``: missing or unreadable). The same
        mapping is returned until the registry changes: read it, never change it."""
        registry = self._registry
        version = registry.version
        if version == self._reports_version:
            return self._reports
        out: dict[str, LocalBrokerData | None] = {}
        for broker in registry.available_brokers():
            registered = registry.broker(broker)
            if registered is not None and registered.draining:
                continue  # a broker stopping gracefully: no placement picks it, its bundles go elsewhere
            out[broker] = registry.report(broker)
        self._reports, self._reports_version = out, version
        return out

    def current(self) -> ClusterInputs:
        return ClusterInputs(
            reports=self.reports(),
            namespace_policies=self._namespaces,
            isolation_policies=self._policies.isolation,
            failure_domains=self._policies.failure_domains,
            policies_version=self._bundles.version + self._policies.version,
            owner_of=self._owner_of,
        )
