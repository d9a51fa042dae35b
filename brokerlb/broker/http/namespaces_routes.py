"""Admin v2 namespaces: ``/admin/v2/namespaces/...`` with Pulsar's paths, bodies and codes.

brokerlb extensions (documented in the OpenAPI document with the tag
``brokerlb extensions``): ``PUT /{tenant}/{namespace}/merge`` (merge adjacent bundles) and
``GET /{tenant}/{namespace}/{bundle}/story`` (a bundle's ownership story).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from brokerlb.broker.http.access import Access, access
from brokerlb.broker.http.common import (
    json_body,
    json_or_text_body,
    json_response,
    maybe_redirect,
    no_content,
    request_limits,
)
from brokerlb.broker.http.lookup_routes import parse_bool
from brokerlb.broker.http.openapi import (
    ANTI_AFFINITY_GROUP,
    BUNDLE_RANGES,
    BUNDLE_STORY,
    BUNDLES_DATA,
    MERGE_RESULT,
    OBJECT,
    POLICIES,
    SPLIT_POSITIONS,
    STRINGS,
    TOPIC_HASH_POSITIONS,
    doc,
)
from brokerlb.broker.leader.leader_fence import parse_leader_epoch
from brokerlb.errors import PreconditionFailedError
from brokerlb.naming import NamespaceName
from brokerlb.ring.bundles import parse_boundary

if TYPE_CHECKING:
    from brokerlb.broker.admin.namespace_service import NamespaceService
    from brokerlb.broker.ownership.bundle_story import BundleStories
    from brokerlb.coordination.tenants import Tenants

__all__ = ["namespaces_router"]

_P = "/admin/v2/namespaces"


def _ns(tenant: str, namespace: str) -> str:
    return str(NamespaceName.parse(f"{tenant}/{namespace}"))


def namespaces_router(  # noqa: C901 - one route per endpoint
    namespaces: NamespaceService,
    stories: BundleStories,
    tenants: Tenants,
    local_cluster: str,
    admin_action: Callable[[str], None] = lambda kind: None,
) -> APIRouter:
    """The namespace and bundle endpoints over ``namespaces``; ``stories`` tells a bundle's story,
    ``tenants`` checks a namespace's tenant (and that it may use ``local_cluster``, this broker's).
    ``admin_action(kind)`` hears of every ``unload``, ``transfer`` and ``split`` an operator asked
    for (no leader epoch) that this broker carried out (metrics count them with reason Admin)."""
    router = APIRouter(tags=["namespaces"])
    ext: list[str | Enum] = ["brokerlb extensions"]

    @router.get(
        f"{_P}/{{tenant}}",
        openapi_extra=access(Access.TENANT_ADMIN) | doc(returns=STRINGS),
        summary="Namespaces of a tenant",
    )
    async def list_namespaces(tenant: str) -> Response:
        NamespaceName.parse(f"{tenant}/x")
        await tenants.require(tenant)
        return json_response(await namespaces.list_namespaces(tenant))

    @router.put(
        f"{_P}/{{tenant}}/{{namespace}}",
        openapi_extra=access(Access.TENANT_ADMIN) | doc(body=POLICIES, body_required=False, errors=(409,)),
        status_code=204,
        summary="Create a namespace",
        description='Body: optional Policies JSON, e.g. {"bundles": {"numBundles": 16}} or '
        '{"bundles": {"boundaries": ["0x00000000", ..., "0xffffffff"]}}.',
    )
    async def create_namespace(tenant: str, namespace: str, request: Request) -> Response:
        name = _ns(tenant, namespace)
        limits = request_limits(request)
        limits.check_name("tenant", tenant)
        limits.check_name("namespace", namespace)
        body = await json_body(request)
        limits.check_policies_bundles(body, parse_boundary)
        await tenants.check_namespace_allowed(tenant, local_cluster)
        await _check_replication_clusters(tenant, body)
        await namespaces.create_namespace(name, body)
        return no_content()

    async def _check_replication_clusters(tenant: str, body: Any) -> None:
        """Pulsar's ``validatePolicies``: every cluster of ``replication_clusters`` exists (this
        broker's cluster is the one there is) and the tenant may use it."""
        clusters = body.get("replication_clusters") if isinstance(body, dict) else None
        if clusters is None:
            return
        if not isinstance(clusters, list) or not all(isinstance(c, str) for c in clusters):
            raise PreconditionFailedError(
                f"Invalid replication_clusters: expected a list of names, got {clusters!r}"
            )
        for cluster in clusters:
            if cluster != local_cluster:
                raise PreconditionFailedError(
                    f"Cluster [{cluster}] does not exist (this cluster: {local_cluster})"
                )
            await tenants.check_namespace_allowed(tenant, cluster)

    @router.get(
        f"{_P}/{{tenant}}/{{namespace}}/bundles",
        openapi_extra=access(Access.NAMESPACE_USE) | doc(returns=BUNDLES_DATA),
        summary="Bundles of a namespace (BundlesData)",
    )
    async def get_bundles(tenant: str, namespace: str) -> Response:
        return json_response(await namespaces.get_bundles(_ns(tenant, namespace)))

    @router.put(
        f"{_P}/{{tenant}}/{{namespace}}/unload",
        openapi_extra=access(Access.SUPER_USER) | doc(errors=(409,)),
        status_code=204,
        summary="Unload every bundle",
    )
    async def unload_namespace(tenant: str, namespace: str) -> Response:
        await namespaces.unload_namespace(_ns(tenant, namespace))
        return no_content()

    @router.put(
        f"{_P}/{{tenant}}/{{namespace}}/merge",
        openapi_extra=access(Access.SUPER_USER)
        | doc(body=BUNDLE_RANGES, returns=MERGE_RESULT, errors=(409,), redirects=True),
        tags=ext,
        summary="brokerlb: merge adjacent bundles",
        description="Body: JSON list of two or more adjacent bundle ranges. The leader unloads them, "
        "writes the merged ring by compare-and-set and assigns the merged bundle. "
        'Answers {"namespace", "bundle", "broker"}.',
    )
    async def merge_bundles(
        tenant: str, namespace: str, request: Request, authoritative: str | None = None
    ) -> Response:
        result = await namespaces.merge_bundles(
            _ns(tenant, namespace),
            await json_body(request),
            authoritative=parse_bool(authoritative, "authoritative"),
        )
        return maybe_redirect(request, result) or json_response(result.to_json())  # type: ignore[union-attr]

    @router.post(
        f"{_P}/{{tenant}}/{{namespace}}/antiAffinity",
        openapi_extra=access(Access.TENANT_ADMIN) | doc(body=ANTI_AFFINITY_GROUP, errors=(409,)),
        status_code=204,
        summary="Set the anti-affinity group",
    )
    async def set_anti_affinity(tenant: str, namespace: str, request: Request) -> Response:
        group = await json_or_text_body(request)
        if isinstance(group, str):
            request_limits(request).check_name("anti-affinity group", group.strip())
        await namespaces.set_anti_affinity_group(_ns(tenant, namespace), group)
        return no_content()

    @router.get(
        f"{_P}/{{tenant}}/{{namespace}}/antiAffinity",
        openapi_extra=access(Access.TENANT_ADMIN) | doc(returns=ANTI_AFFINITY_GROUP, no_content=True),
        summary="Get the anti-affinity group",
    )
    async def get_anti_affinity(tenant: str, namespace: str) -> Response:
        group = await namespaces.get_anti_affinity_group(_ns(tenant, namespace))
        return no_content() if group is None else json_response(group)

    @router.delete(
        f"{_P}/{{tenant}}/{{namespace}}/antiAffinity",
        openapi_extra=access(Access.TENANT_ADMIN) | doc(errors=(409,)),
        status_code=204,
        summary="Remove the anti-affinity group",
    )
    async def remove_anti_affinity(tenant: str, namespace: str) -> Response:
        await namespaces.remove_anti_affinity_group(_ns(tenant, namespace))
        return no_content()

    @router.get(
        f"{_P}/{{cluster}}/antiAffinity/{{group}}",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=STRINGS),
        summary="Namespaces in an anti-affinity group",
    )
    async def anti_affinity_namespaces(cluster: str, group: str) -> Response:
        return json_response(await namespaces.anti_affinity_namespaces(cluster, group))

    @router.put(
        f"{_P}/{{tenant}}/{{namespace}}/{{bundle}}/unload",
        openapi_extra=access(Access.SUPER_USER) | doc(errors=(409,), redirects=True),
        status_code=204,
        summary="Unload a bundle (optionally to a destination broker)",
    )
    async def unload_bundle(
        tenant: str,
        namespace: str,
        bundle: str,
        request: Request,
        authoritative: str | None = None,
        destinationBroker: str | None = None,
        leaderEpoch: str | None = None,
    ) -> Response:  # noqa: N803
        epoch = parse_leader_epoch(leaderEpoch)
        result = await namespaces.unload_bundle(
            _ns(tenant, namespace),
            bundle,
            authoritative=parse_bool(authoritative, "authoritative"),
            destination=destinationBroker,
            leader_epoch=epoch,
        )
        redirect = maybe_redirect(request, result)
        if redirect is not None:
            return redirect
        if epoch is None:
            admin_action("transfer" if destinationBroker else "unload")
        return no_content()

    @router.put(
        f"{_P}/{{tenant}}/{{namespace}}/{{bundle}}/split",
        openapi_extra=access(Access.SUPER_USER)
        | doc(body=SPLIT_POSITIONS, body_required=False, errors=(409,), redirects=True),
        status_code=204,
        summary="Split a bundle (range, LARGEST or HOT)",
        description="Body: optional JSON list of split positions (specified_positions_divide).",
    )
    async def split_bundle(
        tenant: str,
        namespace: str,
        bundle: str,
        request: Request,
        authoritative: str | None = None,
        unload: str | None = None,
        splitAlgorithmName: str | None = None,
        leaderEpoch: str | None = None,
    ) -> Response:  # noqa: N803
        epoch = parse_leader_epoch(leaderEpoch)
        result = await namespaces.split_bundle(
            _ns(tenant, namespace),
            bundle,
            authoritative=parse_bool(authoritative, "authoritative"),
            unload=parse_bool(unload, "unload"),
            algorithm=splitAlgorithmName or None,
            body=await json_body(request),
            leader_epoch=epoch,
        )
        redirect = maybe_redirect(request, result)
        if redirect is not None:
            return redirect
        if epoch is None:
            admin_action("split")
        return no_content()

    @router.post(
        f"{_P}/{{tenant}}/{{namespace}}/{{bundle}}/operatorAction",
        openapi_extra=access(Access.SUPER_USER) | doc(body=OBJECT, errors=(412,), redirects=True),
        status_code=204,
        tags=ext,
        summary="brokerlb: the leader records an operator's action on a bundle (broker to broker)",
        description='Body: {"kind": "split" | "unload" | "transfer" | "merge", "source", "destination"}. '
        "The broker that received an operator's request tells the leader, whose balancer does not "
        "undo it within loadBalancerSheddingGracePeriodMinutes. Other brokers redirect to the leader.",
    )
    async def record_operator_action(tenant: str, namespace: str, bundle: str, request: Request) -> Response:
        result = await namespaces.record_operator_action(
            _ns(tenant, namespace), bundle, await json_body(request)
        )
        return maybe_redirect(request, result) or no_content()

    @router.get(
        f"{_P}/{{tenant}}/{{namespace}}/{{bundle}}/story",
        tags=ext,
        openapi_extra=access(Access.TENANT_ADMIN) | doc(returns=BUNDLE_STORY),
        summary="brokerlb: why a bundle is where it is (its ownership transitions on every broker)",
    )
    async def bundle_story(
        tenant: str, namespace: str, bundle: str, local: Annotated[str | None, Query()] = None
    ) -> Response:
        story = await stories.story(_ns(tenant, namespace), bundle, local=parse_bool(local, "local"))
        return json_response(story)

    @router.get(
        f"{_P}/{{tenant}}/{{namespace}}/{{bundle}}/topicHashPositions",
        openapi_extra=access(Access.NAMESPACE_USE) | doc(returns=TOPIC_HASH_POSITIONS, redirects=True),
        summary="Hash positions of topics in a bundle",
    )
    async def topic_hash_positions(
        tenant: str,
        namespace: str,
        bundle: str,
        request: Request,
        topics: Annotated[list[str] | None, Query()] = None,
    ) -> Response:
        result = await namespaces.topic_hash_positions(_ns(tenant, namespace), bundle, topics or [])
        return maybe_redirect(request, result) or json_response(result)

    @router.delete(
        f"{_P}/{{tenant}}/{{namespace}}/{{bundle}}",
        openapi_extra=access(Access.TENANT_ADMIN) | doc(errors=(409,), redirects=True),
        status_code=204,
        summary="Delete a bundle",
    )
    async def delete_bundle(
        tenant: str,
        namespace: str,
        bundle: str,
        request: Request,
        force: str | None = None,
        authoritative: str | None = None,
    ) -> Response:
        result = await namespaces.delete_bundle(
            _ns(tenant, namespace),
            bundle,
            force=parse_bool(force, "force"),
            authoritative=parse_bool(authoritative, "authoritative"),
        )
        return maybe_redirect(request, result) or no_content()

    return router
