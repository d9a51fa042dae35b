"""Server-side ``range`` assignor (KIP-848, Kafka 4.x ``RangeAssignor``), registered as ``range-server``.

Goal: co-partitioning. Per topic, its subscribers in ``MemberInfo`` order (static
members by ``group.instance.id`` first, then member ids, Java string order) get
contiguous ranges: with ``P`` partitions and ``C`` subscribers each gets
``P // C`` and the first ``P % C`` one more. When every member subscribes to the
same topics and the topics have equal partition counts, each member gets the
same partition numbers of every topic (what joins of co-partitioned streams
need). Balance is per topic (a topic's subscribers differ by at most one of its
partitions), not across topics.

Stickiness: none beyond determinism, as in Kafka 4.x, whose server-side range
assignor dropped the sticky variant of 3.5-3.7 in favour of co-partitioning: the
answer is a function of the sorted subscriber lists and the partition counts, so
it stays put while membership, subscriptions and counts stay put (static members
keep their ranges across restarts), and a member joining in the middle of the
order shifts the ranges behind it. ``GroupAssignment.moved`` reports what that
costs. The partitions are those of the classic :class:`~.range.RangeAssignor`;
what differs is the protocol: the coordinator reconciles towards this target
(KIP-848) instead of every member revoking everything (eager).

Worked example (Kafka's javadoc): M0, M1 on T1, T2 with 3 partitions each give
M0 ``[T1-0, T1-1, T2-0, T2-1]`` and M1 ``[T1-2, T2-2]``. No config keys; rack
awareness (Kafka 4.1+) is not modelled.
"""

from __future__ import annotations

from brokerlb.kafka.assignors.interface import RebalanceProtocol
from brokerlb.kafka.assignors.range import range_target
from brokerlb.kafka.assignors.result import GroupAssignment, finish_assignment
from brokerlb.kafka.assignors.snapshot import GroupSnapshot, java_order, member_order

__all__ = ["ServerRangeAssignor"]


class ServerRangeAssignor:
    """KIP-848 ``range``: per-topic contiguous ranges over the sorted subscribers."""

    name = "range-server"
    protocol = RebalanceProtocol.CONSUMER

    def assign(self, group: GroupSnapshot) -> GroupAssignment:
        members = sorted(group.members.values(), key=lambda m: (member_order(m), java_order(m.member_id)))
        return finish_assignment(group, range_target(members, group.partitions_per_topic()))
