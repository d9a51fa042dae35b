"""The cluster's isolation policies and failure domains, mirrored by watches (memory reads).

Placement reads them on every decision; an admin change (``POST
/admin/v2/clusters/{c}/namespaceIsolationPolicies/{p}``, failure domains) must be seen by the
next placement on every broker, not at the next load-report refresh. A data watch on
``/admin/clusters/{c}/namespaceIsolationPolicies`` and a tree cache on
``/admin/clusters/{c}/failureDomain`` keep them current; values are converted into the
decision engine's types. An unreadable value is logged and ignored (the last good one stays).
"""

from __future__ import annotations

import logging

from brokerlb.coordination import DataWatch, MetadataStore, Node, TreeCache
from brokerlb.coordination.paths import failure_domains_root, isolation_policies_path
from brokerlb.coordination.records import FailureDomain as StoredFailureDomain
from brokerlb.coordination.records import NamespaceIsolationPolicies
from brokerlb.errors import BrokerLBError
from brokerlb.loadbalance.policies import FailureDomain, NamespaceIsolationData

__all__ = ["ClusterPoliciesCache"]

logger = logging.getLogger(__name__)


class ClusterPoliciesCache:
    def __init__(self, store: MetadataStore, cluster: str) -> None:
        self._isolation_path = isolation_policies_path(cluster)
        self._isolation_watch: DataWatch = store.watch_data(self._isolation_path, self._on_isolation)
        self._domains = TreeCache(
            store, failure_domains_root(cluster), is_leaf=lambda _p, depth: depth == 1, max_depth=1
        )
        self._domains.add_listener(self._on_domain)
        #: policy name -> policy (the engine's type)
        self.isolation: dict[str, NamespaceIsolationData] = {}
        #: domain name -> brokers
        self.failure_domains: dict[str, FailureDomain] = {}
        #: bumped on every change (placement contexts built before are stale)
        self.version = 0

    async def start(self) -> ClusterPoliciesCache:
        await self._isolation_watch.start()
        await self._domains.start()
        return self

    def close(self) -> None:
        self._isolation_watch.cancel()
        self._domains.close()

    def _on_isolation(self, node: Node | None) -> None:
        try:
            stored = (
                NamespaceIsolationPolicies()
                if node is None
                else NamespaceIsolationPolicies.from_bytes(node.data, self._isolation_path)
            )
            self.isolation = {
                name: NamespaceIsolationData.from_json(p.to_json(), name)
                for name, p in stored.policies.items()
            }
        except BrokerLBError as exc:
            logger.error("Ignoring unreadable isolation policies: %s", exc)
            return
        self.version += 1

    def _on_domain(self, path: str, node: Node | None) -> None:
        name = path.rsplit("/", 1)[1]
        if node is None:
            self.failure_domains.pop(name, None)
        else:
            try:
                self.failure_domains[name] = FailureDomain(
                    StoredFailureDomain.from_bytes(node.data, path).brokers
                )
            except BrokerLBError as exc:
                logger.error("Ignoring unreadable failure domain %s: %s", name, exc)
                return
        self.version += 1
