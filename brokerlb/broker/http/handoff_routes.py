"""brokerlb extensions for lossless planned moves (tag ``brokerlb extensions``).

* ``PUT /admin/v2/namespaces/{tenant}/{namespace}/{bundle}/topicState`` -- body: a bundle's
  topic states (:mod:`brokerlb.messaging.handoff` bytes, ``application/octet-stream``); the
  broker parks them until it serves those topics (204; 400 when the body does not parse or
  names another bundle; 404 when this broker has no data path);
* ``GET /admin/v2/namespaces/{tenant}/{namespace}/{bundle}/placement`` --
  ``{"broker": id, "handOver": bool}``: where the leader's placement puts the bundle now (307
  to the leader from other brokers, 503 when there is none). Nothing is owned by asking; the
  owner then sends the topics' state there and writes the bundle's record on to that broker
  (Releasing → Assigning), so a lookup during the hand-off waits for it and follows the state.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Protocol

from fastapi import APIRouter, Request, Response

from brokerlb.broker.handoff import HandOffTarget
from brokerlb.broker.http.access import Access, access
from brokerlb.broker.http.common import json_response, maybe_redirect, no_content, raw_body
from brokerlb.broker.redirect import Redirect
from brokerlb.errors import InvalidInputError, NoBrokerAvailableError, NotFoundError
from brokerlb.messaging.handoff import decode_bundle_state
from brokerlb.naming import NamespaceName
from brokerlb.ring import NamespaceBundle

if TYPE_CHECKING:
    from brokerlb.broker.data_path import DataPath
    from brokerlb.broker.namespace_service import NamespaceService
    from brokerlb.coordination import LeaderElection

__all__ = ["HandOffPlacement", "handoff_router", "place_for_hand_off"]

_P = "/admin/v2/namespaces"


class HandOffPlacement(Protocol):
    """The leader's placement as a hand-off uses it (:class:`~brokerlb.broker.load_manager.LoadManager`)."""

    async def place(self, bundle: NamespaceBundle) -> str: ...


async def place_for_hand_off(placement: HandOffPlacement, bundle: NamespaceBundle) -> HandOffTarget:
    """The placement's choice for ``bundle`` (its owner hands the topics' state there, then the
    bundle's record goes on to it)."""
    return HandOffTarget(str(await placement.place(bundle)))


def handoff_router(
    *,
    data_path: DataPath | None,
    namespaces: NamespaceService,
    election: LeaderElection,
    broker_id: str,
    leader_placement: HandOffPlacement,
) -> APIRouter:
    """The two endpoints above: ``data_path`` parks received topic state (``None``: this broker
    serves no topics); ``leader_placement`` answers on the leader (``election``), others redirect to it."""
    router = APIRouter(tags=["namespaces"])
    ext: list[str | Enum] = ["brokerlb extensions"]

    @router.put(
        f"{_P}/{{tenant}}/{{namespace}}/{{bundle}}/topicState",
        status_code=204,
        tags=ext,
        summary="brokerlb: receive a bundle's topic state before taking the bundle (planned moves)",
        openapi_extra=access(Access.SUPER_USER),  # brokers call each other with their client token
    )
    async def put_topic_state(tenant: str, namespace: str, bundle: str, request: Request) -> Response:
        name = f"{NamespaceName.parse(f'{tenant}/{namespace}')}/{bundle}"
        if data_path is None:
            raise NotFoundError("This broker serves no topics (no binary protocol, no WebSocket service)")
        sent_for, states = decode_bundle_state(await raw_body(request))
        if sent_for != name:
            raise InvalidInputError(f"The topic state is for bundle {sent_for}, not {name}")
        data_path.import_states(states)
        return no_content()

    @router.get(
        f"{_P}/{{tenant}}/{{namespace}}/{{bundle}}/placement",
        tags=ext,
        summary="brokerlb: the broker the leader's placement chooses for the bundle now",
        openapi_extra=access(Access.SUPER_USER),
    )
    async def placement(tenant: str, namespace: str, bundle: str, request: Request) -> Response:
        ns = str(NamespaceName.parse(f"{tenant}/{namespace}"))
        target = await namespaces.bundle(ns, bundle)
        if not election.is_leader:
            leader = election.leader
            if leader is None or leader.broker_id == broker_id:
                raise NoBrokerAvailableError("No leader is elected; try again")
            redirect = maybe_redirect(request, Redirect(leader.service_url.rstrip("/"), False))
            assert redirect is not None
            return redirect
        chosen = await place_for_hand_off(leader_placement, target)
        return json_response({"broker": chosen.broker, "handOver": True})

    return router
