"""Helpers of the data-path tests: owners, raw WebSockets with bounded waits."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import websockets

from brokerlb.admin import AsyncAdminClient
from brokerlb.client import ws_url
from brokerlb.naming import TopicName


async def owner_url(cluster: Any, topic: str) -> str:
    """Look the topic up (assigning its bundle) and return the owner's web URL."""
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        data = await admin.lookup_topic(topic)
    return str(data["httpUrl"])


def service_at(cluster: Any, url: str) -> Any:
    return next(s for s in cluster.services if s.url == url)


def bundle_of(service: Any, topic: str) -> str:
    return str(service.bundles.cached(TopicName.parse(topic).namespace).find_bundle(TopicName.parse(topic)))


async def connect(url: str, path: str) -> Any:
    return await websockets.connect(ws_url(url) + path, compression=None, open_timeout=30)


async def recv_json(ws: Any, timeout: float = 30.0) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def closed_with(ws: Any, timeout: float = 30.0) -> tuple[int, dict[str, Any]]:
    """Wait for the broker's close frame: ``(code, reason JSON)``."""
    try:
        while True:
            await asyncio.wait_for(ws.recv(), timeout)
    except websockets.ConnectionClosed as exc:
        assert exc.rcvd is not None, "the connection broke without a close frame"
        return exc.rcvd.code, json.loads(exc.rcvd.reason)
