"""The data-path client: producers and consumers that find their topic's owner and follow it.

>>> async def example() -> None:                                  # doctest: +SKIP
...     async with Client("http://127.0.0.1:8080") as client:
...         producer = await client.create_producer("persistent://public/default/orders")
...         message_id = await producer.send(b"hello", key="customer-1")
...         consumer = await client.subscribe("persistent://public/default/orders", "audit",
...                                           subscription_type="Shared")
...         message = await consumer.receive()
...         await consumer.acknowledge(message)

Settings with Pulsar's client names: ``operation_timeout`` (``operationTimeoutMs``,
30 s: how long creating a producer or consumer may take), ``initial_backoff`` /
``max_backoff`` (``initialBackoffIntervalNanos`` 100 ms / ``maxBackoffIntervalNanos``;
Pulsar's maximum is 60 s, 30 s here), ``connect_timeout`` (``connectionTimeoutMs``, 10 s),
``token`` (``AuthenticationToken``), ``tls_trust_certs_file_path`` (``tlsTrustCertsFilePath``,
for an ``https://`` service URL).
One timer task expires the producers' sends past their ``send_timeout``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from brokerlb.client.consumer import Consumer
from brokerlb.client.lookup import HttpLookup, LookupResult
from brokerlb.client.partitioned import PartitionedConsumer, PartitionedProducer, partition_names
from brokerlb.client.producer import Producer
from brokerlb.errors import ClientClosedError
from brokerlb.naming import TopicName
from brokerlb.security.tls import client_context

__all__ = ["Client"]

#: How often the send timeouts are checked (seconds).
TIMEOUT_TICK = 0.1


class Client:
    """Entry point of :mod:`brokerlb.client` (module docstring)."""

    def __init__(
        self,
        service_url: str,
        *,
        operation_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        initial_backoff: float = 0.1,
        max_backoff: float = 30.0,
        token: str | None = None,
        tls_trust_certs_file_path: str | None = None,
    ) -> None:
        self.service_url = service_url.rstrip("/")
        #: TLS (Pulsar's rule: the service URL's scheme): lookups and data connections use the
        #: brokers' TLS URLs (``httpUrlTls``), trusting ``tls_trust_certs_file_path`` (PEM CAs;
        #: the system's CAs without one).
        self.use_tls = self.service_url.startswith("https://")
        self.ssl = client_context(tls_trust_certs_file_path) if self.use_tls else None
        #: Token authentication: ``Authorization: Bearer`` on lookups, the ``token`` query parameter on
        #: WebSocket connections (as Pulsar's WebSocket service reads it).
        self.token = token
        self.operation_timeout = operation_timeout
        self.connect_timeout = connect_timeout
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._lookup = HttpLookup(self.service_url, timeout=operation_timeout, token=token, tls=self.ssl)
        self._links: set[Producer | Consumer] = set()
        self._timed: set[Producer] = set()
        self._timer: asyncio.Task[None] | None = None
        self.closed = False

    async def lookup(self, topic: TopicName | str) -> LookupResult:
        return await self._lookup.lookup(topic)

    @property
    def lookups(self) -> int:
        return self._lookup.lookups

    async def create_producer(
        self, topic: TopicName | str, *, partitioned: bool = True, **options: Any
    ) -> Producer | PartitionedProducer:
        """A connected producer (options: ``max_pending_messages``, ``block_if_queue_full``, ``send_timeout``).

        For a partitioned topic (unless ``partitioned=False``): a :class:`PartitionedProducer` over one
        producer per partition (:mod:`brokerlb.client.partitioned`).
        """
        self._check_open()
        partitions = await self._lookup.partitions(topic) if partitioned else 0
        if partitions:
            producers = [
                await self.create_producer(name, partitioned=False, **options)
                for name in partition_names(topic, partitions)
            ]
            return PartitionedProducer(topic, [p for p in producers if isinstance(p, Producer)])
        producer = Producer(self, topic, **options)
        await self._start(producer)
        return producer

    async def subscribe(
        self, topic: TopicName | str, subscription: str, *, partitioned: bool = True, **options: Any
    ) -> Consumer | PartitionedConsumer:
        """A connected consumer (options: ``subscription_type``, ``receiver_queue_size``, ``consumer_name``,
        ``priority_level``); a :class:`PartitionedConsumer` for a partitioned topic (unless
        ``partitioned=False``)."""
        self._check_open()
        partitions = await self._lookup.partitions(topic) if partitioned else 0
        if partitions:
            consumers = [
                await self.subscribe(name, subscription, partitioned=False, **options)
                for name in partition_names(topic, partitions)
            ]
            return PartitionedConsumer(topic, [c for c in consumers if isinstance(c, Consumer)])
        consumer = Consumer(self, topic, subscription, **options)
        await self._start(consumer)
        return consumer

    async def _start(self, link: Producer | Consumer) -> None:
        self._links.add(link)
        try:
            await link.start()
        except BaseException:
            self._links.discard(link)
            await link.close()
            raise

    def _check_open(self) -> None:
        if self.closed:
            raise ClientClosedError("The client is closed")

    # ------------------------------------------------------------------ send timeouts
    def register_timeouts(self, producer: Producer) -> None:
        self._timed.add(producer)
        if self._timer is None or self._timer.done():
            self._timer = asyncio.create_task(self._expire_loop(), name="client send timeouts")

    def unregister_timeouts(self, producer: Producer) -> None:
        self._timed.discard(producer)

    def forget(self, link: object) -> None:
        """A producer or consumer was closed."""
        self._links.discard(link)  # type: ignore[arg-type]

    async def _expire_loop(self) -> None:
        while self._timed:
            await asyncio.sleep(TIMEOUT_TICK)
            now = time.monotonic()
            for producer in list(self._timed):
                producer.expire(now)

    # ------------------------------------------------------------------ closing
    async def close(self) -> None:
        """Close every producer (pending sends fail) and consumer, then the lookup connections."""
        if self.closed:
            return
        self.closed = True
        links = list(self._links)
        self._links.clear()
        await asyncio.gather(*(link.close() for link in links), return_exceptions=True)
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
        await self._lookup.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
