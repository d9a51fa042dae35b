"""RoundRobin assignor (``partition.assignment.strategy=roundrobin``).

Goal: deal all partitions out like cards. Partitions of every subscribed topic
are sorted by topic then number; consumers are sorted in ``MemberInfo`` order
and cycled; a consumer not subscribed to the partition's topic is skipped
(``RoundRobinAssignor``'s ``CircularIterator``). Uniform (counts within one)
only when all subscriptions are identical; with different subscriptions it can
be unbalanced -- Kafka's javadoc: C0 on t0, C1 on t0,t1, C2 on t0,t1,t2 with
1, 2, 3 partitions give C0 ``[t0p0]``, C1 ``[t1p0]``, C2
``[t1p1, t2p0, t2p1, t2p2]``. Ownership is ignored (eager). No config keys.
"""

from __future__ import annotations

import bisect

from brokerlb.kafka.assignors.interface import RebalanceProtocol
from brokerlb.kafka.assignors.result import GroupAssignment, finish_assignment
from brokerlb.kafka.assignors.snapshot import GroupSnapshot, TopicPartition

__all__ = ["RoundRobinAssignor"]


class RoundRobinAssignor:
    name = "roundrobin"
    protocol = RebalanceProtocol.EAGER

    def assign(self, group: GroupSnapshot) -> GroupAssignment:
        members = group.sorted_members()
        target: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        if not members:
            return finish_assignment(group, target)
        # positions (in the circular order) of the members subscribed to each topic
        positions: dict[str, list[int]] = {}
        for i, m in enumerate(members):
            for topic in m.topics:
                positions.setdefault(topic, []).append(i)
        cursor = 0
        for tp in group.all_partitions():
            # skip ahead to the next subscribed member, wrapping around: O(log C)
            subscribed = positions[tp.topic]
            k = bisect.bisect_left(subscribed, cursor)
            chosen = subscribed[k] if k < len(subscribed) else subscribed[0]
            target[members[chosen].member_id].append(tp)
            cursor = (chosen + 1) % len(members)
        return finish_assignment(group, target)
