"""``/metrics`` (Prometheus text) and the balancer's status.

| request | answer |
|---|---|
| ``GET /metrics``, ``GET /metrics/`` | every series of this broker (:mod:`brokerlb.broker.observe.metrics.exporter`) |
| ``GET /admin/v2/brokers/balancer`` | brokerlb extension: the balancer's status (:mod:`brokerlb.broker.leader.balancer_status`), answered by the leader (307 from the others; answered here when no leader is known) |
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Request, Response

from brokerlb.broker.http.access import Access, access
from brokerlb.broker.http.common import json_response, maybe_redirect
from brokerlb.broker.http.openapi import OBJECT, doc
from brokerlb.broker.leader.balancer_status import BalancerStatus
from brokerlb.broker.observe.metrics import CONTENT_TYPE_LATEST, BrokerMetrics
from brokerlb.broker.ownership.redirect import Redirect

__all__ = ["metrics_router", "balancer_router"]


def metrics_router(metrics: BrokerMetrics) -> APIRouter:
    router = APIRouter(tags=["metrics"])

    async def scrape() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    for path in ("/metrics", "/metrics/"):
        router.add_api_route(
            path,
            scrape,
            methods=["GET"],
            openapi_extra=access(Access.METRICS),
            summary="Prometheus metrics of this broker",
            response_class=Response,
            operation_id=f"metrics{'_slash' if path.endswith('/') else ''}",
        )
    return router


def balancer_router(
    status: Callable[[], BalancerStatus | None],
    leader_url: Callable[[], str | None],
    is_leader: Callable[[], bool],
) -> APIRouter:
    router = APIRouter(tags=["brokerlb extensions"])

    @router.get(
        "/admin/v2/brokers/balancer",
        openapi_extra=access(Access.SUPER_USER)
        | doc(returns=OBJECT, redirects=True),  # as the other broker-wide admin reads
        summary="brokerlb: the balancer's status (off, ready, in_progress, stalled)",
        description="State with its reason, the last shedding cycle, moves in flight, balancedness. "
        "Answered by the leader; other brokers redirect to it.",
    )
    async def balancer(request: Request) -> Response:
        url = leader_url()
        if not is_leader() and url:
            redirect = maybe_redirect(request, Redirect(url.rstrip("/"), False))
            if redirect is not None:
                return redirect
        current = status()
        if current is None:
            return json_response({"state": "stalled", "reason": "the broker is starting"})
        return json_response(current.status())

    return router
