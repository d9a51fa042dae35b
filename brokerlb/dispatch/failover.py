"""Failover (and Exclusive) subscription dispatch: one active consumer per topic partition.

Pulsar's ``AbstractDispatcherSingleActiveConsumer.pickAndScheduleActiveConsumer``:

* partition of a partitioned topic (``partition_index >= 0``): consumers are
  sorted by ``priorityLevel`` then consumer name; the active one is
  ``consumers[partition_index % n]`` where ``n`` is the number of consumers on
  the highest priority level -- so the partitions of a topic spread evenly over
  the highest-priority consumers, and every dispatcher of the topic agrees
  without talking to the others;
* non-partitioned topic (``partition_index = -1``): the first connected consumer.

Every change of consumers re-picks; :meth:`FailoverDispatcher.add_consumer` and
``remove_consumer`` return whether the active consumer changed, so the data path
can notify consumers (``notifyActiveConsumerChange``) and delay the read on the
new one by ``activeConsumerFailoverDelayTimeMillis`` (1000 ms), as Pulsar does.

Exclusive: a second consumer is refused with ``ConsumerBusyError("Exclusive
consumer is already connected")``.

Worked example: partitions 0..3 of a topic, consumers "a" and "b" (level 0) and
"c" (level 1): partition 0 -> a, 1 -> b, 2 -> a, 3 -> b; "c" only becomes active
when a and b are gone.
"""

from __future__ import annotations

from collections.abc import Sequence

from brokerlb.dispatch.base import DispatchConsumer, DispatchResult, Message, connect, disconnect
from brokerlb.errors import ConsumerBusyError, InvalidInputError

__all__ = ["FailoverDispatcher", "active_consumer_index"]


def active_consumer_index(consumers: Sequence[DispatchConsumer], partition_index: int) -> int:
    """Index of the active consumer in ``consumers`` (already sorted for a partitioned topic)."""
    if not consumers:
        raise InvalidInputError("no consumers to choose from")
    if partition_index < 0:
        return 0
    top = consumers[0].priority_level
    highest = sum(1 for c in consumers if c.priority_level == top)
    return partition_index % highest


class FailoverDispatcher:
    """One partition's (or a non-partitioned topic's) single-active-consumer dispatcher."""

    def __init__(self, partition_index: int = -1, exclusive: bool = False, max_consumers: int = 0) -> None:
        self.partition_index = partition_index
        self.subscription_type = "Exclusive" if exclusive else "Failover"
        self.max_consumers = max_consumers
        self._consumers: list[DispatchConsumer] = []
        self._active: DispatchConsumer | None = None

    @property
    def consumers(self) -> Sequence[DispatchConsumer]:
        return tuple(self._consumers)

    @property
    def active_consumer(self) -> DispatchConsumer | None:
        return self._active

    def _pick(self) -> bool:
        if not self._consumers:
            changed = self._active is not None
            self._active = None
            return changed
        if self.partition_index >= 0:
            self._consumers.sort(
                key=lambda c: (c.priority_level, c.consumer_name.encode("utf-16-be", "surrogatepass"))
            )
        chosen = self._consumers[active_consumer_index(self._consumers, self.partition_index)]
        changed = chosen is not self._active
        self._active = chosen
        return changed

    def add_consumer(self, consumer: DispatchConsumer) -> bool:
        """Connect ``consumer``; returns True if the active consumer changed."""
        if (
            self.subscription_type == "Exclusive"
            and self._consumers
            and not any(c is consumer for c in self._consumers)
        ):
            raise ConsumerBusyError("Exclusive consumer is already connected")
        connect(self._consumers, consumer, self.max_consumers if self.subscription_type == "Failover" else 0)
        return self._pick()

    def remove_consumer(self, consumer: DispatchConsumer) -> bool:
        """Disconnect ``consumer``; returns True if the active consumer changed."""
        disconnect(self._consumers, consumer)
        return self._pick()

    def select(self, message: Message) -> DispatchConsumer | None:
        """The active consumer if it can take a message now, else ``None`` (nobody else may)."""
        active = self._active
        return active if active is not None and active.available else None

    def dispatch(self, messages: Sequence[Message]) -> DispatchResult:
        result = DispatchResult()
        active = self._active
        count = 0 if active is None or not active.available else min(active.permits, len(messages))
        if active is not None:
            for message in messages[:count]:
                result.add(active, message)
            active.consume_permits(count)
        result.held.extend(messages[count:])
        return result
