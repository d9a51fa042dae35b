"""Namespace policies and deletion, and tenant deletion: Pulsar's ``NamespacesBase`` / ``TenantsBase`` flows.

* :meth:`NamespaceAdmin.policies` -- ``GET /admin/v2/namespaces/{t}/{ns}``: the stored global
  Policies with Pulsar's defaults for the fields never set, and ``bundles`` as the namespace has
  them now (Pulsar's ``getNamespacePoliciesAsync`` also answers the bundle factory's bundles);
* :meth:`NamespaceAdmin.delete_namespace` -- ``DELETE /admin/v2/namespaces/{t}/{ns}?force=``:
  404 unknown; with topics (created persistent topics, partitioned topics, topics served now)
  409 "Cannot delete non empty namespace" unless ``force`` (which needs
  ``forceDeleteNamespaceAllowed``, else 405, as Pulsar); then: the policies are marked
  ``deleted``, every topic is deleted through its owner, every bundle is deleted through its
  owner (unloaded, its load data dropped), and the namespace's nodes are removed (topics,
  partitioned topics, bundle data, local and global policies);
* :meth:`NamespaceAdmin.delete_tenant` -- ``DELETE /admin/v2/tenants/{t}?force=``: 404 unknown,
  409 with namespaces unless ``force`` (``forceDeleteTenantAllowed``, else 405), which deletes
  each namespace with ``force`` first.

A lookup racing a namespace deletion can own a bundle between its deletion and the removal of
the policies; that bundle stays owned (with no topics) until its broker unloads it or restarts.
Pulsar has the same window.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from brokerlb.admin.client import AsyncAdminClient
from brokerlb.broker.admin.partitioned_topics import PartitionedTopics
from brokerlb.broker.admin.topic_admin import TopicAdmin
from brokerlb.config import ServiceConfig
from brokerlb.coordination import BundleMetadata, MetadataStore, Policies
from brokerlb.coordination.paths import (
    local_policies_path,
    namespace_bundle_data_path,
    namespace_ownership_path,
    policies_path,
    tenant_path,
)
from brokerlb.coordination.tenants import Tenants
from brokerlb.coordination.topic_metadata import PersistentTopics
from brokerlb.errors import (
    BadVersionError,
    ConflictError,
    NamespaceNotFoundError,
    NoNodeError,
    NotEmptyError,
    NotFoundError,
    PreconditionFailedError,
)
from brokerlb.naming import NamespaceName, TopicName

__all__ = ["NamespaceAdmin", "MethodNotAllowedError", "policies_with_defaults"]

logger = logging.getLogger(__name__)


class MethodNotAllowedError(PreconditionFailedError):
    """405: the broker's configuration does not allow the operation (Pulsar's forced deletions)."""

    http_status = 405


def policies_with_defaults(stored: dict[str, Any], cluster: str) -> dict[str, Any]:
    """Pulsar's ``Policies`` JSON: the fields a new ``Policies()`` has, then what is stored."""
    out: dict[str, Any] = {
        "auth_policies": {"namespace_auth": {}, "destination_auth": {}, "subscription_auth_roles": {}},
        "replication_clusters": [cluster],
        "backlog_quota_map": {},
        "clusterDispatchRate": {},
        "topicDispatchRate": {},
        "subscriptionDispatchRate": {},
        "replicatorDispatchRate": {},
        "clusterSubscribeRate": {},
        "publishMaxMessageRate": {},
        "latency_stats_sample_rate": {},
        "deleted": False,
        "encryption_required": False,
        "subscription_auth_mode": "None",
        "schema_validation_enforced": False,
        "is_allow_auto_update_schema": True,
        "properties": {},
    }
    out.update(stored)
    return out


class NamespaceAdmin:
    """Namespace policies, namespace deletion and tenant deletion (module docstring)."""

    def __init__(
        self,
        *,
        conf: ServiceConfig,
        cluster: str,
        store: MetadataStore,
        metadata: BundleMetadata,
        tenants: Tenants,
        topics: TopicAdmin,
        persistent: PersistentTopics,
        partitioned: PartitionedTopics,
        self_url: Callable[[], str],
        admin: AsyncAdminClient,
    ) -> None:
        self.conf = conf
        self.cluster = cluster
        self.store = store
        self.metadata = metadata
        self.tenants = tenants
        self.topics = topics
        self.persistent = persistent
        self.partitioned = partitioned
        self.self_url = self_url
        self.admin = admin

    async def policies(self, namespace: str) -> dict[str, Any]:
        ns = NamespaceName.parse(namespace)
        found = await self.metadata.read_policies(ns)
        if found is None:
            raise NamespaceNotFoundError(f"Namespace {ns} does not exist")
        stored = found[0].to_json()
        stored["bundles"] = (await self.metadata.get_bundles(ns)).to_json()
        return policies_with_defaults(stored, self.cluster)

    # ------------------------------------------------------------------ namespaces
    async def delete_namespace(self, namespace: str, *, force: bool = False) -> None:
        ns = NamespaceName.parse(namespace)
        if force and not self.conf.forceDeleteNamespaceAllowed:
            raise MethodNotAllowedError("Broker doesn't allow forced deletion of namespaces")
        if not await self.metadata.namespace_exists(ns):
            raise NamespaceNotFoundError(f"Namespace {ns} does not exist")
        topics, partitioned = await self._topics_of(ns)
        if (topics or partitioned) and not force:
            shown = sorted(topics | partitioned)
            raise ConflictError(
                f"Cannot delete non empty namespace {ns}: {len(shown)} topics, e.g. {', '.join(shown[:3])}"
            )
        await self._mark_deleted(ns)
        client = self.admin.at(self.self_url())
        for name in sorted(partitioned):
            await _ignore_missing(client.delete_partitioned_topic(name, force=True))
        for name in sorted(topics):
            await _ignore_missing(client.delete_topic(name, force=True))
        bundles = await self.metadata.get_bundles(ns)
        await asyncio.gather(
            *(_ignore_missing(client.delete_bundle(str(ns), b.range, force=True)) for b in bundles)
        )
        await self._remove_nodes(ns)
        logger.info("Deleted namespace %s (%d topics, %d partitioned)", ns, len(topics), len(partitioned))

    async def _topics_of(self, ns: NamespaceName) -> tuple[set[str], set[str]]:
        topics: set[str] = set()
        partitioned: set[str] = set()
        for domain in ("persistent", "non-persistent"):
            topics.update(await self.topics.list_topics(str(ns), domain))
            partitioned.update(await self.partitioned.names(ns, domain))
        return topics, partitioned

    async def _mark_deleted(self, ns: NamespaceName) -> None:
        """Set ``deleted: true`` in the global policies (compare-and-set), as Pulsar does first."""
        path = policies_path(ns)
        for _ in range(8):
            node = await self.store.get_or_none(path)
            if node is None:
                return
            policies = Policies.from_bytes(node.data, path)
            marked = Policies(policies.bundles, {**policies.extra, "deleted": True})
            try:
                await self.store.set(path, marked.to_bytes(), version=node.stat.version)
                return
            except BadVersionError:
                continue

    async def _remove_nodes(self, ns: NamespaceName) -> None:
        await self.persistent.delete_namespace(ns)
        for domain in ("persistent", "non-persistent"):
            for name in await self.partitioned.names(ns, domain):
                await self.partitioned.delete(TopicName.parse(name))
        await self.store.delete_recursive(namespace_bundle_data_path(ns))
        for path in (local_policies_path(ns), policies_path(ns)):
            try:
                await self.store.delete(path)
            except NoNodeError:
                pass
        try:  # the empty parent of the ownership nodes (kept if a racing lookup owns a bundle)
            await self.store.delete(namespace_ownership_path(ns))
        except (NoNodeError, NotEmptyError):
            pass

    # ------------------------------------------------------------------ tenants
    async def delete_tenant(self, tenant: str, *, force: bool = False) -> None:
        if force:
            if not self.conf.forceDeleteTenantAllowed:
                raise MethodNotAllowedError("Broker doesn't allow forced deletion of tenants")
            await self.tenants.require(tenant)
            for ns in await self._namespaces(tenant):
                await self.delete_namespace(ns, force=True)
        await self.tenants.delete(tenant)

    async def _namespaces(self, tenant: str) -> list[str]:
        try:
            return [f"{tenant}/{n}" for n in sorted(await self.store.children(tenant_path(tenant)))]
        except NoNodeError:
            return []


async def _ignore_missing(call: Awaitable[object]) -> None:
    """A broker's call whose 404 means "already gone" (:class:`~brokerlb.errors.RemoteNotFoundError`)."""
    with contextlib.suppress(NotFoundError):
        await call
