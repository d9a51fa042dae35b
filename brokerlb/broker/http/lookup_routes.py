"""HTTP lookup v2: ``GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}[/bundle]``.

Served by a raw ASGI handler (:class:`LookupEndpoint`) in front of the FastAPI app:
an owned bundle is answered from memory with pre-encoded bytes, with no framework
work on the way (the goal is a p99 under 2 ms at thousands of lookups per second).
The FastAPI routes below describe the same endpoints in the OpenAPI document and
serve them when the fast path is turned off; both call :func:`lookup_answer`.

Query: ``authoritative`` (default false), ``listenerName`` (or the header
``X-Pulsar-ListenerName``). The topic segment is URL-decoded as Java's
``URLDecoder`` does (``+`` is a space).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, unquote_plus

from fastapi import APIRouter, Request, Response

from brokerlb.broker.http.access import Access, Security, access
from brokerlb.broker.http.errors import error_body, error_headers, error_status
from brokerlb.broker.http.openapi import LOOKUP_DATA, doc
from brokerlb.broker.http.redirects import TlsUrls, location_for_scheme, registered_brokers
from brokerlb.broker.observe.metrics.counters import LookupMetrics
from brokerlb.broker.ownership.lookup import LookupResult, LookupService
from brokerlb.errors import InvalidInputError, InvalidTopicNameError
from brokerlb.limits import InputLimits, shorten
from brokerlb.naming import TopicName
from brokerlb.security.authentication import first_header

if TYPE_CHECKING:
    from brokerlb.coordination import BrokerRegistry

__all__ = ["LookupAnswer", "LookupEndpoint", "lookup_router", "lookup_answer", "parse_bool", "render"]

_PREFIX = b"/lookup/v2/topic/"
_JSON = [(b"content-type", b"application/json")]

Send = Callable[[dict[str, Any]], Awaitable[None]]


def parse_bool(value: str | None, name: str, default: bool = False) -> bool:
    """``true``/``false`` (any case), as JAX-RS reads a boolean query parameter."""
    if value is None or value == "":
        return default
    lowered = value.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise InvalidInputError(
        f"Invalid value '{shorten(value)}' for query parameter '{name}': expected true or false"
    )


def topic_from_segments(domain: str, tenant: str, namespace: str, encoded_topic: str) -> TopicName:
    local = unquote_plus(encoded_topic)
    if domain not in ("persistent", "non-persistent"):
        raise InvalidTopicNameError(
            f"{domain}://{tenant}/{namespace}/{local}",
            f"unknown domain '{domain}' (expected persistent or non-persistent)",
        )
    if not local or "/" in local:
        raise InvalidTopicNameError(
            f"{domain}://{tenant}/{namespace}/{local}",
            "the topic's local name must be non-empty and without '/'",
        )
    return TopicName.parse(f"{domain}://{tenant}/{namespace}/{local}")


@dataclass(frozen=True, slots=True)
class LookupAnswer:
    """The HTTP rendering of a lookup: 200 with ``body`` (LookupData JSON) or 307 to ``location``."""

    status: int
    body: bytes = b""
    location: str | None = None


def render(
    lookup: LookupService, topic: TopicName, result: LookupResult, listener: str | None
) -> LookupAnswer:
    """A :class:`~brokerlb.broker.ownership.lookup.LookupResult` as Pulsar's HTTP lookup answers it: the
    owner's LookupData (of ``listener``), or a 307 to the broker to ask, at
    ``/lookup/v2/topic/{lookup name}?authoritative=...``."""
    if not result.redirect:
        return LookupAnswer(200, lookup.lookup_data(result.broker, listener))
    location = (
        f"{lookup.web_url(result.broker)}/lookup/v2/topic/{topic.lookup_name}"
        f"?authoritative={'true' if result.authoritative else 'false'}"
    )
    if listener:
        location += f"&listenerName={quote(listener, safe='')}"
    return LookupAnswer(307, location=location)


async def lookup_answer(
    lookup: LookupService, topic: TopicName, authoritative: bool, listener: str | None
) -> LookupAnswer:
    if listener is None:
        body = lookup.lookup_cached(topic)
        if body is not None:
            return LookupAnswer(200, body)
    return render(lookup, topic, await lookup.lookup(topic, authoritative=authoritative), listener)


async def observed_lookup(
    metrics: LookupMetrics, lookup: LookupService, topic: TopicName, authoritative: bool, listener: str | None
) -> LookupAnswer:
    """:func:`lookup_answer`, timed and counted (answer, redirect, failure) for ``/metrics``."""
    started = metrics.now()
    try:
        answer = await lookup_answer(lookup, topic, authoritative, listener)
    except Exception:
        metrics.failed(started)
        raise
    metrics.answered(started, answer.status)
    return answer


@lru_cache(maxsize=100_000)
def _topic_of_path(rest: bytes) -> tuple[TopicName, bool]:
    """``domain/tenant/ns/topic[/bundle]`` (still encoded) -> (topic, bundle query?); errors are not cached."""
    parts = rest.decode("utf-8", "replace").split("/")
    bundle_query = len(parts) == 5 and parts[4] == "bundle"
    if len(parts) != 4 and not bundle_query:
        raise InvalidTopicNameError(
            "/".join(parts), "expected /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}"
        )
    return topic_from_segments(*parts[:4]), bundle_query


class LookupEndpoint:
    """The raw ASGI lookup handler; :meth:`handles` says whether a request is ours."""

    def __init__(
        self,
        lookup: LookupService,
        metrics: LookupMetrics,
        registry: BrokerRegistry,
        security: Security | None = None,
        limits: InputLimits | None = None,
    ) -> None:
        self.limits = limits if limits is not None else InputLimits()
        self.lookup = lookup
        self.metrics = metrics
        self.security = security if security is not None and security.enabled else None
        self.tls_urls = TlsUrls(registered_brokers(registry))  # redirects of https requests
        #: an owner's LookupData (the bytes the lookup service keeps per broker) -> its headers
        self._headers: dict[bytes, list[tuple[bytes, bytes]]] = {}

    @staticmethod
    def handles(scope: dict[str, Any]) -> bool:
        raw = scope.get("raw_path") or scope["path"].encode()
        return scope["method"] == "GET" and raw.startswith(_PREFIX)

    async def __call__(self, scope: dict[str, Any], send: Send) -> None:
        try:
            owned = self._owned(scope)
            if owned is not None:  # the hot path: an owned bundle's answer from memory, no await
                await send({"type": "http.response.start", "status": 200, "headers": owned[0]})
                await send({"type": "http.response.body", "body": owned[1]})
                return
            status, headers, body = await self._answer(scope)
        except Exception as exc:
            status, headers, body = error_status(exc), _JSON + error_headers(exc), error_body(exc)
        headers = headers + [(b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _owned(self, scope: dict[str, Any]) -> tuple[list[tuple[bytes, bytes]], bytes] | None:
        """``(headers, LookupData)`` of a plain lookup (no security, no query but
        ``authoritative=false``, no listener) of a topic whose bundle is Owned, answered from memory
        and counted as :meth:`_answer` counts it; ``None``: :meth:`_answer` decides."""
        if self.security is not None:
            return None
        query = scope.get("query_string")
        if query and query != b"authoritative=false":
            return None
        raw = scope.get("raw_path") or scope["path"].encode()
        self.limits.check_path(raw)
        for name, _value in scope.get("headers", ()):
            if name == b"x-pulsar-listenername":
                return None
        started = self.metrics.now()
        topic, bundle_query = _topic_of_path(raw[len(_PREFIX) :])
        if bundle_query:
            return None
        body = self.lookup.lookup_cached(topic)
        if body is None:
            return None
        self.metrics.answered(started, 200)
        headers = self._headers.get(body)
        if headers is None:
            if len(self._headers) > 64:  # one body per owner broker: a bound, not a working set
                self._headers.clear()
            headers = self._headers[body] = _JSON + [(b"content-length", str(len(body)).encode())]
        return headers, body

    async def _answer(self, scope: dict[str, Any]) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        raw = scope.get("raw_path") or scope["path"].encode()
        # nothing of the path is parsed or cached before the name bound and the credentials are checked
        self.limits.check_path(raw)
        role = None
        if self.security is not None:
            role = self.security.authenticate(
                Access.TOPIC_LOOKUP, first_header(scope.get("headers", ()), b"authorization")
            )
        topic, bundle_query = _topic_of_path(raw[len(_PREFIX) :])
        if (
            self.security is not None
        ):  # the routes' declarations below: a bundle is the namespace's GET_BUNDLE
            await self.security.authorize(
                Access.NAMESPACE_USE if bundle_query else Access.TOPIC_LOOKUP,
                {"tenant": topic.namespace.tenant, "namespace": topic.namespace.local_name},
                role,
                topic,
            )
        if bundle_query:
            bundle = await self.lookup.bundle_of(topic)
            return 200, [(b"content-type", b"text/plain")], bundle.range.encode()
        query = scope.get("query_string", b"")
        authoritative, listener = False, None
        if query and query != b"authoritative=false":
            params = parse_qs(query.decode("latin-1"))
            authoritative = parse_bool((params.get("authoritative") or [None])[0], "authoritative")
            listener = (params.get("listenerName") or [None])[0]
        if listener is None:
            for name, value in scope.get("headers", ()):
                if name == b"x-pulsar-listenername":
                    listener = value.decode("latin-1")
        answer = await observed_lookup(self.metrics, self.lookup, topic, authoritative, listener or None)
        if answer.status == 307:
            location = location_for_scheme(answer.location or "", scope.get("scheme", "http"), self.tls_urls)
            return 307, [(b"location", location.encode())], b""
        return answer.status, _JSON, answer.body


def lookup_router(lookup: LookupService, metrics: LookupMetrics) -> APIRouter:
    """The lookup endpoints as FastAPI routes (OpenAPI, and the path when the fast path is off)."""
    router = APIRouter(tags=["lookup"])

    @router.get(
        "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}",
        openapi_extra=access(Access.TOPIC_LOOKUP) | doc(returns=LOOKUP_DATA, redirects=True),
        summary="Look up the broker serving a topic",
        responses={
            200: {"description": "LookupData of the owner"},
            307: {"description": "Ask the leader or the chosen broker"},
            404: {"description": "Namespace does not exist"},
            412: {"description": "Invalid topic name"},
            503: {"description": "No broker available, bundle unloading, too many lookups"},
        },
    )
    async def lookup_topic(
        domain: str,
        tenant: str,
        namespace: str,
        topic: str,
        request: Request,
        authoritative: str | None = None,
        listenerName: str | None = None,  # noqa: N803
    ) -> Response:
        listener = listenerName or request.headers.get("x-pulsar-listenername")
        name = topic_from_segments(domain, tenant, namespace, topic)
        answer = await observed_lookup(
            metrics,
            lookup,
            name,
            parse_bool(authoritative, "authoritative"),
            listener,
        )
        if answer.status == 307:
            location = location_for_scheme(
                answer.location or "", request.url.scheme, getattr(request.app.state, "tls_urls", None)
            )
            return Response(status_code=307, headers={"location": location})
        return Response(answer.body, media_type="application/json")

    @router.get(
        "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}/bundle",
        openapi_extra=access(Access.NAMESPACE_USE),  # Pulsar: the namespace's GET_BUNDLE
        summary="The bundle range a topic belongs to",
        response_class=Response,
        responses={200: {"content": {"text/plain": {}}}},
    )
    async def topic_bundle(domain: str, tenant: str, namespace: str, topic: str) -> Response:
        bundle = await lookup.bundle_of(topic_from_segments(domain, tenant, namespace, topic))
        return Response(bundle.range, media_type="text/plain")

    return router
