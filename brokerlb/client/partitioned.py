"""Partitioned topics in the data-path client: one producer or consumer per partition, as Pulsar's clients do.

:meth:`Client.create_producer <brokerlb.client.Client.create_producer>` and
:meth:`Client.subscribe <brokerlb.client.Client.subscribe>` read the topic's partition count
(``GET /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions``); for a partitioned topic they return
a :class:`PartitionedProducer` / :class:`PartitionedConsumer` over one
:class:`~brokerlb.client.Producer` / :class:`~brokerlb.client.Consumer` per partition, each following
its own partition's owner.

* Routing is Pulsar's default ``RoundRobinPartition`` (:mod:`brokerlb.kafka.pulsar_routing`): a
  keyed message goes to ``signSafeMod(JavaStringHash(key), n)``, the others round robin from a
  random start partition (batching is off in this client).
* The consumer merges what the partitions deliver into one queue; an ack or negative ack goes to
  the partition the message came from.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Sequence

from brokerlb.client.consumer import Consumer, Message
from brokerlb.client.producer import Producer, SendReceipt
from brokerlb.errors import ClientClosedError
from brokerlb.kafka.pulsar_routing import HashingScheme, MessageRouter, RoundRobinPartitionMessageRouter
from brokerlb.naming import TopicName

__all__ = ["PartitionedProducer", "PartitionedConsumer", "partition_names"]


def partition_names(topic: TopicName | str, partitions: int) -> list[str]:
    base = TopicName.parse(topic)
    return [f"{base}-partition-{i}" for i in range(partitions)]


def default_router(rng: random.Random | None = None) -> MessageRouter:
    """Pulsar's default router with batching off: keys hashed, the rest round robin."""
    start = (rng or random.Random()).randrange(1 << 31)
    return RoundRobinPartitionMessageRouter(
        HashingScheme.JAVA_STRING_HASH, start_partition=start, batching_enabled=False, partition_switch_ms=10
    )


class PartitionedProducer:
    """Sends each message to the partition the router chooses (module docstring)."""

    def __init__(
        self, topic: TopicName | str, producers: Sequence[Producer], router: MessageRouter | None = None
    ) -> None:
        self.topic = TopicName.parse(topic)
        self.producers = list(producers)
        self.router = router or default_router()

    @property
    def closed(self) -> bool:
        return all(p.closed for p in self.producers)

    @property
    def pending_count(self) -> int:
        return sum(p.pending_count for p in self.producers)

    def partition_of(self, key: str | None) -> int:
        return self.router.choose_partition(key, len(self.producers))

    async def send_async(
        self, payload: bytes, *, key: str | None = None, properties: dict[str, str] | None = None
    ) -> SendReceipt:
        return await self.producers[self.partition_of(key)].send_async(
            payload, key=key, properties=properties
        )

    async def send(
        self, payload: bytes, *, key: str | None = None, properties: dict[str, str] | None = None
    ) -> str:
        receipt = await self.send_async(payload, key=key, properties=properties)
        return await receipt.future

    async def flush(self, timeout: float | None = None) -> None:
        await asyncio.gather(*(p.flush(timeout) for p in self.producers))

    async def close(self) -> None:
        await asyncio.gather(*(p.close() for p in self.producers), return_exceptions=True)


class PartitionedConsumer:
    """Receives from every partition of a topic through one queue (module docstring)."""

    def __init__(self, topic: TopicName | str, consumers: Sequence[Consumer]) -> None:
        self.topic = TopicName.parse(topic)
        self.consumers = list(consumers)
        self.subscription = self.consumers[0].subscription if self.consumers else ""
        self._by_topic = {str(c.topic): c for c in self.consumers}
        self._queue: asyncio.Queue[Message | BaseException] = asyncio.Queue()
        self._pumps = [asyncio.ensure_future(self._pump(c)) for c in self.consumers]
        self.closed = False

    async def _pump(self, consumer: Consumer) -> None:
        while True:
            try:
                message = await consumer.receive()
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # the partition's consumer ended: tell receive()
                self._queue.put_nowait(exc)
                return
            self._queue.put_nowait(message)

    async def receive(self, timeout: float | None = None) -> Message:
        if self.closed:
            raise ClientClosedError(f"Consumer {self.subscription} of {self.topic} is closed")
        item = await asyncio.wait_for(self._queue.get(), timeout)
        if isinstance(item, BaseException):
            raise item
        return item

    def _consumer_of(self, message: Message) -> Consumer | None:
        return self._by_topic.get(message.topic)

    async def acknowledge(self, message: Message) -> bool:
        consumer = self._consumer_of(message)
        return consumer is not None and await consumer.acknowledge(message)

    async def negative_acknowledge(self, message: Message) -> bool:
        consumer = self._consumer_of(message)
        return consumer is not None and await consumer.negative_acknowledge(message)

    async def close(self) -> None:
        self.closed = True
        for pump in self._pumps:
            pump.cancel()
        for pump in self._pumps:
            with contextlib.suppress(asyncio.CancelledError):
                await pump
        await asyncio.gather(*(c.close() for c in self.consumers), return_exceptions=True)
