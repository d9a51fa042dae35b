"""The live web dashboard: ``/dashboard`` on every broker, showing the cluster through the leader's view.

| request | answer |
|---|---|
| ``GET /dashboard`` (and ``/dashboard/``) | the page (plain HTML, CSS and JavaScript shipped in the package; no CDN) |
| ``GET /dashboard/static/{file}`` | its script, style sheet and icon |
| ``GET /favicon.ico`` | the icon (SVG), for any page of the broker a browser opens |
| ``GET /dashboard/api/state`` | the state document (:mod:`brokerlb.broker.observe.dashboard_state`), from the leader |
| ``GET /dashboard/api/bundle?name=t/ns/0x.._0x..`` | what the leader saw happen to one bundle |

A broker that does not lead fetches the JSON from the leader and returns it, so the page talks to
the one broker it was loaded from; with no leader reachable it answers its own view.

Access: the page and its files are public (they hold no data); the JSON is for super-users, as the
other broker-wide admin reads (brokers, load reports, the balancer's status). With authentication on,
open ``/dashboard#token=<JWT>``: the page keeps the token for the tab and sends it as
``Authorization: Bearer``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib import resources
from typing import Any

from fastapi import APIRouter, Response

from brokerlb.admin.client import AsyncAdminClient
from brokerlb.broker.http.access import Access, access
from brokerlb.broker.http.common import json_response
from brokerlb.broker.observe.dashboard import Dashboard
from brokerlb.errors import BrokerLBError, NotFoundError, ServiceUnavailableError

__all__ = ["dashboard_router"]

logger = logging.getLogger(__name__)

_STATIC = {"dashboard.js": "text/javascript", "dashboard.css": "text/css", "favicon.svg": "image/svg+xml"}


def _asset(name: str) -> bytes:
    return resources.files("brokerlb.broker.observe").joinpath("dashboard_static", name).read_bytes()


def dashboard_router(
    dashboard: Callable[[], Dashboard | None],
    leader_url: Callable[[], str | None],
    is_leader: Callable[[], bool],
    admin: AsyncAdminClient,
) -> APIRouter:
    router = APIRouter(tags=["dashboard"], include_in_schema=False)
    page = _asset("index.html")
    assets = {name: (_asset(name), media) for name, media in _STATIC.items()}

    def local() -> Dashboard:
        current = dashboard()
        if current is None:
            raise ServiceUnavailableError("The broker is starting")
        return current

    async def from_leader(ask: Callable[[AsyncAdminClient], Any], answer: Callable[[], Any]) -> Response:
        url = leader_url()
        if not is_leader() and url:
            try:
                return json_response(await ask(admin.at(url.rstrip("/"))))
            except BrokerLBError as exc:
                logger.debug("Dashboard: the leader at %s did not answer (%s); answering here", url, exc)
        return json_response(answer())

    public, admin_only = access(Access.PUBLIC), access(Access.SUPER_USER)

    @router.get("/dashboard", openapi_extra=public)
    @router.get("/dashboard/", openapi_extra=public)
    async def index() -> Response:
        return Response(page, media_type="text/html; charset=utf-8")

    @router.get("/favicon.ico", openapi_extra=public)
    async def favicon() -> Response:
        """The icon a browser asks every page of the broker for (it was a 404 in every access log)."""
        icon, media = assets["favicon.svg"]
        return Response(icon, media_type=media, headers={"cache-control": "max-age=86400"})

    @router.get("/dashboard/static/{name}", openapi_extra=public)
    async def static(name: str) -> Response:
        found = assets.get(name)
        if found is None:
            raise NotFoundError(f"No dashboard file {name}")
        return Response(found[0], media_type=found[1], headers={"cache-control": "no-cache"})

    @router.get("/dashboard/api/state", openapi_extra=admin_only)
    async def state() -> Response:
        return await from_leader(lambda leader: leader.get_dashboard_state(), lambda: local().state())

    @router.get("/dashboard/api/bundle", openapi_extra=admin_only)
    async def bundle(name: str) -> Response:
        return await from_leader(
            lambda leader: leader.get_dashboard_bundle(name), lambda: local().bundle_story(name)
        )

    return router
