"""The routers of :class:`~brokerlb.broker.admin.operations.BrokerOperations`, each given only the part it uses.

They are included in the app **before** the older routers: their fixed paths
(``/admin/v2/brokers/version``, ``.../namespaceIsolationPolicies/brokers``) must match before the
older parameterised ones (``/admin/v2/brokers/{cluster}``, ``.../namespaceIsolationPolicies/{name}``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter

from brokerlb.broker.http.broker_config_routes import broker_config_router
from brokerlb.broker.http.cluster_routes import cluster_router
from brokerlb.broker.http.dashboard_routes import dashboard_router
from brokerlb.broker.http.namespace_admin_routes import namespace_admin_router
from brokerlb.broker.http.observability_routes import balancer_router, metrics_router
from brokerlb.broker.http.tenants_routes import tenants_router
from brokerlb.broker.http.topics_routes import topics_router

if TYPE_CHECKING:
    from brokerlb.admin.client import AsyncAdminClient
    from brokerlb.broker.admin.operations import BrokerOperations
    from brokerlb.broker.admin.partitioned_topics import PartitionedTopics
    from brokerlb.config import ServiceConfig
    from brokerlb.coordination import BrokerRegistry, ClusterPolicies, LeaderElection

__all__ = ["operations_routers"]


def operations_routers(
    ops: BrokerOperations,
    *,
    conf: ServiceConfig,
    election: LeaderElection,
    registry: BrokerRegistry,
    cluster_policies: ClusterPolicies,
    partitioned_topics: PartitionedTopics,
    admin: AsyncAdminClient,
) -> list[APIRouter]:
    """The operator routers over ``ops``; ``election`` says where the leader's pages are."""
    return [
        metrics_router(ops.metrics),
        balancer_router(
            lambda: ops.status,
            lambda: election.leader.service_url if election.leader is not None else None,
            lambda: election.is_leader,
        ),
        dashboard_router(
            lambda: ops.dashboard,
            lambda: election.leader.service_url if election.leader is not None else None,
            lambda: election.is_leader,
            admin,
        ),
        broker_config_router(ops.dynamic, conf),
        cluster_router(ops.store, ops.cluster, cluster_policies, registry.available_brokers),
        tenants_router(ops.tenants, ops.namespaces),
        namespace_admin_router(ops.namespaces),
        topics_router(ops.topics, partitioned_topics),
    ]
