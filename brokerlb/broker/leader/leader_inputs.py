"""What the live leader reads: :class:`~brokerlb.loadbalance.leader.ClusterInputs` from the
broker's watch-fed caches (memory reads; nothing here waits on the store).

* **reports** -- every registered broker's ``LocalBrokerData`` from the registry cache
  (``/loadbalance/brokers/*``), read once per node version from the JSON the registry already
  parsed and then handed to the leader as the same object until the broker writes again (the
  leader's refresh reuses what it already folded for an unchanged report); the mapping itself
  is the same object until the registry changes, so a placement does not walk the registry. A
  node that is empty, not JSON, or not a valid report is skipped with one log line per version:
  that broker counts as having no report, and the cycle goes on for the others.
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
from typing import Any

from brokerlb.broker.leader.policies_cache import ClusterPoliciesCache
from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
from brokerlb.coordination import BrokerRegistry
from brokerlb.errors import BrokerLBError
from brokerlb.loadbalance.leader import ClusterInputs
from brokerlb.loadbalance.policies import NamespacePolicy
from brokerlb.model import LocalBrokerData

__all__ = ["LeaderInputs", "NamespacePoliciesView", "DRAINING_KEY", "is_draining"]

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
        #: broker -> (node mzxid, its decoded report or None when unreadable)
        self._decoded: dict[str, tuple[int, LocalBrokerData | None]] = {}
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
            if is_draining(registry.broker_json(broker)):
                continue  # a broker stopping gracefully: no placement picks it, its bundles go elsewhere
            node = registry.broker_node(broker)
            if node is None:
                out[broker] = None
                continue
            cached = self._decoded.get(broker)
            if cached is None or cached[0] != node.stat.mzxid:
                cached = (node.stat.mzxid, _decode(broker, registry.broker_json(broker)))
                self._decoded[broker] = cached
            out[broker] = cached[1]
        for gone in set(self._decoded) - set(out):
            del self._decoded[gone]
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


#: The brokerlb key a stopping broker adds to its registration (Pulsar's ``disableBroker``: it leaves
#: the registry before it releases its bundles; brokerlb keeps the registration -- its session names
#: the bundles it still releases -- and says it is leaving).
DRAINING_KEY = "brokerlbDraining"


def is_draining(report: Any) -> bool:
    """Whether a registration says its broker is stopping (:data:`DRAINING_KEY`)."""
    return isinstance(report, dict) and report.get(DRAINING_KEY) is True


def _decode(broker: str, value: Any) -> LocalBrokerData | None:
    """A report node's parsed JSON as a report, or ``None`` (logged) when it is not a readable
    ``LocalBrokerData``."""
    try:
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object, got {type(value).__name__}")
        return LocalBrokerData.from_json(value, f"/loadbalance/brokers/{broker}")
    except (ValueError, RecursionError, BrokerLBError) as exc:
        logger.warning("Ignoring the unreadable load report of %s: %s", broker, exc)
        return None
