"""An in-memory topic with Pulsar's non-persistent delivery: at most once, to connected consumers.

A :class:`Topic` holds producers (a count), subscriptions and traffic counters. It does
no I/O: a consumer is a :class:`~brokerlb.dispatch.DispatchConsumer` (permits, priority)
plus a *sink* the shell gives it, whose ``deliver(message_id, frame)`` must not block
(the WebSocket shell queues the frame for the connection's writer).

:meth:`Topic.publish` follows Pulsar's ``NonPersistentTopic.publishMessage``: the message
gets an id and is offered to every subscription at once; each subscription's dispatcher
(:mod:`brokerlb.dispatch`) picks the consumer -- Exclusive / Failover: the active
consumer; Shared: priority round robin; Key_Shared: the consumer owning the key's hash.
When the chosen consumer has no permit left, or the subscription has no consumer, the
message is **dropped** for that subscription and counted (Pulsar's ``msgDropRate``); it
is never held back or redelivered. A consumer's permits start at its
``receiverQueueSize`` and come back one per ack or negative ack, so a slow consumer
loses messages instead of making the broker buffer them.

A *fenced* topic (a transfer in progress, PIP-307) ignores publishes: :meth:`publish`
returns ``None``, the producer gets no ack and re-sends after it reconnects to the new
owner; consumers stay connected until the close.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from brokerlb.dispatch import DispatchConsumer, Dispatcher, KeySharedMode, Message, create_dispatcher
from brokerlb.errors import ConsumerBusyError, InvalidInputError
from brokerlb.messaging.protocol import (
    MessageIds,
    ProducerMessage,
    consumer_frame,
    format_publish_time,
)
from brokerlb.messaging.stats import TopicCounters, TopicLoad
from brokerlb.naming import TopicName

__all__ = ["ConsumerSink", "Subscription", "Topic", "Delivery"]


class ConsumerSink(Protocol):
    """Where a consumer's messages go; ``deliver`` must return at once."""

    def deliver(self, message_id: str, frame: str, size: int) -> None: ...


@dataclass(eq=False, slots=True)
class _Attached:
    consumer: DispatchConsumer
    sink: ConsumerSink
    #: ids delivered and not yet acknowledged (an ack of anything else is ignored)
    unacked: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class Delivery:
    """What one publish did: the id, and per subscription who got it (``None`` = dropped)."""

    message_id: str
    receivers: dict[str, int | None]


class Subscription:
    """One subscription: its type's dispatcher and the attached consumers."""

    def __init__(self, name: str, subscription_type: str, partition_index: int = -1) -> None:
        self.name = name
        self.type = subscription_type
        self.dispatcher: Dispatcher = create_dispatcher(
            subscription_type, partition_index=partition_index, key_shared_mode=KeySharedMode.AUTO_SPLIT
        )
        self._attached: dict[int, _Attached] = {}
        self.delivered = 0
        self.dropped = 0

    @property
    def consumer_count(self) -> int:
        return len(self._attached)

    def attach(self, consumer: DispatchConsumer, sink: ConsumerSink) -> None:
        self.dispatcher.add_consumer(consumer)  # may raise ConsumerBusyError / ConsumerAssignError
        self._attached[consumer.consumer_id] = _Attached(consumer, sink)

    def detach(self, consumer: DispatchConsumer) -> None:
        if self._attached.pop(consumer.consumer_id, None) is not None:
            self.dispatcher.remove_consumer(consumer)

    def offer(self, message: Message, message_id: str, frame: str, size: int) -> int | None:
        """Deliver to the dispatcher's choice; the receiving consumer's id, or ``None`` if dropped."""
        consumer = self.dispatcher.select(message)
        if consumer is None:
            self.dropped += 1
            return None
        attached = self._attached[consumer.consumer_id]
        consumer.consume_permits(1)
        attached.unacked.add(message_id)
        attached.sink.deliver(message_id, frame, size)
        self.delivered += 1
        return consumer.consumer_id

    def unacked_of(self, consumer: DispatchConsumer) -> int:
        """Messages delivered to ``consumer`` and not acknowledged yet (its ``unackedMessages``)."""
        attached = self._attached.get(consumer.consumer_id)
        return 0 if attached is None else len(attached.unacked)

    def acknowledge(self, consumer: DispatchConsumer, message_id: str) -> bool:
        """An ack (or negative ack) from ``consumer``: its permit comes back. False if not outstanding."""
        attached = self._attached.get(consumer.consumer_id)
        if attached is None or message_id not in attached.unacked:
            return False
        attached.unacked.discard(message_id)
        consumer.add_permits(1)
        return True


class Topic:
    """One topic served in memory (module docstring)."""

    def __init__(
        self,
        name: TopicName | str,
        *,
        ledger_id: int,
        window: int,
        now: Callable[[], float],
        now_ms: Callable[[], int],
    ) -> None:
        self.name = TopicName.parse(name)
        self.ledger_id = ledger_id
        self._now = now
        self._now_ms = now_ms
        self.counters = TopicCounters(window, now())
        self.subscriptions: dict[str, Subscription] = {}
        self.producer_count = 0
        self.fenced = False
        self._ids = MessageIds(ledger_id, self.name.partition_index)

    # ------------------------------------------------------------------ connections
    def add_producer(self) -> None:
        self.producer_count += 1

    def remove_producer(self) -> None:
        self.producer_count = max(0, self.producer_count - 1)

    def subscribe(
        self, subscription: str, subscription_type: str, consumer: DispatchConsumer, sink: ConsumerSink
    ) -> Subscription:
        """Attach a consumer; the subscription is created on first use with the consumer's type."""
        if not subscription:
            raise InvalidInputError("Empty subscription name")
        sub = self.subscriptions.get(subscription)
        if sub is None:  # a subscription lives while it has consumers, so an existing one has some
            sub = Subscription(subscription, subscription_type, self.name.partition_index)
        elif sub.type != subscription_type:
            raise ConsumerBusyError(
                f"Subscription {subscription} is of type {sub.type}, not {subscription_type}"
            )
        sub.attach(consumer, sink)
        self.subscriptions[subscription] = sub
        return sub

    def unsubscribe(self, subscription: str, consumer: DispatchConsumer) -> None:
        """Detach a consumer; a non-persistent subscription goes away with its last consumer."""
        sub = self.subscriptions.get(subscription)
        if sub is None:
            return
        sub.detach(consumer)
        if not sub.consumer_count:
            del self.subscriptions[subscription]

    @property
    def consumer_count(self) -> int:
        return sum(s.consumer_count for s in self.subscriptions.values())

    @property
    def idle(self) -> bool:
        return self.producer_count == 0 and not self.subscriptions

    # ------------------------------------------------------------------ traffic
    def publish(self, message: ProducerMessage) -> Delivery | None:
        """Give the message an id and offer it to every subscription; ``None`` while fenced."""
        if self.fenced:
            return None
        now = self._now()
        message_id = self._ids.next()
        self.counters.msg_in.add(now, 1, message.size)
        receivers: dict[str, int | None] = {}
        if self.subscriptions:
            frame = consumer_frame(message_id, message, format_publish_time(self._now_ms()))
            routed = Message(key=message.key, message_id=message_id)
            for sub in self.subscriptions.values():
                got = sub.offer(routed, message_id, frame, message.size)
                receivers[sub.name] = got
                if got is None:
                    self.counters.dropped.add(now, 1, message.size)
                else:
                    self.counters.msg_out.add(now, 1, message.size)
        return Delivery(message_id, receivers)

    def acknowledge(self, subscription: str, consumer: DispatchConsumer, message_id: str) -> bool:
        sub = self.subscriptions.get(subscription)
        return sub is not None and sub.acknowledge(consumer, message_id)

    def load(self) -> TopicLoad:
        return self.counters.load(self._now(), self.producer_count, self.consumer_count)
