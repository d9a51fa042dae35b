"""Shared subscription dispatch: round robin within the highest priority level that has permits.

Pulsar's ``AbstractDispatcherMultipleConsumers.getNextConsumer``: consumers are
kept sorted by ``priorityLevel`` (0 = highest; ties keep connection order) and
a cursor remembers the last served index. Each pick

1. first looks for an available consumer on a *higher* level than the cursor's
   (only if the cursor is not on level 0);
2. else round-robins within the cursor's level, wrapping inside the level;
3. else takes the first available consumer on a lower level.

"Available" = not blocked and ``permits > 0``. :meth:`SharedDispatcher.dispatch`
follows ``sendMessagesToConsumers``: each pick receives up to
``min(permits, dispatcherMaxRoundRobinBatchSize)`` consecutive messages.

Worked example (Pulsar's javadoc), one message per pick:

====  =====  =======
name  level  permits
====  =====  =======
C1    0      2
C2    0      1
C3    0      1
C4    1      2
C5    1      1
====  =====  =======

picks: C1, C2, C3, C1, C4, C5, C4.

Config: ``dispatcherMaxRoundRobinBatchSize`` (20), ``maxConsumersPerSubscription``
(0 = unlimited).
"""

from __future__ import annotations

from collections.abc import Sequence

from brokerlb.dispatch.base import DispatchConsumer, DispatchResult, Message, connect, disconnect
from brokerlb.errors import InvalidInputError

__all__ = ["SharedDispatcher"]


class SharedDispatcher:
    subscription_type = "Shared"

    def __init__(self, max_round_robin_batch_size: int = 20, max_consumers: int = 0) -> None:
        if max_round_robin_batch_size < 1:
            raise InvalidInputError(
                f"dispatcherMaxRoundRobinBatchSize must be >= 1, got {max_round_robin_batch_size}"
            )
        self.max_round_robin_batch_size = max_round_robin_batch_size
        self.max_consumers = max_consumers
        self._consumers: list[DispatchConsumer] = []
        #: index of the next consumer to try (``currentConsumerRoundRobinIndex``)
        self.round_robin_index = 0

    @property
    def consumers(self) -> Sequence[DispatchConsumer]:
        return tuple(self._consumers)

    def add_consumer(self, consumer: DispatchConsumer) -> None:
        connect(self._consumers, consumer, self.max_consumers)
        if len(self._consumers) > 1 and consumer.priority_level < self._consumers[-2].priority_level:
            self._consumers.sort(key=lambda c: c.priority_level)  # stable: keeps connection order

    def remove_consumer(self, consumer: DispatchConsumer) -> None:
        disconnect(self._consumers, consumer)

    # ------------------------------------------------------------------ selection

    def next_consumer(self) -> DispatchConsumer | None:
        """``getNextConsumer``: advances the round-robin cursor; ``None`` when nobody is available."""
        consumers = self._consumers
        if not consumers:
            return None
        if self.round_robin_index >= len(consumers):
            self.round_robin_index = 0
        level = consumers[self.round_robin_index].priority_level
        if level != 0:
            higher = self._from_higher_priority(level)
            if higher != -1:
                self.round_robin_index = higher + 1
                return consumers[higher]
        index = self._from_same_or_lower_level(self.round_robin_index)
        if index != -1:
            self.round_robin_index = index + 1
            return consumers[index]
        return None

    def _from_higher_priority(self, level: int) -> int:
        for i in range(self.round_robin_index):
            c = self._consumers[i]
            if c.priority_level >= level:
                break
            if c.available:
                return i
        return -1

    def _first_index_of_level(self, level: int) -> int:
        return next(i for i, c in enumerate(self._consumers) if c.priority_level == level)

    def _from_same_or_lower_level(self, start: int) -> int:
        consumers = self._consumers
        level = consumers[start].priority_level
        scan = start
        end_of_level = start
        while True:
            c = consumers[scan] if scan < len(consumers) else None
            if c is None or c.priority_level != level:
                end_of_level = scan
                scan = self._first_index_of_level(level)
            else:
                if c.available:
                    return scan
                scan += 1
            if scan == start:
                break
        for i in range(end_of_level, len(consumers)):
            if consumers[i].available:
                return i
        return -1

    def select(self, message: Message) -> DispatchConsumer | None:
        """The next consumer in priority round robin (the key plays no role in Shared)."""
        return self.next_consumer()

    def dispatch(self, messages: Sequence[Message]) -> DispatchResult:
        result = DispatchResult()
        pending = list(messages)
        while pending:
            consumer = self.next_consumer()
            if consumer is None:
                break
            count = min(consumer.permits, self.max_round_robin_batch_size, len(pending))
            for message in pending[:count]:
                result.add(consumer, message)
            consumer.consume_permits(count)
            pending = pending[count:]
        result.held.extend(pending)
        return result
