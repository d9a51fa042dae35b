"""Synthetic clients: simulated traffic on topics of an in-process cluster (tests and the demo).

Until the data path exists (WebSocket produce/consume), this is how traffic reaches
brokers: a :class:`SyntheticClients` looks each topic up over HTTP, as a Pulsar client
does, and *attaches* it to the broker that answered, with the message rates it should
carry (:class:`~brokerlb.broker.data.topics.TopicStats`). That broker then reports the
traffic in its load report like real topic stats. When the broker closes the topic
(unload, transfer, split with unload, lost ownership) the client looks the topic up
again after a short back-off and re-attaches it where the lookup now points -- a
client reconnecting.

Only brokers running in this process can be attached to (``services``); the numbers
are injected, not measured, and everything that shows them should say so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from brokerlb.broker.data.topics import TopicStats
from brokerlb.errors import BrokerLBError
from brokerlb.naming import TopicName

if TYPE_CHECKING:
    from brokerlb.broker.service import BrokerService

__all__ = ["SyntheticClients"]

logger = logging.getLogger(__name__)


@dataclass
class _Topic:
    name: TopicName
    stats: TopicStats
    broker: str | None = None
    reconnects: int = 0
    task: asyncio.Task[None] | None = field(default=None, repr=False)


class SyntheticClients:
    """Topics with injected traffic, kept attached to their current owners."""

    def __init__(
        self,
        services: Sequence[BrokerService],
        *,
        lookup_url: str | None = None,
        reconnect_delay: float = 0.1,
    ) -> None:
        import httpx

        self._services = {s.url: s for s in services}
        self._lookup_url = lookup_url or next(iter(self._services))
        self._client = httpx.AsyncClient(base_url=self._lookup_url, follow_redirects=True, timeout=30)
        self._delay = reconnect_delay
        self._topics: dict[str, _Topic] = {}
        self._closed = False
        #: total re-attachments after a close (a measure of client disruption)
        self.reconnects = 0

    async def add(self, topic: TopicName | str, stats: TopicStats) -> str:
        """Start traffic on ``topic``; returns the broker id it is attached to."""
        name = TopicName.parse(topic)
        entry = self._topics.setdefault(str(name), _Topic(name, stats))
        entry.stats = stats
        await self._attach(entry)
        return entry.broker or ""

    async def add_many(self, topics: dict[str, TopicStats], concurrency: int = 16) -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one(topic: str, stats: TopicStats) -> None:
            async with gate:
                await self.add(topic, stats)

        await asyncio.gather(*(one(t, s) for t, s in topics.items()))

    def set_stats(self, topic: TopicName | str, stats: TopicStats) -> None:
        """Change a topic's traffic (applied on its current broker at once)."""
        entry = self._topics[str(TopicName.parse(topic))]
        entry.stats = stats
        service = self._service_of(entry.broker)
        if service is not None and str(entry.name) in service.topics:
            service.topics.update_stats(entry.name, stats)

    def placement(self) -> dict[str, str | None]:
        """Topic → broker id it is attached to now (``None`` while reconnecting)."""
        return {t: e.broker for t, e in self._topics.items()}

    async def close(self) -> None:
        self._closed = True
        for entry in self._topics.values():
            if entry.task is not None:
                entry.task.cancel()
            service = self._service_of(entry.broker)
            if service is not None and service.started:
                service.topics.detach(entry.name)
        await self._client.aclose()

    # ------------------------------------------------------------------ internals
    def _service_of(self, broker: str | None) -> BrokerService | None:
        if broker is None:
            return None
        return next((s for s in self._services.values() if s.started and s.broker_id == broker), None)

    async def _attach(self, entry: _Topic) -> None:
        response = await self._client.get(f"/lookup/v2/topic/{entry.name.lookup_name}")
        if response.status_code != 200:
            raise BrokerLBError(f"lookup of {entry.name} failed: {response.status_code} {response.text}")
        url = response.json()["httpUrl"].rstrip("/")
        service = self._services.get(url)
        if service is None or not service.started:
            raise BrokerLBError(f"{entry.name} is served by {url}, which is not a broker of this process")
        service.topics.attach(entry.name, close=lambda _cause: self._on_close(entry), stats=entry.stats)
        entry.broker = service.broker_id

    async def _on_close(self, entry: _Topic) -> None:
        entry.broker = None
        if self._closed:
            return
        entry.task = asyncio.create_task(self._reconnect(entry), name=f"reconnect {entry.name}")

    async def _reconnect(self, entry: _Topic) -> None:
        delay = self._delay
        for _attempt in range(50):
            await asyncio.sleep(delay)
            if self._closed:
                return
            try:
                await self._attach(entry)
                entry.reconnects += 1
                self.reconnects += 1
                return
            except Exception as exc:  # the lookup may fail while the bundle moves: retry
                logger.debug("Reconnect of %s failed: %s", entry.name, exc)
                delay = min(delay * 2, 2.0)
        logger.warning("Gave up reconnecting %s", entry.name)
