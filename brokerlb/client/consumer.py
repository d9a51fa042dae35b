"""A consumer that follows its topic when the bundle moves.

It subscribes with Pulsar's WebSocket consumer URL (subscription type, receiver queue
size, consumer name, priority) and re-subscribes the same way after every move
(:class:`~brokerlb.client.link.TopicLink`: straight to the new owner after a transfer,
through a lookup otherwise). Received messages wait in a local queue for
:meth:`Consumer.receive`; :meth:`Consumer.acknowledge` sends the ack on the connection
the message came from, which gives the broker's permit back. An ack for a message of
a connection that has ended is dropped: the topic is non-persistent, the new owner
never saw that message (at most once).
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from brokerlb.client.link import TopicLink
from brokerlb.errors import ClientClosedError, InvalidInputError
from brokerlb.messaging import MAX_RECEIVER_QUEUE_SIZE, SUBSCRIPTION_TYPES, consumer_path
from brokerlb.naming import TopicName

if TYPE_CHECKING:
    from brokerlb.client.client import Client

__all__ = ["Consumer", "Message"]


@dataclass(frozen=True, slots=True)
class Message:
    """A received message (Pulsar's WebSocket ``ConsumerMessage``)."""

    message_id: str
    payload_b64: str
    properties: dict[str, str]
    publish_time: str
    key: str | None = None
    topic: str = ""
    _connection: Any = field(default=None, repr=False, compare=False)

    @property
    def data(self) -> bytes:
        return base64.b64decode(self.payload_b64)


class Consumer(TopicLink):
    """Receive from one topic's subscription (module docstring). Create with :meth:`Client.subscribe`."""

    def __init__(
        self,
        client: Client,
        topic: TopicName | str,
        subscription: str,
        *,
        subscription_type: str = "Exclusive",
        receiver_queue_size: int = MAX_RECEIVER_QUEUE_SIZE,
        consumer_name: str | None = None,
        priority_level: int = 0,
    ) -> None:
        if subscription_type not in SUBSCRIPTION_TYPES:
            raise InvalidInputError(
                f"Unknown subscription type {subscription_type!r}; "
                f"expected one of {', '.join(SUBSCRIPTION_TYPES)}"
            )
        if not subscription:
            raise InvalidInputError("Empty subscription name")
        super().__init__(
            client,
            topic,
            consumer_path(
                topic,
                subscription,
                subscriptionType=subscription_type,
                receiverQueueSize=receiver_queue_size,
                consumerName=consumer_name,
                priorityLevel=priority_level or None,
            ),
        )
        self.subscription = subscription
        self.subscription_type = subscription_type
        self._queue: asyncio.Queue[Message | None] = asyncio.Queue()
        self.received = 0
        self.acked = 0

    def on_frame(self, text: str | bytes) -> None:
        try:
            body = json.loads(text)
            message = Message(
                body["messageId"],
                body["payload"],
                body.get("properties") or {},
                body.get("publishTime", ""),
                body.get("key"),
                str(self.topic),
                self.ws,
            )
        except (ValueError, KeyError, TypeError):
            return
        self.received += 1
        self._queue.put_nowait(message)

    def on_failed(self, error: BaseException) -> None:
        self._queue.put_nowait(None)  # wakes receive() so it can raise

    async def receive(self, timeout: float | None = None) -> Message:
        """The next message (waits; :class:`TimeoutError` after ``timeout`` s)."""
        if self._queue.empty() and (self.closed or self.failure is not None):
            raise self._ended()
        message = await asyncio.wait_for(self._queue.get(), timeout)
        if message is None:
            raise self._ended()
        return message

    def _ended(self) -> Exception:
        if isinstance(self.failure, Exception):
            return self.failure
        return ClientClosedError(f"Consumer {self.subscription} of {self.topic} is closed")

    async def acknowledge(self, message: Message) -> bool:
        """Ack on the message's own connection; ``False`` when that connection has ended."""
        return await self._command(message, None)

    async def negative_acknowledge(self, message: Message) -> bool:
        """Pulsar's ``negativeAcknowledge``: the permit comes back (a non-persistent topic redelivers nothing)."""
        return await self._command(message, "negativeAcknowledge")

    async def _command(self, message: Message, kind: str | None) -> bool:
        ws = message._connection
        if ws is None or ws is not self.ws:
            return False
        body = (
            {"messageId": message.message_id}
            if kind is None
            else {"type": kind, "messageId": message.message_id}
        )
        try:
            await ws.send(json.dumps(body, separators=(",", ":")))
        except Exception:
            return False
        if kind is None:
            self.acked += 1
        return True
