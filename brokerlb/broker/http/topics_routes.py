"""Admin v2 topics (Pulsar's ``PersistentTopics`` / ``NonPersistentTopics``): ``/admin/v2/{domain}/...``.

One set of routes per domain (``persistent``, ``non-persistent``), so an unknown domain is 404 as
in Pulsar. Rules and status codes: :mod:`brokerlb.broker.admin.topic_admin`.

| request | answer |
|---|---|
| ``GET /{domain}/{t}/{ns}`` | topic names (partitions, not partitioned bases) |
| ``GET /{domain}/{t}/{ns}/partitioned`` | partitioned topic names |
| ``PUT /{domain}/{t}/{ns}/{topic}`` body: optional properties map | 204; 307 to the owner |
| ``DELETE /{domain}/{t}/{ns}/{topic}?force=`` | 204; 307 |
| ``GET /{domain}/{t}/{ns}/{topic}/stats`` | TopicStats; 307 |
| ``GET /{domain}/{t}/{ns}/{topic}/internalStats`` | PersistentTopicInternalStats; 307 |
| ``GET /{domain}/{t}/{ns}/{topic}/partitioned-stats?perPartition=true`` | PartitionedTopicStats |
| ``GET /{domain}/{t}/{ns}/{topic}/subscriptions`` | subscription names; 307 |
| ``PUT/GET/DELETE /{domain}/{t}/{ns}/{topic}/partitions`` | create (body: N) / ``{"partitions": N}`` / delete |
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from brokerlb.broker.admin.partitioned_topics import PartitionedTopics, parse_partition_count
from brokerlb.broker.admin.topic_admin import TopicAdmin
from brokerlb.broker.http.access import Access, access
from brokerlb.broker.http.common import json_body, json_response, maybe_redirect, no_content, request_limits
from brokerlb.broker.http.lookup_routes import parse_bool, topic_from_segments
from brokerlb.broker.http.openapi import (
    OBJECT,
    PARTITIONED_METADATA,
    PARTITIONS,
    STRINGS,
    TOPIC_PROPERTIES,
    doc,
)
from brokerlb.errors import InvalidInputError
from brokerlb.naming import NamespaceName

__all__ = ["topics_router", "DOMAINS"]

DOMAINS = ("persistent", "non-persistent")


def _properties(body: object) -> dict[str, str] | None:
    if body is None:
        return None
    if not isinstance(body, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in body.items()
    ):
        raise InvalidInputError(f"Topic properties must be a JSON object of strings, got {body!r}")
    return body


def topics_router(topics: TopicAdmin, partitioned: PartitionedTopics) -> APIRouter:
    router = APIRouter(tags=["topics"])
    for domain in DOMAINS:
        _domain_routes(router, domain, topics, partitioned)
    return router


def _domain_routes(
    router: APIRouter, domain: str, topics: TopicAdmin, partitioned: PartitionedTopics
) -> None:  # noqa: C901 - one route per endpoint
    base = f"/admin/v2/{domain}/{{tenant}}/{{namespace}}"
    one = f"{base}/{{topic}}"
    suffix = domain.replace("-", "_")

    def ns_of(tenant: str, namespace: str) -> str:
        return str(NamespaceName.parse(f"{tenant}/{namespace}"))

    async def list_topics(tenant: str, namespace: str) -> Response:
        return json_response(await topics.list_topics(ns_of(tenant, namespace), domain))

    async def list_partitioned(tenant: str, namespace: str) -> Response:
        return json_response(await topics.list_partitioned(ns_of(tenant, namespace), domain))

    async def create_topic(
        tenant: str, namespace: str, topic: str, request: Request, authoritative: str | None = None
    ) -> Response:
        name = topic_from_segments(domain, tenant, namespace, topic)
        request_limits(request).check_name("topic", name.local_name)
        result = await topics.create(
            name,
            authoritative=parse_bool(authoritative, "authoritative"),
            properties=_properties(await json_body(request)),
        )
        return maybe_redirect(request, result) or no_content()

    async def delete_topic(
        tenant: str,
        namespace: str,
        topic: str,
        request: Request,
        force: str | None = None,
        authoritative: str | None = None,
    ) -> Response:
        name = topic_from_segments(domain, tenant, namespace, topic)
        result = await topics.delete(
            name, force=parse_bool(force, "force"), authoritative=parse_bool(authoritative, "authoritative")
        )
        return maybe_redirect(request, result) or no_content()

    async def topic_stats(
        tenant: str, namespace: str, topic: str, request: Request, authoritative: str | None = None
    ) -> Response:
        name = topic_from_segments(domain, tenant, namespace, topic)
        result: Any = await topics.stats(name, authoritative=parse_bool(authoritative, "authoritative"))
        return maybe_redirect(request, result) or json_response(result)

    async def internal_stats(
        tenant: str, namespace: str, topic: str, request: Request, authoritative: str | None = None
    ) -> Response:
        name = topic_from_segments(domain, tenant, namespace, topic)
        result: Any = await topics.internal_stats(
            name, authoritative=parse_bool(authoritative, "authoritative")
        )
        return maybe_redirect(request, result) or json_response(result)

    async def partitioned_stats(
        tenant: str,
        namespace: str,
        topic: str,
        perPartition: str | None = None,  # noqa: N803
    ) -> Response:
        name = topic_from_segments(domain, tenant, namespace, topic)
        per_partition = parse_bool(perPartition, "perPartition", default=True)
        return json_response(await topics.partitioned_stats(name, per_partition=per_partition))

    async def subscriptions(
        tenant: str, namespace: str, topic: str, request: Request, authoritative: str | None = None
    ) -> Response:
        name = topic_from_segments(domain, tenant, namespace, topic)
        result: Any = await topics.subscriptions(
            name, authoritative=parse_bool(authoritative, "authoritative")
        )
        return maybe_redirect(request, result) or json_response(result)

    async def create_partitioned(tenant: str, namespace: str, topic: str, request: Request) -> Response:
        name = topic_from_segments(domain, tenant, namespace, topic)
        limits = request_limits(request)
        limits.check_name("topic", name.local_name)
        partitions = parse_partition_count(await json_body(request))
        limits.check_partitions(partitions)
        await topics.create_partitioned(name, partitions)
        return no_content()

    async def partitioned_metadata(tenant: str, namespace: str, topic: str) -> Response:
        name = topic_from_segments(domain, tenant, namespace, topic)
        return json_response(await partitioned.metadata(name))

    async def delete_partitioned(
        tenant: str, namespace: str, topic: str, force: str | None = None
    ) -> Response:
        name = topic_from_segments(domain, tenant, namespace, topic)
        await topics.delete_partitioned(name, force=parse_bool(force, "force"))
        return no_content()

    # Pulsar's checks: listing is the namespace's GET_TOPICS (produce or consume there); creating and
    # deleting topics is CREATE_TOPIC / DELETE_TOPIC (tenant admins); stats and metadata are
    # GET_STATS / LOOKUP (produce or consume on the topic); subscriptions GET_SUBSCRIPTIONS (consume).
    routes: list[tuple[str, str, Any, str, int, Access, dict[str, Any]]] = [
        (
            "GET",
            base,
            list_topics,
            "List the namespace's topics",
            200,
            Access.NAMESPACE_USE,
            doc(returns=STRINGS),
        ),
        (
            "GET",
            f"{base}/partitioned",
            list_partitioned,
            "List the namespace's partitioned topics",
            200,
            Access.NAMESPACE_USE,
            doc(returns=STRINGS),
        ),
        (
            "PUT",
            one,
            create_topic,
            "Create a non-partitioned topic",
            204,
            Access.TENANT_ADMIN,
            doc(body=TOPIC_PROPERTIES, body_required=False, errors=(409,), redirects=True),
        ),
        (
            "DELETE",
            one,
            delete_topic,
            "Delete a topic",
            204,
            Access.TENANT_ADMIN,
            doc(errors=(409,), redirects=True),
        ),
        (
            "GET",
            f"{one}/stats",
            topic_stats,
            "Topic stats (Pulsar's TopicStats)",
            200,
            Access.TOPIC_LOOKUP,
            doc(returns=OBJECT, redirects=True),
        ),
        (
            "GET",
            f"{one}/internalStats",
            internal_stats,
            "The topic's managed ledger (Pulsar's PersistentTopicInternalStats)",
            200,
            Access.TOPIC_LOOKUP,
            doc(returns=OBJECT, redirects=True),
        ),
        (
            "GET",
            f"{one}/partitioned-stats",
            partitioned_stats,
            "Partitioned topic stats",
            200,
            Access.TOPIC_LOOKUP,
            doc(returns=OBJECT),
        ),
        (
            "GET",
            f"{one}/subscriptions",
            subscriptions,
            "Subscriptions of a topic",
            200,
            Access.TOPIC_CONSUME,
            doc(returns=STRINGS, redirects=True),
        ),
        (
            "PUT",
            f"{one}/partitions",
            create_partitioned,
            "Create a partitioned topic (body: partitions)",
            204,
            Access.TENANT_ADMIN,
            doc(body=PARTITIONS, errors=(406, 409)),
        ),
        (
            "GET",
            f"{one}/partitions",
            partitioned_metadata,
            'Partitioned-topic metadata ({"partitions": N})',
            200,
            Access.TOPIC_LOOKUP,
            doc(returns=PARTITIONED_METADATA),
        ),
        (
            "DELETE",
            f"{one}/partitions",
            delete_partitioned,
            "Delete a partitioned topic",
            204,
            Access.TENANT_ADMIN,
            doc(errors=(409,)),
        ),
    ]
    for method, path, endpoint, summary, status, needed, described in routes:
        router.add_api_route(
            path,
            endpoint,
            methods=[method],
            openapi_extra=access(needed) | described,
            summary=f"{summary} ({domain})",
            status_code=status,
            operation_id=f"{endpoint.__name__}_{suffix}",
        )
