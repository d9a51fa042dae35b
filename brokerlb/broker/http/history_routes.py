"""brokerlb extensions: the broker's load-history writer (``brokerlbLoadHistoryDir``).

| request | answer |
|---|---|
| ``GET /admin/v2/brokers/load-history`` | this broker's writer: directory, intervals, last publication, records held back, cost |
| ``POST /admin/v2/brokers/load-history/publish`` | publish the open history files now on every registered broker (``?local=true``: on this one); ``{"brokers": {id: status}, "failed": {id: reason}}`` |

A broker without ``brokerlbLoadHistoryDir`` answers 404 naming the key.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Response

from brokerlb.admin.client import AsyncAdminClient
from brokerlb.broker.http.access import Access, access
from brokerlb.broker.http.common import json_response
from brokerlb.broker.http.openapi import OBJECT, doc
from brokerlb.broker.observe.history_sink import BrokerHistory
from brokerlb.coordination import BrokerRegistry
from brokerlb.errors import BrokerLBError, NotFoundError

__all__ = ["load_history_router"]

_PATH = "/admin/v2/brokers/load-history"


def load_history_router(
    history: BrokerHistory | None, *, broker_id: str, registry: BrokerRegistry, admin: AsyncAdminClient
) -> APIRouter:
    router = APIRouter(tags=["brokerlb extensions"])

    def writer() -> BrokerHistory:
        if history is None:
            raise NotFoundError(
                f"Broker {broker_id} writes no load history: brokerlbLoadHistoryDir is not set"
            )
        return history

    @router.get(
        _PATH,
        openapi_extra=access(Access.SUPER_USER) | doc(returns=OBJECT, errors=[404]),
        summary="brokerlb: this broker's load-history writer",
        description="Directory, publish interval, last publication, records held back after a departure, "
        "and the writer's cost (per load report, per topic row).",
    )
    async def status() -> Response:
        return json_response(writer().status())

    @router.post(
        f"{_PATH}/publish",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=OBJECT, errors=[404]),
        summary="brokerlb: publish the open load-history files now",
        description="On every registered broker (each one's writer renames its in-progress files to their "
        "published names, so the pipeline's ingest reads them), or with local=true on this broker only. "
        "Records held back after a departure stay held until their hold has passed.",
    )
    async def publish(local: bool = False) -> Response:
        own = writer()
        own.publish()
        brokers: dict[str, Any] = {broker_id: own.status()}
        failed: dict[str, str] = {}
        if not local:
            others = [b for b in registry.available_brokers() if b != broker_id]

            async def one(broker: str) -> None:
                registered = registry.broker(broker)
                url = None if registered is None else registered.web_service_url
                if not url:
                    failed[broker] = "its web service URL is not registered"
                    return
                try:
                    answer = await admin.at(str(url).rstrip("/")).publish_load_history(local=True)
                    brokers[broker] = answer["brokers"][broker]
                except (BrokerLBError, KeyError, TypeError) as exc:
                    failed[broker] = str(exc)

            await asyncio.gather(*(one(b) for b in others))
        return json_response({"brokers": dict(sorted(brokers.items())), "failed": failed})

    return router
