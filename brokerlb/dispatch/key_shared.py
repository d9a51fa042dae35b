"""Key_Shared subscription dispatch: every key goes to one consumer.

Pulsar's ``PersistentStickyKeyDispatcherMultipleConsumers`` picks its selector
from the consumers' ``KeySharedMode`` and ``broker.conf``:

* ``AUTO_SPLIT`` with ``subscriptionKeySharedUseConsistentHashing=true``
  (default) -> :class:`ConsistentHashingSelector` with
  ``subscriptionKeySharedConsistentHashingReplicaPoints`` (100) points per consumer;
* ``AUTO_SPLIT`` with it false -> :class:`HashRangeAutoSplitSelector`;
* ``STICKY`` -> :class:`HashRangeExclusiveSelector` (consumers bring fixed ranges).

A message's sticky key is its ordering key, else its key, else ``NONE_KEY``; its
hash is ``Murmur3_32(stickyKey) & Integer.MAX_VALUE``. A message whose consumer
has no permits is held back (Pulsar replays it later); it never goes to another
consumer. Not modelled here (data-path concerns): the "recently joined
consumers" / draining-hashes ordering guard that keeps a key's older messages
from overtaking on a new consumer.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from brokerlb.dispatch.base import (
    DispatchConsumer,
    DispatchResult,
    Message,
    connect,
    disconnect,
    sticky_key_hash,
)
from brokerlb.dispatch.selectors import (
    DEFAULT_REPLICA_POINTS,
    ConsistentHashingSelector,
    HashRangeAutoSplitSelector,
    HashRangeExclusiveSelector,
)
from brokerlb.errors import ConsumerBusyError, InvalidInputError

__all__ = ["KeySharedMode", "KeySharedDispatcher"]


class KeySharedMode(enum.Enum):
    AUTO_SPLIT = "AUTO_SPLIT"
    STICKY = "STICKY"


class KeySharedDispatcher:
    subscription_type = "Key_Shared"

    def __init__(
        self,
        mode: KeySharedMode = KeySharedMode.AUTO_SPLIT,
        use_consistent_hashing: bool = True,
        replica_points: int = DEFAULT_REPLICA_POINTS,
        strict_ranges: bool = False,
    ) -> None:
        self.mode = mode
        self.selector: ConsistentHashingSelector | HashRangeAutoSplitSelector | HashRangeExclusiveSelector
        if mode is KeySharedMode.STICKY:
            self.selector = HashRangeExclusiveSelector(strict_ranges=strict_ranges)
        elif use_consistent_hashing:
            self.selector = ConsistentHashingSelector(replica_points)
        else:
            self.selector = HashRangeAutoSplitSelector()
        self._consumers: list[DispatchConsumer] = []

    @property
    def consumers(self) -> Sequence[DispatchConsumer]:
        return tuple(self._consumers)

    def add_consumer(self, consumer: DispatchConsumer) -> None:
        if any(c is consumer for c in self._consumers):
            raise InvalidInputError(f"{consumer!r} is already connected")  # before touching the selector
        if self.mode is KeySharedMode.AUTO_SPLIT and consumer.hash_ranges:
            raise ConsumerBusyError(
                f"Subscription is of different type: Key_Shared AUTO_SPLIT, consumer "
                f"{consumer.consumer_name} brings STICKY hash ranges"
            )
        self.selector.add_consumer(consumer)  # may raise ConsumerAssignError; nothing changed then
        connect(self._consumers, consumer)

    def remove_consumer(self, consumer: DispatchConsumer) -> None:
        disconnect(self._consumers, consumer)
        self.selector.remove_consumer(consumer)

    def owner_of(self, message: Message) -> DispatchConsumer | None:
        """The consumer ``message``'s key belongs to, whatever its permits."""
        return self.selector.select(sticky_key_hash(message.sticky_key))

    def select(self, message: Message) -> DispatchConsumer | None:
        owner = self.owner_of(message)
        return owner if owner is not None and owner.available else None

    def dispatch(self, messages: Sequence[Message]) -> DispatchResult:
        result = DispatchResult()
        for message in messages:
            consumer = self.select(message)
            if consumer is None:
                result.held.append(message)
            else:
                result.add(consumer, message)
                consumer.consume_permits(1)
        return result
