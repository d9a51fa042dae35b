"""Range assignor (``partition.assignment.strategy=range``), the algorithm of seed 004.

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

from brokerlb.kafka.assignors.base import (
    GroupAssignment,
    GroupSnapshot,
    RebalanceProtocol,
    TopicPartition,
    finish_assignment,
)

__all__ = ["RangeAssignor", "range_for_position"]


def range_for_position(num_partitions: int, num_consumers: int, position: int) -> range:
    """The partition indices the consumer at ``position`` gets (seed 004's formula)."""
    per_consumer = num_partitions // num_consumers
    with_extra = num_partitions % num_consumers
    start = per_consumer * position + min(position, with_extra)
    count = per_consumer + (0 if position + 1 > with_extra else 1)
    return range(start, start + count)


class RangeAssignor:
    name = "range"
    protocol = RebalanceProtocol.EAGER

    def assign(self, group: GroupSnapshot) -> GroupAssignment:
        target: dict[str, list[TopicPartition]] = {mid: [] for mid in group.members}
        members = group.sorted_members()
        for topic, count in group.partitions_per_topic().items():
            consumers = [m.member_id for m in members if topic in m.topics]
            for position, mid in enumerate(consumers):
                target[mid].extend(
                    TopicPartition(topic, p) for p in range_for_position(count, len(consumers), position)
                )
        return finish_assignment(group, target)
