"""Range assignor (``partition.assignment.strategy=range``), the algorithm of Kafka 0.8's ZooKeeper consumer.

Goal: per topic, give each subscribed consumer a contiguous range of partitions.
Partitions are taken in numeric order and consumers in ``MemberInfo`` order
(static members by ``group.instance.id`` first, then member ids, Java string
order); with ``P`` partitions and ``C`` consumers each gets ``P // C`` and the
first ``P % C`` one more -- the ZooKeeper-era ``RangeAssignor.assign``::

    startPart = nPartsPerConsumer * pos + min(pos, nConsumersWithExtraPart)
    nParts    = nPartsPerConsumer + (0 if pos + 1 > nConsumersWithExtraPart else 1)

Worked example (Kafka's javadoc): C0, C1 both on t0, t1 with 3 partitions each
give C0 ``[t0p0, t0p1, t1p0, t1p1]`` and C1 ``[t0p2, t1p2]``. Counts are balanced
per topic, not overall; ownership is ignored (eager protocol). No config keys.
Kafka 3.5+ rack awareness (KIP-881) needs rack data we do not model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from brokerlb.kafka.assignors.interface import RebalanceProtocol
from brokerlb.kafka.assignors.result import GroupAssignment, finish_assignment
from brokerlb.kafka.assignors.snapshot import GroupSnapshot, Member, TopicPartition

__all__ = ["RangeAssignor", "range_for_position", "range_target"]


def range_for_position(num_partitions: int, num_consumers: int, position: int) -> range:
    """The partition indices the consumer at ``position`` gets (Kafka's ``RangeAssignor`` formula)."""
    per_consumer = num_partitions // num_consumers
    with_extra = num_partitions % num_consumers
    start = per_consumer * position + min(position, with_extra)
    count = per_consumer + (0 if position + 1 > with_extra else 1)
    return range(start, start + count)


def range_target(members: Sequence[Member], counts: Mapping[str, int]) -> dict[str, list[TopicPartition]]:
    """Per topic, contiguous ranges over its subscribers in the order of ``members``."""
    subscribers: dict[str, list[str]] = {t: [] for t in counts}
    for m in members:
        for topic in dict.fromkeys(m.topics):  # a topic listed twice counts once
            if topic in subscribers:
                subscribers[topic].append(m.member_id)
    target: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    for topic, count in counts.items():
        consumers = subscribers[topic]
        for position, mid in enumerate(consumers[:count]):  # members past the count get nothing
            target[mid].extend(
                TopicPartition(topic, p) for p in range_for_position(count, len(consumers), position)
            )
    return target


class RangeAssignor:
    name = "range"
    protocol = RebalanceProtocol.EAGER

    def assign(self, group: GroupSnapshot) -> GroupAssignment:
        target = range_target(group.sorted_members(), group.partitions_per_topic())
        return finish_assignment(group, {mid: target.get(mid, []) for mid in group.members})
