"""Admin v2 cluster data and the brokers' isolation view (Pulsar's ``ClustersBase``).

Registered before the isolation-policy routes, so ``namespaceIsolationPolicies/brokers`` is not
read as a policy named "brokers".

| request | answer |
|---|---|
| ``GET /admin/v2/clusters/{c}`` | ClusterData (``serviceUrl``, ``brokerServiceUrl``, ...); 404 |
| ``GET /admin/v2/clusters/{c}/namespaceIsolationPolicies/brokers`` | per active broker: BrokerNamespaceIsolationData |
| ``GET /admin/v2/clusters/{c}/namespaceIsolationPolicies/brokers/{broker}`` | one broker's (active or not) |

BrokerNamespaceIsolationData: ``brokerName``, ``policyName`` and ``isPrimary`` (of the last
policy, by name, whose primary or secondary regexes match the broker -- placement's
:func:`~brokerlb.loadbalance.placement.isolation.host_matches`: the id, or its host without the
numeric port), ``namespaceRegex`` (the ``namespaces`` of every matching policy). Other clusters: 412, as Pulsar's
``validateClusterExist(..., PRECONDITION_FAILED)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Response

from brokerlb.broker.http.access import Access, access
from brokerlb.broker.http.common import json_response
from brokerlb.broker.http.openapi import BROKER_ISOLATION_DATA, BROKER_ISOLATION_LIST, CLUSTER_DATA, doc
from brokerlb.coordination import ClusterPolicies, MetadataStore, NamespaceIsolationPolicies
from brokerlb.coordination.tenants import read_cluster_data
from brokerlb.errors import NotFoundError, PreconditionFailedError
from brokerlb.loadbalance.placement.isolation import host_matches

__all__ = ["cluster_router", "broker_isolation_data"]

_C = "/admin/v2/clusters"


def broker_isolation_data(broker: str, policies: NamespaceIsolationPolicies) -> dict[str, Any]:
    """Pulsar's ``internalGetBrokerNsIsolationData`` for ``broker`` (``host:port``)."""
    out: dict[str, Any] = {"brokerName": broker, "isPrimary": False, "namespaceRegex": []}
    regexes: list[str] = []
    for name in sorted(policies.policies):
        policy = policies.policies[name]
        primary = host_matches(policy.primary, broker)
        if primary or host_matches(policy.secondary, broker):
            regexes.extend(policy.namespaces)
            out["isPrimary"] = primary
            out["policyName"] = name
    out["namespaceRegex"] = regexes
    return out


def cluster_router(
    store: MetadataStore, cluster: str, policies: ClusterPolicies, active_brokers: Callable[[], list[str]]
) -> APIRouter:
    router = APIRouter(tags=["clusters"])

    def check(name: str) -> None:
        if name != cluster:
            raise PreconditionFailedError(f"Cluster {name} does not exist")

    @router.get(
        f"{_C}/{{name}}",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=CLUSTER_DATA),
        summary="A cluster's ClusterData",
    )
    async def cluster_data(name: str) -> Response:
        data = await read_cluster_data(store, name)
        if data is None:
            raise NotFoundError(f"Cluster {name} does not exist")
        return json_response(data.to_json())

    @router.get(
        f"{_C}/{{name}}/namespaceIsolationPolicies/brokers",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=BROKER_ISOLATION_LIST),
        summary="Active brokers with the isolation policies that name them",
    )
    async def isolation_brokers(name: str) -> Response:
        check(name)
        current = await policies.isolation_policies()
        return json_response([broker_isolation_data(b, current) for b in sorted(active_brokers())])

    @router.get(
        f"{_C}/{{name}}/namespaceIsolationPolicies/brokers/{{broker}}",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=BROKER_ISOLATION_DATA),
        summary="The isolation policies that name a broker",
    )
    async def isolation_broker(name: str, broker: str) -> Response:
        check(name)
        return json_response(broker_isolation_data(broker, await policies.isolation_policies()))

    return router
