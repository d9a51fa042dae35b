"""What every subscription dispatcher shares: consumers, messages, the dispatcher interface.

These are pure, deterministic classes: the data path (the broker's WebSocket
shell) owns the sockets and the cursor, and asks a dispatcher *which consumer*
gets each message. The interface it plugs into:

* ``add_consumer(consumer)`` / ``remove_consumer(consumer)`` -- a consumer
  subscribes / disconnects (may raise :class:`~brokerlb.errors.ConsumerBusyError`
  or :class:`~brokerlb.errors.ConsumerAssignError`);
* ``select(message)`` -- the consumer that must receive this message *now*, or
  ``None`` when it has to wait (no consumer, or the one it belongs to has no
  permits); never changes permits;
* ``dispatch(messages)`` -- route a batch read from the cursor: decrements the
  receivers' permits and returns what goes where and what is held back;
* permits: the data path calls ``consumer.add_permits(n)`` on every ``Flow``
  command and sets ``consumer.blocked`` when the consumer reaches its unacked
  limit, as Pulsar's ``Consumer`` does.

Consumers are compared by identity (two connections may share a consumer name).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from brokerlb.errors import ConsumerBusyError, InvalidInputError
from brokerlb.kafka.hashing import INT_MAX, murmur3_32

__all__ = [
    "NONE_KEY",
    "DEFAULT_RANGE_SIZE",
    "HashRange",
    "DispatchConsumer",
    "Message",
    "DispatchResult",
    "Dispatcher",
    "sticky_key_hash",
    "connect",
    "disconnect",
]

#: ``Commands.NONE_KEY``: the sticky key of a message with neither ordering key nor key.
NONE_KEY = b"NONE_KEY"
#: ``StickyKeyConsumerSelector.DEFAULT_RANGE_SIZE`` (``2 << 15``).
DEFAULT_RANGE_SIZE = 2 << 15

_ids = itertools.count(1)


@dataclass(frozen=True, order=True)
class HashRange:
    """An inclusive range of sticky-key hash slots ``[start, end]`` (``IntRange`` of ``KeySharedMeta``)."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end < DEFAULT_RANGE_SIZE:
            raise InvalidInputError(
                f"hash range [{self.start}, {self.end}] must satisfy 0 <= start <= end <= {DEFAULT_RANGE_SIZE - 1}"
            )

    def overlaps(self, other: HashRange) -> bool:
        return max(self.start, other.start) <= min(self.end, other.end)

    def __str__(self) -> str:
        return f"[{self.start}, {self.end}]"


@dataclass(eq=False)
class DispatchConsumer:
    """One connected consumer as a dispatcher sees it (Pulsar's broker-side ``Consumer``).

    ``priority_level``: 0 is the highest priority. ``permits``: messages it may
    still receive (``availablePermits``). ``writable``: its connection can take more
    (Pulsar's ``cnx.isWritable()``: a consumer whose connection's outbound buffer is above
    its high-water mark is skipped, apache/pulsar#6740). ``hash_ranges``: a STICKY
    Key_Shared consumer's fixed ranges. ``consumer_id`` is unique per connection.
    """

    consumer_name: str
    priority_level: int = 0
    permits: int = 0
    blocked: bool = False
    writable: bool = True
    hash_ranges: tuple[HashRange, ...] = ()
    consumer_id: int = field(default_factory=lambda: next(_ids))

    def __post_init__(self) -> None:
        if self.priority_level < 0:
            raise InvalidInputError(f"priorityLevel must be >= 0, got {self.priority_level}")
        if self.permits < 0:
            raise InvalidInputError(f"permits must be >= 0, got {self.permits}")
        ranges = sorted(self.hash_ranges)
        for a, b in zip(ranges, ranges[1:], strict=False):
            if a.overlaps(b):
                raise InvalidInputError(
                    f"consumer {self.consumer_name}: its own hash ranges {a} and {b} overlap"
                )
        self.hash_ranges = tuple(ranges)

    @property
    def available(self) -> bool:
        """``isConsumerAvailable``: not blocked on unacked messages, has permits, its connection writable."""
        return not self.blocked and self.permits > 0 and self.writable

    def add_permits(self, count: int) -> None:
        if count < 0:
            raise InvalidInputError(f"cannot add {count} permits")
        self.permits += count

    def consume_permits(self, count: int = 1) -> None:
        self.permits = max(0, self.permits - count)

    def __repr__(self) -> str:
        return (
            f"DispatchConsumer({self.consumer_name!r}#{self.consumer_id}, priority={self.priority_level}, "
            f"permits={self.permits})"
        )


@dataclass(frozen=True)
class Message:
    """A message as the dispatcher needs it: its keys (and an opaque id for the caller)."""

    key: str | bytes | None = None
    ordering_key: bytes | None = None
    message_id: object = None

    @property
    def sticky_key(self) -> bytes:
        """``peekStickyKey``: the ordering key, else the partition key, else ``NONE_KEY``."""
        if self.ordering_key:
            return self.ordering_key
        if self.key is not None:
            return self.key.encode("utf-8") if isinstance(self.key, str) else self.key
        return NONE_KEY


def sticky_key_hash(sticky_key: bytes) -> int:
    """``StickyKeyConsumerSelector.makeStickyKeyHash``: Murmur3_32 & ``Integer.MAX_VALUE``."""
    return murmur3_32(sticky_key) & INT_MAX


def connect(consumers: list[DispatchConsumer], consumer: DispatchConsumer, max_consumers: int = 0) -> None:
    """Append ``consumer`` (compared by identity); connecting it twice is an error.

    ``max_consumers`` > 0 is ``maxConsumersPerSubscription``: a consumer beyond it is refused.
    """
    if any(c is consumer for c in consumers):
        raise InvalidInputError(f"{consumer!r} is already connected")
    if 0 < max_consumers <= len(consumers):
        raise ConsumerBusyError("Subscription reached max consumers limit")
    consumers.append(consumer)


def disconnect(consumers: list[DispatchConsumer], consumer: DispatchConsumer) -> None:
    """Remove ``consumer`` (by identity); removing one that is not connected is an error."""
    for i, c in enumerate(consumers):
        if c is consumer:
            del consumers[i]
            return
    raise InvalidInputError(f"{consumer!r} is not connected")


@dataclass
class DispatchResult:
    """Messages per receiving consumer (in dispatch order) and the messages held back."""

    sent: list[tuple[DispatchConsumer, list[Message]]] = field(default_factory=list)
    held: list[Message] = field(default_factory=list)

    def add(self, consumer: DispatchConsumer, message: Message) -> None:
        if self.sent and self.sent[-1][0] is consumer:
            self.sent[-1][1].append(message)
        else:
            self.sent.append((consumer, [message]))


class Dispatcher(Protocol):
    """The interface the data path plugs into (see the module docstring)."""

    subscription_type: str

    @property
    def consumers(self) -> Sequence[DispatchConsumer]: ...

    def add_consumer(self, consumer: DispatchConsumer) -> bool | None: ...

    def remove_consumer(self, consumer: DispatchConsumer) -> bool | None: ...

    def select(self, message: Message) -> DispatchConsumer | None: ...

    def dispatch(self, messages: Sequence[Message]) -> DispatchResult: ...
