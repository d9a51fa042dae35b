"""Adapter running kafka-python 3.0.12's assignors on a :class:`GroupSnapshot`.

kafka-python is the independent reference for the differential tests. What the
adapter does explicitly (where kafka-python departs from Java's assignors):

* **Member order.** kafka-python sorts static members (``group_instance_id``)
  first, then dynamic ones, as Java's ``MemberInfo`` does -- but it groups them
  with ``itertools.groupby`` over the members *in the order given*, which keeps
  only the last run of each kind: with static and dynamic members interleaved,
  some members silently get nothing. We hand members over static-first so each
  kind is one run (``test_kafka_python_drops_interleaved_static_members`` shows
  the drop).
* **Topic and partition order.** Subscriptions and owned partitions are handed
  over sorted, as our model stores them (kafka-python compares per-member
  partition lists, so ``[a, b]`` vs ``[b, a]`` would make "identical"
  subscriptions differ).
* **Arbitrary set element.** ``PartitionMovements.get_partition_to_be_moved``
  returns ``next(iter(a_set))`` (Java: ``HashSet.iterator().next()``), which
  depends on string hashing; :func:`deterministic_movements` patches it to take
  the smallest partition, which is what we do.
* The cluster stub lists only topics some member subscribes to (Java's
  ``partitionsPerTopic``).
"""

from __future__ import annotations

import contextlib
from collections import namedtuple
from collections.abc import Iterator

from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor as KpCooperative
from kafka.coordinator.assignors.range import RangePartitionAssignor as KpRange
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor as KpRoundRobin
from kafka.coordinator.assignors.sticky import partition_movements as kp_movements
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as KpSticky
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from brokerlb.kafka.assignors.snapshot import GroupSnapshot, TopicPartition

JoinMember = namedtuple("JoinMember", "member_id group_instance_id metadata")


class StubCluster:
    def __init__(self, group: GroupSnapshot) -> None:
        self._counts = group.partitions_per_topic()

    def topics(self):
        return set(self._counts)

    def partitions_for_topic(self, topic):
        n = self._counts.get(topic)
        return None if n is None else set(range(n))


def _owned_by_topic(owned):
    out: dict[str, list[int]] = {}
    for tp in sorted(owned):
        out.setdefault(tp.topic, []).append(tp.partition)
    return sorted(out.items())


def _members(group: GroupSnapshot, kind: str) -> list[JoinMember]:
    static = [m for m in group.members.values() if m.group_instance_id is not None]
    dynamic = [m for m in group.members.values() if m.group_instance_id is None]
    out = []
    for m in static + dynamic:
        topics = sorted(m.topics)
        generation = m.generation_or_default
        if kind == "eager":
            meta = ConsumerProtocolSubscription(version=0, topics=topics, user_data=b"")
        elif kind == "sticky":
            user_data = b""
            if m.owned:
                user_data = StickyAssignorUserData(
                    previous_assignment=_owned_by_topic(m.owned), generation=generation
                )
            meta = ConsumerProtocolSubscription(version=0, topics=topics, user_data=user_data)
        else:
            sub_tp = ConsumerProtocolSubscription.TopicPartition
            owned = [sub_tp(topic=t, partitions=ps) for t, ps in _owned_by_topic(m.owned)]
            meta = ConsumerProtocolSubscription(
                version=1, topics=topics, user_data=b"", owned_partitions=owned, generation_id=generation
            )
        out.append(JoinMember(m.member_id, m.group_instance_id, meta))
    return out


def _decode(result) -> dict[str, list[TopicPartition]]:
    return {
        mid: sorted(TopicPartition(t, p) for t, ps in a.assigned_partitions for p in ps)
        for mid, a in result.items()
    }


@contextlib.contextmanager
def deterministic_movements() -> Iterator[None]:
    original = kp_movements.PartitionMovements.get_partition_to_be_moved

    def smallest(self, partition, old_consumer, new_consumer):
        if partition.topic not in self.partition_movements_by_topic:
            return partition
        if partition in self.partition_movements:
            old_consumer = self.partition_movements[partition].src_member_id
        reverse = kp_movements.ConsumerPair(src_member_id=new_consumer, dst_member_id=old_consumer)
        if reverse not in self.partition_movements_by_topic[partition.topic]:
            return partition
        return min(self.partition_movements_by_topic[partition.topic][reverse])

    kp_movements.PartitionMovements.get_partition_to_be_moved = smallest
    try:
        yield
    finally:
        kp_movements.PartitionMovements.get_partition_to_be_moved = original


def kafka_python_assign(name: str, group: GroupSnapshot) -> dict[str, list[TopicPartition]]:
    """kafka-python's answer for assignor ``name`` (round-1 answer for cooperative-sticky)."""
    cluster = StubCluster(group)
    if name == "range":
        return _decode(KpRange.assign(cluster, _members(group, "eager")))
    if name == "roundrobin":
        return _decode(KpRoundRobin.assign(cluster, _members(group, "eager")))
    with deterministic_movements():
        if name == "sticky":
            return _decode(KpSticky().assign(cluster, _members(group, "sticky")))
        if name == "cooperative-sticky":
            return _decode(KpCooperative().assign(cluster, _members(group, "cooperative")))
    raise ValueError(f"no kafka-python assignor {name}")
