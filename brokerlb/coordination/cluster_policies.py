"""Per-cluster placement policies: namespace isolation policies and failure domains.

* ``/admin/clusters/{cluster}/namespaceIsolationPolicies`` -- one node holding
  policy name → NamespaceIsolationData, changed by compare-and-set;
* ``/admin/clusters/{cluster}/failureDomain/{domain}`` -- ``{"brokers": [...]}``.
  As in Pulsar's admin API, a broker belongs to at most one domain: putting it
  in a second one is refused with 409.
"""

from __future__ import annotations

from brokerlb.coordination.paths import failure_domain_path, failure_domains_root, isolation_policies_path
from brokerlb.coordination.records import FailureDomain, NamespaceIsolationData, NamespaceIsolationPolicies
from brokerlb.coordination.retry import BUNDLE_UPDATE_RETRY, RetryPolicy, Sleep, retry_async
from brokerlb.coordination.store import MetadataStore
from brokerlb.errors import BadVersionError, ConflictError, NodeExistsError, NoNodeError, NotFoundError

__all__ = ["ClusterPolicies"]


class ClusterPolicies:
    """Isolation policies and failure domains of one cluster."""

    def __init__(
        self,
        store: MetadataStore,
        cluster: str,
        *,
        retry: RetryPolicy = BUNDLE_UPDATE_RETRY,
        sleep: Sleep | None = None,
    ) -> None:
        self.store = store
        self.cluster = cluster
        self._isolation_path = isolation_policies_path(cluster)
        self._domains_root = failure_domains_root(cluster)
        self.retry = retry
        #: Waits between retries: the store's clock unless given.
        self._sleep = sleep if sleep is not None else store.clock.sleep

    # ------------------------------------------------------------------ isolation
    async def isolation_policies(self) -> NamespaceIsolationPolicies:
        """All policies (empty when none were ever set)."""
        node = await self.store.get_or_none(self._isolation_path)
        if node is None:
            return NamespaceIsolationPolicies()
        return NamespaceIsolationPolicies.from_bytes(node.data, self._isolation_path)

    async def set_isolation_policy(self, name: str, policy: NamespaceIsolationData | None) -> None:
        """Create, replace or (``None``) delete one policy, by compare-and-set on the whole map."""

        async def attempt() -> None:
            node = await self.store.get_or_none(self._isolation_path)
            current = (
                NamespaceIsolationPolicies()
                if node is None
                else NamespaceIsolationPolicies.from_bytes(node.data, self._isolation_path)
            )
            if policy is None and name not in current.policies:
                raise NotFoundError(
                    f"Namespace isolation policy '{name}' not found in cluster {self.cluster}"
                )
            data = current.with_policy(name, policy).to_bytes()
            if node is None:
                await self.store.create(self._isolation_path, data, make_parents=True)
            else:
                await self.store.set(self._isolation_path, data, version=node.stat.version)

        await retry_async(
            attempt,
            policy=self.retry,
            retry_on=(BadVersionError, NodeExistsError),
            sleep=self._sleep,
            what=f"isolation policy '{name}' of {self.cluster}",
        )

    # ------------------------------------------------------------------ failure domains
    async def failure_domain_names(self) -> list[str]:
        try:
            return await self.store.children(self._domains_root)
        except NoNodeError:
            return []

    async def failure_domain(self, name: str) -> FailureDomain | None:
        path = failure_domain_path(self.cluster, name)
        node = await self.store.get_or_none(path)
        return None if node is None else FailureDomain.from_bytes(node.data, path)

    async def failure_domains(self) -> dict[str, FailureDomain]:
        out: dict[str, FailureDomain] = {}
        for name in await self.failure_domain_names():
            domain = await self.failure_domain(name)
            if domain is not None:
                out[name] = domain
        return out

    async def broker_domains(self) -> dict[str, str]:
        """Broker id → its failure domain (brokers in no domain are absent: Pulsar's "default")."""
        return {broker: name for name, d in (await self.failure_domains()).items() for broker in d.brokers}

    async def set_failure_domain(self, name: str, domain: FailureDomain) -> None:
        """Create or replace a domain; 409 if one of its brokers is already in another domain."""
        clash = {b: d for b, d in (await self.broker_domains()).items() if b in domain.brokers and d != name}
        if clash:
            raise ConflictError(
                f"Brokers already in another failure domain of cluster {self.cluster}: "
                f"{', '.join(f'{b} in {d}' for b, d in sorted(clash.items()))}"
            )
        path = failure_domain_path(self.cluster, name)
        try:
            await self.store.create(path, domain.to_bytes(), make_parents=True)
        except NodeExistsError:
            await self.store.set(path, domain.to_bytes())

    async def delete_failure_domain(self, name: str) -> None:
        try:
            await self.store.delete(failure_domain_path(self.cluster, name))
        except NoNodeError as exc:
            raise NotFoundError(f"Failure domain '{name}' not found in cluster {self.cluster}") from exc
