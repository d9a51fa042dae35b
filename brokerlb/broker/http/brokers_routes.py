"""Admin v2 brokers and broker-stats, clusters (isolation policies, failure domains).

Each router gets the parts of the broker it reads (``create_app`` picks them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request, Response

from brokerlb.broker.http.access import Access, access
from brokerlb.broker.http.common import json_body, json_response, maybe_redirect, no_content, request_limits
from brokerlb.broker.http.openapi import (
    BROKER_INFO,
    FAILURE_DOMAIN,
    FAILURE_DOMAINS,
    ISOLATION_DATA,
    ISOLATION_POLICIES,
    OBJECT,
    OWNED_NAMESPACES,
    STRINGS,
    doc,
)
from brokerlb.broker.ownership.redirect import Redirect
from brokerlb.coordination import FailureDomain, NamespaceIsolationData
from brokerlb.errors import BrokerNotFoundError, NotFoundError, PreconditionFailedError
from brokerlb.loadbalance.placement.isolation import ownership_assignment
from brokerlb.naming import NamespaceName

if TYPE_CHECKING:
    from brokerlb.broker.data.topics import TopicRegistry
    from brokerlb.broker.identity import BrokerIdentity
    from brokerlb.broker.ownership.ownership_channel import OwnershipChannel
    from brokerlb.broker.report.reporter import LoadReporter
    from brokerlb.coordination import BrokerRegistry, ClusterPolicies, LeaderElection

__all__ = ["brokers_router", "clusters_router", "owned_namespaces_status"]

_B = "/admin/v2/brokers"
_C = "/admin/v2/clusters"


async def owned_namespaces_status(
    identity: BrokerIdentity, cluster_policies: ClusterPolicies, ownership: OwnershipChannel
) -> dict[str, dict[str, Any]]:
    """``ownedNamespaces``: each bundle this broker owns → its NamespaceOwnershipStatus
    (:func:`~brokerlb.loadbalance.placement.isolation.ownership_assignment` under the namespace's
    isolation policy; ``is_active``: the bundle is served now)."""
    policies = await cluster_policies.isolation_policies()
    out: dict[str, dict[str, Any]] = {}
    for bundle in ownership.owned():
        found = policies.policy_for(NamespaceName.parse(bundle.rpartition("/")[0]))
        status = ownership_assignment(found[1] if found is not None else None, identity.broker_id)
        out[bundle] = {
            "broker_assignment": status.broker_assignment,
            "is_controlled": status.is_controlled,
            "is_active": ownership.serving(bundle),
        }
    return out


def brokers_router(
    *,
    identity: BrokerIdentity,
    registry: BrokerRegistry,
    election: LeaderElection,
    reporter: LoadReporter,
    topics: TopicRegistry,
    cluster_policies: ClusterPolicies,
    ownership: OwnershipChannel,
    readiness: Callable[[], list[str]],
    health: Callable[[], list[str]],
) -> APIRouter:
    """``/admin/v2/brokers`` and ``/admin/v2/broker-stats``; ``readiness`` and ``health`` answer what
    is wrong (:mod:`brokerlb.broker.observe.health`)."""
    router = APIRouter(tags=["brokers"])

    @router.get(
        _B,
        openapi_extra=access(Access.SUPER_USER) | doc(returns=STRINGS),
        summary="Active brokers of this cluster",
    )
    async def active_brokers() -> Response:
        return json_response(registry.available_brokers())

    @router.get(
        f"{_B}/leaderBroker",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=BROKER_INFO, errors=(404,)),
        summary="The leader broker",
    )
    async def leader_broker() -> Response:
        leader = election.leader or await election.get_leader()
        if leader is None:
            raise NotFoundError("No leader broker is elected")
        return json_response(leader.to_json())

    @router.get(
        f"{_B}/health",
        openapi_extra=access(Access.SUPER_USER),
        summary="Health: ready, metadata session connected, registered, heartbeat bundles owned",
        response_class=Response,
        responses={200: {"content": {"text/plain": {}}}, 503: {"description": "What is wrong"}},
    )
    async def health_check() -> Response:
        return _condition(health())

    @router.get(
        f"{_B}/ready",
        openapi_extra=access(Access.AUTHENTICATED),
        summary="Ready: started (registered, elected, heartbeat namespaces taken) and not stopping",
        response_class=Response,
        responses={200: {"content": {"text/plain": {}}}, 503: {"description": "What is missing"}},
    )
    async def ready() -> Response:
        return _condition(readiness())

    @router.get(
        f"{_B}/{{cluster}}",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=STRINGS),
        summary="Active brokers of a cluster",
    )
    async def cluster_brokers(cluster: str) -> Response:
        _check_cluster(identity.cluster, cluster, status=404)
        return json_response(registry.available_brokers())

    @router.get(
        f"{_B}/{{cluster}}/{{broker}}/ownedNamespaces",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=OWNED_NAMESPACES, redirects=True),
        summary="Bundles a broker owns",
    )
    async def owned_namespaces(cluster: str, broker: str, request: Request) -> Response:
        _check_cluster(identity.cluster, cluster, status=404)
        if broker != identity.broker_id:
            registered = registry.broker(broker)
            url = None if registered is None else registered.web_service_url
            if not url:
                raise BrokerNotFoundError(f"Broker {broker} is not an active broker of cluster {cluster}")
            return maybe_redirect(request, Redirect(url, False))  # type: ignore[return-value]
        return json_response(await owned_namespaces_status(identity, cluster_policies, ownership))

    @router.get(
        "/admin/v2/broker-stats/load-report",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=OBJECT),
        tags=["broker-stats"],
        summary="This broker's load report",
    )
    async def load_report() -> Response:
        return json_response(reporter.refresh().to_json())

    @router.get(
        "/admin/v2/broker-stats/topics",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=OBJECT),
        tags=["broker-stats"],
        summary="Stats of the topics served here: namespace → bundle → domain → topic",
    )
    async def topics_stats() -> Response:
        return json_response(topics.topics_report())

    return router


def _condition(problems: list[str]) -> Response:
    if problems:
        return json_response({"reason": "; ".join(problems)}, status=503)
    return Response("ok", media_type="text/plain")


def _check_cluster(expected: str, cluster: str, status: int) -> None:
    if cluster != expected:
        error: Any = NotFoundError if status == 404 else PreconditionFailedError
        raise error(f"Cluster {cluster} does not exist")


def clusters_router(cluster_name: str, cluster_policies: ClusterPolicies) -> APIRouter:
    """``/admin/v2/clusters``: this broker's cluster, its isolation policies and failure domains."""
    router = APIRouter(tags=["clusters"])

    @router.get(_C, openapi_extra=access(Access.AUTHENTICATED) | doc(returns=STRINGS), summary="Clusters")
    async def clusters() -> Response:
        return json_response([cluster_name])

    @router.get(
        f"{_C}/{{cluster}}/namespaceIsolationPolicies",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=ISOLATION_POLICIES),
        summary="Namespace isolation policies",
    )
    async def isolation_policies(cluster: str) -> Response:
        _check_cluster(cluster_name, cluster, status=412)
        return json_response((await cluster_policies.isolation_policies()).to_json())

    @router.get(
        f"{_C}/{{cluster}}/namespaceIsolationPolicies/{{name}}",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=ISOLATION_DATA),
        summary="One isolation policy",
    )
    async def isolation_policy(cluster: str, name: str) -> Response:
        _check_cluster(cluster_name, cluster, status=412)
        policy = (await cluster_policies.isolation_policies()).policies.get(name)
        if policy is None:
            raise NotFoundError(f"Cannot find NamespaceIsolationPolicy {name} for cluster {cluster}")
        return json_response(policy.to_json())

    @router.post(
        f"{_C}/{{cluster}}/namespaceIsolationPolicies/{{name}}",
        openapi_extra=access(Access.SUPER_USER) | doc(body=ISOLATION_DATA, errors=(409,)),
        status_code=204,
        summary="Set an isolation policy",
    )
    async def set_isolation_policy(cluster: str, name: str, request: Request) -> Response:
        _check_cluster(cluster_name, cluster, status=412)
        request_limits(request).check_name("isolation policy", name)
        policy = NamespaceIsolationData.from_json(await json_body(request))
        await cluster_policies.set_isolation_policy(name, policy)
        return no_content()

    @router.delete(
        f"{_C}/{{cluster}}/namespaceIsolationPolicies/{{name}}",
        openapi_extra=access(Access.SUPER_USER) | doc(errors=(409,)),
        status_code=204,
        summary="Delete an isolation policy",
    )
    async def delete_isolation_policy(cluster: str, name: str) -> Response:
        _check_cluster(cluster_name, cluster, status=412)
        await cluster_policies.set_isolation_policy(name, None)
        return no_content()

    @router.get(
        f"{_C}/{{cluster}}/failureDomains",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=FAILURE_DOMAINS),
        summary="Failure domains",
    )
    async def failure_domains(cluster: str) -> Response:
        _check_cluster(cluster_name, cluster, status=412)
        domains = await cluster_policies.failure_domains()
        return json_response({name: d.to_json() for name, d in sorted(domains.items())})

    @router.get(
        f"{_C}/{{cluster}}/failureDomains/{{name}}",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=FAILURE_DOMAIN),
        summary="One failure domain",
    )
    async def failure_domain(cluster: str, name: str) -> Response:
        _check_cluster(cluster_name, cluster, status=412)
        domain = await cluster_policies.failure_domain(name)
        if domain is None:
            raise NotFoundError(f"Domain {name} for cluster {cluster} does not exist")
        return json_response(domain.to_json())

    @router.post(
        f"{_C}/{{cluster}}/failureDomains/{{name}}",
        openapi_extra=access(Access.SUPER_USER) | doc(body=FAILURE_DOMAIN, errors=(409,)),
        status_code=204,
        summary="Set a failure domain",
    )
    async def set_failure_domain(cluster: str, name: str, request: Request) -> Response:
        _check_cluster(cluster_name, cluster, status=412)
        request_limits(request).check_name("failure domain", name)
        await cluster_policies.set_failure_domain(name, FailureDomain.from_json(await json_body(request)))
        return no_content()

    @router.delete(
        f"{_C}/{{cluster}}/failureDomains/{{name}}",
        openapi_extra=access(Access.SUPER_USER) | doc(errors=(409,)),
        status_code=204,
        summary="Delete a failure domain",
    )
    async def delete_failure_domain(cluster: str, name: str) -> Response:
        _check_cluster(cluster_name, cluster, status=412)
        await cluster_policies.delete_failure_domain(name)
        return no_content()

    return router
