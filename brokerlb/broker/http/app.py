"""The broker's HTTP application: FastAPI routes behind a raw-ASGI lookup fast path.

``create_app(parts)`` returns an ASGI callable. It is the one place that reads the broker's
parts (:class:`~brokerlb.broker.wiring.BrokerParts`): each router and endpoint is given only the
sub-services it uses.

* ``GET /lookup/v2/topic/...`` → :class:`~brokerlb.broker.http.lookup_routes.LookupEndpoint`
  (unless ``fast_lookup=False``);
* WebSocket ``/ws/v2/producer|consumer/...`` → :class:`~brokerlb.broker.websocket.WebSocketEndpoint`
  (Pulsar's WebSocket API, when ``webSocketServiceEnabled``);
* everything else → the FastAPI app: lookup, ``/admin/v2`` tenants, namespaces, topics,
  brokers (and their configuration), broker-stats, clusters, and the OpenAPI document at
  ``/openapi.json`` (browsable at ``/docs``).

Every error is Pulsar's body ``{"reason": "..."}`` with its status (see
:mod:`~brokerlb.broker.http.errors`); FastAPI's own validation errors become 400.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from brokerlb import __version__
from brokerlb.broker.http.access import Security, authorize
from brokerlb.broker.http.brokers_routes import brokers_router, clusters_router
from brokerlb.broker.http.errors import error_body, error_headers, error_status, json_bytes
from brokerlb.broker.http.guard import RequestGuard
from brokerlb.broker.http.history_routes import load_history_router
from brokerlb.broker.http.lookup_routes import LookupEndpoint, lookup_router
from brokerlb.broker.http.namespaces_routes import namespaces_router
from brokerlb.broker.http.openapi import complete_responses
from brokerlb.broker.http.operations_routes import operations_routers
from brokerlb.broker.http.permissions_routes import permissions_router
from brokerlb.broker.http.redirects import TlsUrls, registered_brokers
from brokerlb.broker.observe.health import health, readiness
from brokerlb.broker.websocket import WebSocketEndpoint
from brokerlb.coordination.permissions import NamespacePermissions
from brokerlb.errors import BrokerLBError
from brokerlb.limits import InputLimits

if TYPE_CHECKING:
    from brokerlb.broker.wiring import BrokerParts

__all__ = ["create_app", "BrokerApp"]

logger = logging.getLogger(__name__)

_DESCRIPTION = """\
Topic lookup and admin REST API of a brokerlb broker, with Apache Pulsar's paths, JSON and
status codes (lookup v2, admin v2 namespaces / brokers / broker-stats / clusters / partitioned
topics). Operations on a bundle are answered by its owner: other brokers reply 307 with the
owner's URL. Errors are `{"reason": "..."}`.

brokerlb extensions (not in Pulsar) carry the tag **brokerlb extensions**: merging adjacent
bundles, the transfer-destination `acquire` call, the balancer's status and the load-history writer. `/metrics` serves
Prometheus text with Pulsar's metric names; `/dashboard` is a live web dashboard.
"""


def _fastapi(service: BrokerParts, limits: InputLimits, security: Security) -> FastAPI:
    app = FastAPI(
        title="brokerlb broker",
        version=__version__,
        description=_DESCRIPTION,
        dependencies=[Depends(authorize)],  # every route's declared access (http/access.py)
    )
    app.state.limits = limits
    app.state.security = security
    app.state.tls_urls = TlsUrls(registered_brokers(service.registry))  # redirects of https requests
    for router in _routers(service, security):
        app.include_router(router)
    complete_responses(app)  # the answers every operation may give, in /openapi.json (http/openapi.py)

    def error_response(exc: BaseException) -> Response:
        headers = {k.decode(): v.decode() for k, v in error_headers(exc)}
        return Response(
            error_body(exc), status_code=error_status(exc), media_type="application/json", headers=headers
        )

    @app.exception_handler(BrokerLBError)
    async def brokerlb_error(_request: Request, exc: BrokerLBError) -> Response:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> Response:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors()
        )
        return Response(
            json_bytes({"reason": f"Invalid request: {problems}"}),
            status_code=400,
            media_type="application/json",
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        reason = exc.detail
        if exc.status_code == 404 and reason == "Not Found":
            reason = f"Route not found: {request.method} {request.url.path}"
        elif exc.status_code == 405:
            reason = f"Method {request.method} not allowed on {request.url.path}"
        return Response(
            json_bytes({"reason": reason}),
            status_code=exc.status_code,
            media_type="application/json",
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(ClientDisconnect)
    async def client_gone(request: Request, _exc: ClientDisconnect) -> Response:
        logger.debug("Client disconnected while sending %s %s", request.method, request.url.path)
        return Response(status_code=400)  # nobody reads it

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> Response:
        return error_response(exc)

    return app


def _routers(service: BrokerParts, security: Security) -> list[APIRouter]:
    """The app's routers, each given the parts of ``service`` it uses."""
    ident, ops, election = service.identity, service.operations, service.election
    # Security.from_config always reads permissions from the store; a bare Security reads them here
    permissions = security.authorization.permissions or NamespacePermissions(service.store)
    return [
        *operations_routers(  # first: their fixed paths before the older {param} ones
            ops,
            conf=service.conf,
            election=election,
            registry=service.registry,
            cluster_policies=service.cluster_policies,
            partitioned_topics=service.partitioned_topics,
            admin=service.admin,
        ),
        load_history_router(  # before brokers_router: its fixed path before /admin/v2/brokers/{cluster}
            service.history, broker_id=ident.broker_id, registry=service.registry, admin=service.admin
        ),
        lookup_router(service.lookup, ops.lookups),
        namespaces_router(
            service.namespaces, service.stories, ops.tenants, ident.cluster, ops.lb_counters.admin_action
        ),
        permissions_router(permissions),
        brokers_router(
            identity=ident,
            registry=service.registry,
            election=election,
            reporter=service.reporter,
            topics=service.topics,
            cluster_policies=service.cluster_policies,
            ownership=service.channel,
            readiness=lambda: readiness(service.started, service.ready),
            health=lambda: health(
                readiness(service.started, service.ready),
                identity=ident,
                store=service.store,
                registry=service.registry,
                ownership=service.channel,
            ),
        ),
        clusters_router(ident.cluster, service.cluster_policies),
    ]


class BrokerApp:
    """The ASGI entry point: lookups on the fast path, the rest to FastAPI."""

    def __init__(self, service: BrokerParts, *, fast_lookup: bool = True) -> None:
        self.limits = InputLimits.from_config(service.conf)
        self.security = Security.from_config(service.conf, service.store)
        self.fastapi = _fastapi(service, self.limits, self.security)
        self.guarded = RequestGuard(self.fastapi, self.limits)
        self.lookup = (
            LookupEndpoint(
                service.lookup, service.operations.lookups, service.registry, self.security, self.limits
            )
            if fast_lookup
            else None
        )
        data_path = service.data_path if service.conf.webSocketServiceEnabled else None
        self.websocket = WebSocketEndpoint(
            data_path,
            service.bundles,
            service.channel,
            service.identity.broker_id,
            security=self.security,
            limits=self.limits,
            auth_refresh_check_seconds=service.conf.authenticationRefreshCheckSeconds,
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.lookup is not None and scope["type"] == "http" and self.lookup.handles(scope):
            await self.lookup(scope, send)
            return
        if self.websocket.handles(scope):
            await self.websocket(scope, receive, send)
            return
        await self.guarded(scope, receive, send)


def create_app(service: BrokerParts, *, fast_lookup: bool = True) -> BrokerApp:
    return BrokerApp(service, fast_lookup=fast_lookup)
