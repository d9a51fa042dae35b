"""Sticky assignor (KIP-54, ``partition.assignment.strategy=sticky``).

Goal, in this order: (1) balanced -- partition counts differ by at most one, or
no member could take a partition from one holding two or more more; (2) as
many previous assignments kept as possible. The previous assignment comes from
the members' ``owned`` partitions with their generation; a partition claimed by
two members of the same (highest) generation counts as unowned, an older
generation loses to a newer one (Java 3.x ``allSubscriptionsEqual``).

Two algorithms, chosen as Java chooses them:

* all members subscribe to the same topics -> :func:`constrained_assign`
  (Kafka 2.8+ fast path, quotas);
* otherwise -> :func:`general_assign` (iterative balancing with movement
  tracking).

``StickyAssignor(constrained=False)`` runs the general algorithm for every
group, like Kafka 2.3-2.7 and kafka-python 3.0.12 (identical answers to
kafka-python, see tests/kafka/test_differential_kafka_python.py).

Worked example (Kafka's javadoc): C0, C1, C2 on t0..t3 with 2 partitions each;
after C1 leaves, sticky keeps every partition C0 and C2 had and spreads C1's
over them. Eager protocol: every member revokes what it owns before the
rebalance; see :mod:`.cooperative_sticky` for the incremental variant.
"""

from __future__ import annotations

from brokerlb.kafka.assignors.interface import RebalanceProtocol
from brokerlb.kafka.assignors.ownership import OwnerResolution, resolve_owners
from brokerlb.kafka.assignors.result import GroupAssignment, finish_assignment
from brokerlb.kafka.assignors.snapshot import GroupSnapshot, TopicPartition
from brokerlb.kafka.assignors.sticky_constrained import constrained_assign
from brokerlb.kafka.assignors.sticky_general import GeneralStickyInput, general_assign

__all__ = ["StickyAssignor", "sticky_target"]


def sticky_target(
    group: GroupSnapshot, constrained: bool = True, owners: OwnerResolution | None = None
) -> dict[str, list[TopicPartition]]:
    """The sticky target assignment ``{member: partitions}`` (shared with cooperative-sticky)."""
    owners = owners if owners is not None else resolve_owners(group)
    per_topic = group.partitions_per_topic()
    if constrained and group.all_subscriptions_equal():
        return constrained_assign(list(group.members), per_topic, owners.owned)
    subs = {mid: frozenset(t for t in m.topics if t in per_topic) for mid, m in group.members.items()}
    fresh = not any(m.owned for m in group.members.values())
    identical = len(set(subs.values())) <= 1
    data = GeneralStickyInput(
        subscriptions=subs,
        partitions_per_topic=per_topic,
        owned=owners.owned,
        previous_owner=owners.previous_owner,
        legacy_identical=(not constrained) and identical and not fresh,
    )
    return general_assign(data)


class StickyAssignor:
    name = "sticky"
    protocol = RebalanceProtocol.EAGER

    def __init__(self, constrained: bool = True) -> None:
        #: use Java's fast path for equal subscriptions (Kafka >= 2.8)
        self.constrained = constrained

    def assign(self, group: GroupSnapshot) -> GroupAssignment:
        owners = resolve_owners(group)
        return finish_assignment(group, sticky_target(group, self.constrained, owners), owners=owners)
