"""Tenants and clusters in the metadata store, with Pulsar's admin rules (``TenantsBase``, ``ClustersBase``).

* ``/admin/policies/{tenant}`` holds the tenant's :class:`TenantInfo`; its children are the
  tenant's namespaces (``/admin/policies/{tenant}/{ns}``).
* ``/admin/clusters/{cluster}`` holds the cluster's :class:`ClusterData`; its children are the
  isolation policies and failure domains.

Rules, as Pulsar's REST layer applies them (status in brackets):

===================  ==========================================================================
create tenant        name must be a valid name [412 "Tenant name is not valid"];
                     ``allowedClusters`` non-empty, no blank name [412 "Clusters can not be
                     empty"], every cluster known [412 "Clusters do not exist"]; exists [409]
update tenant        same cluster checks; unknown tenant [404]; a cluster still used by one of
                     the tenant's namespaces (its ``replication_clusters``) cannot be removed [412]
delete tenant        unknown [404 "Tenant doesn't exist"]; has namespaces [409 "The tenant still
                     has active namespaces"]
namespace creation   the tenant must exist [404 "Tenant does not exist"] and allow this cluster
                     [403 "Cluster [c] is not in the list of allowed clusters list for tenant [t]"]
===================  ==========================================================================

Pulsar's ``initialize-cluster-metadata`` (and its standalone) write the cluster and the tenants
``public`` and ``pulsar`` before any broker runs; brokerlb has no such step, so every broker makes
sure of them when it starts (:func:`ensure_cluster_metadata`; creating what is missing only).
"""

from __future__ import annotations

import logging
import re

from brokerlb.coordination.paths import CLUSTERS_ROOT, POLICIES_ROOT, cluster_path, tenant_path
from brokerlb.coordination.records import ClusterData, Policies, TenantInfo
from brokerlb.coordination.store import MetadataStore
from brokerlb.errors import (
    BadVersionError,
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    NotFoundError,
    PreconditionFailedError,
)

__all__ = ["Tenants", "ensure_cluster_metadata", "DEFAULT_TENANTS", "read_cluster_data", "cluster_names"]

logger = logging.getLogger(__name__)

#: The tenants Pulsar's cluster setup creates: ``public`` (``public/default``) and ``pulsar`` (system).
DEFAULT_TENANTS = ("public", "pulsar")

#: Pulsar's ``NamedEntity`` rule for a tenant name.
_NAME = re.compile(r"[-=:.\w]+", re.ASCII)
#: ``global`` is always a valid cluster in a tenant's list (Pulsar's GLOBAL_CLUSTER).
GLOBAL_CLUSTER = "global"


async def cluster_names(store: MetadataStore) -> list[str]:
    """Clusters known to the store (children of ``/admin/clusters``)."""
    try:
        return sorted(await store.children(CLUSTERS_ROOT))
    except NoNodeError:
        return []


async def read_cluster_data(store: MetadataStore, cluster: str) -> ClusterData | None:
    """The cluster's ClusterData; ``None`` if the cluster is unknown (an empty node reads as no URLs)."""
    path = cluster_path(cluster)
    node = await store.get_or_none(path)
    if node is None:
        return None
    if not node.data.strip():
        return ClusterData()
    return ClusterData.from_bytes(node.data, path)


class Tenants:
    """Create, read, update and delete tenants (module docstring)."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    async def names(self) -> list[str]:
        try:
            return sorted(await self.store.children(POLICIES_ROOT))
        except NoNodeError:
            return []

    async def get(self, tenant: str) -> TenantInfo | None:
        path = tenant_path(_checked_name(tenant))
        node = await self.store.get_or_none(path)
        return None if node is None else TenantInfo.from_bytes(node.data, path)

    async def require(self, tenant: str) -> TenantInfo:
        info = await self.get(tenant)
        if info is None:
            raise NotFoundError(f"Tenant {tenant} does not exist")
        return info

    async def create(self, tenant: str, info: TenantInfo) -> None:
        name = _checked_name(tenant)
        await self._check_clusters(info)
        try:
            await self.store.create(tenant_path(name), info.to_bytes(), make_parents=True)
        except NodeExistsError as exc:
            raise ConflictError(f"Tenant {name} already exists") from exc
        logger.info("Created tenant %s (clusters %s)", name, ", ".join(info.allowed_clusters))

    async def update(self, tenant: str, info: TenantInfo) -> None:
        name = _checked_name(tenant)
        await self._check_clusters(info)
        path = tenant_path(name)
        node = await self.store.get_or_none(path)
        if node is None:
            raise NotFoundError(f"Tenant {name} not found")
        old = TenantInfo.from_bytes(node.data, path)
        removed = set(old.allowed_clusters) - set(info.allowed_clusters)
        if removed:
            await self._check_clusters_unused(name, removed)
        try:
            await self.store.set(path, info.to_bytes(), version=node.stat.version)
        except BadVersionError as exc:
            raise ConflictError(f"Tenant {name} was changed concurrently; try again") from exc

    async def delete(self, tenant: str) -> None:
        name = _checked_name(tenant)
        path = tenant_path(name)
        node = await self.store.get_or_none(path)
        if node is None:
            raise NotFoundError(f"Tenant {name} doesn't exist")
        namespaces = await self.store.children(path)
        if namespaces:
            raise ConflictError(
                f"The tenant still has active namespaces: {', '.join(f'{name}/{n}' for n in sorted(namespaces))}"
            )
        try:
            await self.store.delete(path, version=node.stat.version)
        except (BadVersionError, NoNodeError) as exc:
            raise ConflictError(f"Tenant {name} was changed concurrently; try again") from exc
        except NotEmptyError as exc:  # a namespace created in between
            raise ConflictError(f"The tenant {name} still has active namespaces") from exc

    async def check_namespace_allowed(self, tenant: str, cluster: str) -> None:
        """Pulsar's ``validateClusterForTenant`` on namespace creation (404 no tenant, 403 cluster not allowed)."""
        info = await self.get(tenant)
        if info is None:
            raise NotFoundError(f"Tenant {tenant} does not exist")
        if info.implicit:
            return
        if cluster not in info.allowed_clusters:
            raise ForbiddenError(
                f"Cluster [{cluster}] is not in the list of allowed clusters list for tenant [{tenant}]"
            )

    async def ensure(self, tenant: str, info: TenantInfo) -> bool:
        """Create the tenant if it does not exist, or fill in an implicit (empty) node; True if written."""
        path = tenant_path(_checked_name(tenant))
        node = await self.store.get_or_none(path)
        try:
            if node is None:
                await self.store.create(path, info.to_bytes(), make_parents=True)
                return True
            if not node.data.strip():
                await self.store.set(path, info.to_bytes(), version=node.stat.version)
                return True
        except (NodeExistsError, BadVersionError):  # another broker did it first
            return False
        return False

    # ------------------------------------------------------------------ checks
    async def _check_clusters(self, info: TenantInfo) -> None:
        if not info.allowed_clusters or any(not c.strip() for c in info.allowed_clusters):
            raise PreconditionFailedError("Clusters can not be empty")
        known = set(await cluster_names(self.store)) | {GLOBAL_CLUSTER}
        missing = sorted(set(info.allowed_clusters) - known)
        if missing:
            raise PreconditionFailedError(f"Clusters do not exist: {', '.join(missing)}")

    async def _check_clusters_unused(self, tenant: str, removed: set[str]) -> None:
        """Pulsar's ``canUpdateCluster``: a namespace still replicated to a removed cluster blocks it."""
        try:
            namespaces = await self.store.children(tenant_path(tenant))
        except NoNodeError:
            return
        for ns in sorted(namespaces):
            node = await self.store.get_or_none(f"{tenant_path(tenant)}/{ns}")
            if node is None or not node.data.strip():
                continue
            policies = Policies.from_bytes(node.data, f"{tenant_path(tenant)}/{ns}")
            used = set(policies.extra.get("replication_clusters") or []) & removed
            if used:
                raise PreconditionFailedError(
                    f"Cluster {', '.join(sorted(used))} is still used by namespace {tenant}/{ns}"
                )


def _checked_name(tenant: str) -> str:
    if not isinstance(tenant, str) or not _NAME.fullmatch(tenant):
        raise PreconditionFailedError(f"Tenant name is not valid: {tenant!r}")
    return tenant


async def ensure_cluster_metadata(
    store: MetadataStore, cluster: str, data: ClusterData, tenants: tuple[str, ...] = DEFAULT_TENANTS
) -> list[str]:
    """Write what Pulsar's cluster setup writes, where it is missing: the cluster's ClusterData and the
    default tenants (allowed on this cluster). Returns what was written (for the log)."""
    written: list[str] = []
    path = cluster_path(cluster)
    node = await store.get_or_none(path)
    try:
        if node is None:
            await store.create(path, data.to_bytes(), make_parents=True)
            written.append(path)
        elif not node.data.strip():  # made as the parent of isolation policies or failure domains
            await store.set(path, data.to_bytes(), version=node.stat.version)
            written.append(path)
    except (NodeExistsError, BadVersionError):
        pass  # another broker wrote it first
    registry = Tenants(store)
    for tenant in tenants:
        if await registry.ensure(tenant, TenantInfo(allowed_clusters=(cluster,))):
            written.append(tenant_path(tenant))
    return written


def parse_tenant_info(body: object) -> TenantInfo:
    """A TenantInfo request body (400 when it is not one)."""
    if body is None:
        raise InvalidInputError('A TenantInfo body is required, e.g. {"allowedClusters": ["standalone"]}')
    return TenantInfo.from_json(body)
