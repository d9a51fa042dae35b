"""The sticky assignor's general algorithm (Java ``AbstractStickyAssignor.GeneralAssignmentBuilder``).

Used when members subscribe to different topics (and, with
``constrained=False``, for every group as Kafka 2.3-2.7 and kafka-python 3.0.12
do). Steps, as in Java:

1. keep every valid owned partition; drop those of topics the owner no longer
   subscribes to (``revocationRequired``);
2. give each unassigned partition -- topics ordered by (number of potential
   consumers, name), partitions in order -- to the least-loaded subscribed
   consumer (ties: member id);
3. while the assignment is not balanced, move partitions from a consumer to a
   less-loaded one (back to the previous owner first), tracking movements so a
   partition that moved A -> B is preferred over moving another B -> A
   (``PartitionMovements``); revert when the balance score did not improve.

"Balanced": no consumer could take a partition from one holding 2+ more.

Deviations, all deterministic where Java/kafka-python are not:

* ``getTheActualPartitionToBeMoved`` takes *any* element of a ``HashSet``; we take
  the smallest ``(topic, partition)``.
* When the substitute partition sits on another consumer (both moved earlier in
  this rebalance), we undo that move first, as kafka-python does -- Java moves
  the substitute and can leave the overloaded consumer as it was.
* A previous owner (older generation) is used only if it is still subscribed and
  takes part in the reassignment (Java would fail with a null pointer, kafka-python
  would create an empty entry for it).
* Legacy mode (``legacy_identical``): for identical subscriptions with previous
  ownership, the reassignment order is built round-robin from the consumers with
  the most partitions (each giving its *last* owned partition), as kafka-python
  and Kafka < 2.8 do.

The balance test and the "better consumer exists" test are cached between moves;
they depend only on the counts, so the result is the same as recomputing them.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from brokerlb.errors import BrokerLBError
from brokerlb.kafka.assignors.snapshot import TopicPartition, java_order

__all__ = ["GeneralStickyInput", "general_assign"]


@dataclass(frozen=True)
class GeneralStickyInput:
    """Everything the general algorithm reads."""

    #: member id -> subscribed topics that exist (and are subscribed by someone)
    subscriptions: Mapping[str, frozenset[str]]
    #: topic -> partition count, for the topics in ``subscriptions``
    partitions_per_topic: Mapping[str, int]
    #: member id -> valid owned partitions, in the member's listed order
    owned: Mapping[str, Sequence[TopicPartition]]
    #: partition -> (previous owner, its generation) for older-generation claims
    previous_owner: Mapping[TopicPartition, tuple[str, int]]
    #: kafka-python / Kafka < 2.8 ordering for identical subscriptions with history
    legacy_identical: bool = False


class _SortedMembers:
    """Members sorted by (partition count, member id): Java's ``sortedCurrentSubscriptions``."""

    def __init__(self) -> None:
        self._items: list[tuple[int, bytes, str]] = []

    def add(self, count: int, member: str) -> None:
        bisect.insort(self._items, (count, java_order(member), member))

    def remove(self, count: int, member: str) -> None:
        item = (count, java_order(member), member)
        i = bisect.bisect_left(self._items, item)
        if i >= len(self._items) or self._items[i] != item:
            raise BrokerLBError(f"sticky assignor bookkeeping lost member {member} (count {count})")
        del self._items[i]

    def __iter__(self) -> Iterator[str]:  # members, least loaded first
        return (m for _, _, m in self._items)

    def first(self) -> tuple[int, bytes, str] | None:
        return self._items[0] if self._items else None

    def first_count(self) -> int:
        return self._items[0][0]

    def last_count(self) -> int:
        return self._items[-1][0]

    def last_member(self) -> str:
        return self._items[-1][2]

    def __bool__(self) -> bool:
        return bool(self._items)


class _Movements:
    """Java's ``PartitionMovements``: net movement per partition, grouped by topic and pair."""

    def __init__(self) -> None:
        self.by_partition: dict[TopicPartition, tuple[str, str]] = {}
        self.by_topic: dict[str, dict[tuple[str, str], set[TopicPartition]]] = {}

    def _remove(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self.by_partition.pop(tp)
        pairs = self.by_topic[tp.topic]
        pairs[pair].discard(tp)
        if not pairs[pair]:
            del pairs[pair]
        if not pairs:
            del self.by_topic[tp.topic]
        return pair

    def _add(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self.by_partition[tp] = pair
        self.by_topic.setdefault(tp.topic, {}).setdefault(pair, set()).add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self.by_partition:
            src, dst = self._remove(tp)
            if dst != old:
                raise BrokerLBError(f"movement record of {tp} says it is on {dst}, not {old}")
            if src != new:  # not moving back to where it started
                self._add(tp, (src, new))
        else:
            self._add(tp, (old, new))

    def partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        """``getTheActualPartitionToBeMoved``: prefer undoing an earlier new -> old move."""
        pairs = self.by_topic.get(tp.topic)
        if pairs is None:
            return tp
        if tp in self.by_partition:
            old = self.by_partition[tp][0]
        reverse = pairs.get((new, old))
        if not reverse:
            return tp
        return min(reverse)  # Java: HashSet.iterator().next()


class _GeneralBuilder:
    def __init__(self, data: GeneralStickyInput) -> None:
        self.data = data
        self.subs = data.subscriptions
        self.counts = data.partitions_per_topic
        self.topic_consumers: dict[str, list[str]] = {t: [] for t in self.counts}
        for member in sorted(self.subs, key=java_order):
            for topic in self.subs[member]:
                self.topic_consumers[topic].append(member)
        self.max_size = {m: sum(self.counts[t] for t in ts) for m, ts in self.subs.items()}
        # current assignment: member -> ordered set of partitions
        self.current: dict[str, dict[TopicPartition, None]] = {m: {} for m in self.subs}
        self.owner: dict[TopicPartition, str] = {}
        #: topic -> {member: partitions of the topic it holds} (for the balance test)
        self.holders: dict[str, dict[str, int]] = {t: {} for t in self.counts}
        self.sorted = _SortedMembers()
        # the same order among each topic's subscribers: "the first member in sorted order
        # subscribed to topic t" is the head of by_topic[t]
        self.by_topic: dict[str, _SortedMembers] = {t: _SortedMembers() for t in self.counts}
        self.movements = _Movements()
        self.revocation_required = False
        self._balanced: bool | None = None
        self._topic_min: dict[str, int] = {}

    # ------------------------------------------------------------------ helpers

    def count(self, member: str) -> int:
        return len(self.current[member])

    def _touched(self) -> None:
        self._balanced = None
        self._topic_min.clear()

    def _index_add(self, member: str) -> None:
        n = len(self.current[member])
        self.sorted.add(n, member)
        for topic in self.subs[member]:
            self.by_topic[topic].add(n, member)

    def _index_remove(self, member: str) -> None:
        n = len(self.current[member])
        self.sorted.remove(n, member)
        for topic in self.subs[member]:
            self.by_topic[topic].remove(n, member)

    def first_subscribed(self, topic: str) -> str | None:
        """The first member in sorted order subscribed to ``topic`` (Java scans the sorted set)."""
        head = self.by_topic[topic].first()
        return None if head is None else head[2]

    def _hold(self, tp: TopicPartition, member: str, delta: int) -> None:
        held = self.holders[tp.topic]
        held[member] = held.get(member, 0) + delta
        if not held[member]:
            del held[member]

    def _set_owner(self, tp: TopicPartition, member: str) -> None:
        self._index_remove(member)
        self.current[member][tp] = None
        self.owner[tp] = member
        self._hold(tp, member, 1)
        self._index_add(member)
        self._touched()

    def sorted_all_partitions(self) -> list[TopicPartition]:
        topics = sorted(self.counts, key=lambda t: (len(self.topic_consumers[t]), t))
        return [TopicPartition(t, p) for t in topics for p in range(self.counts[t])]

    # ------------------------------------------------------------------ steps

    def keep_owned(self) -> set[TopicPartition]:
        kept: set[TopicPartition] = set()
        for member, owned in self.data.owned.items():
            if member not in self.subs:
                continue
            for tp in owned:
                if tp.topic not in self.counts:
                    continue
                if tp.topic not in self.subs[member]:
                    self.revocation_required = True
                    continue
                self.current[member][tp] = None
                self.owner[tp] = member
                self._hold(tp, member, 1)
                kept.add(tp)
        return kept

    def legacy_sorted_partitions(self, all_sorted: list[TopicPartition]) -> list[TopicPartition]:
        """kafka-python's order for identical subscriptions with previous ownership."""
        remaining = {
            m: [tp for tp in self.data.owned.get(m, ()) if tp.topic in self.counts] for m in self.subs
        }
        order = _SortedMembers()
        for m, tps in remaining.items():
            order.add(len(tps), m)
        previous = self.data.previous_owner
        out: list[TopicPartition] = []
        seen: set[TopicPartition] = set()
        while order:
            member = order.last_member()
            tps = remaining[member]
            order.remove(len(tps), member)
            moved_before = sorted(tp for tp in tps if tp in previous)
            if moved_before:
                tp = moved_before[0]  # kafka-python: set.pop()
                tps.remove(tp)
            elif tps:
                tp = tps.pop()
            else:
                continue
            if tp not in seen:
                out.append(tp)
                seen.add(tp)
            order.add(len(tps), member)
        out.extend(tp for tp in all_sorted if tp not in seen)
        return out

    def assign_unassigned(self, unassigned: list[TopicPartition]) -> None:
        for tp in unassigned:
            member = self.first_subscribed(tp.topic)
            if member is not None:
                self._set_owner(tp, member)

    def can_participate(self, member: str) -> bool:
        if self.count(member) < self.max_size[member]:
            return True
        return any(len(self.topic_consumers[tp.topic]) >= 2 for tp in self.current[member])

    def is_balanced(self) -> bool:
        if self._balanced is None:
            self._balanced = self._compute_balanced()
        return self._balanced

    def _compute_balanced(self) -> bool:
        if self.sorted.first_count() >= self.sorted.last_count() - 1:
            return True
        # per topic: the two largest partition counts among the members holding some of it
        current = self.current
        best: dict[str, list[tuple[int, str]]] = {}
        for topic, held in self.holders.items():
            top: list[tuple[int, str]] = []
            for member in held:
                if member in current:  # not a fixed consumer
                    top.append((len(current[member]), member))
            top.sort(reverse=True)
            best[topic] = top[:2]
        for member in self.sorted:
            n = self.count(member)
            if n == self.max_size[member]:
                continue
            for topic in self.subs[member]:
                for other_count, other in best.get(topic, ()):
                    if other != member:
                        if n + 1 < other_count:
                            return False
                        break
        return True

    def min_count_on_topic(self, topic: str) -> int:
        value = self._topic_min.get(topic)
        if value is None:
            value = self._topic_min[topic] = min(self.count(m) for m in self.topic_consumers[topic])
        return value

    def perform_reassignments(self, partitions: list[TopicPartition]) -> bool:
        performed = False
        while True:
            modified = False
            for tp in partitions:
                if self.is_balanced():
                    break
                member = self.owner[tp]
                n = self.count(member)
                prev = self.data.previous_owner.get(tp)
                if (
                    prev is not None
                    and prev[0] in self.current
                    and tp.topic in self.subs[prev[0]]
                    and n > self.count(prev[0]) + 1
                ):
                    self.reassign_to(tp, prev[0])
                    performed = modified = True
                    continue
                if n > self.min_count_on_topic(tp.topic) + 1:
                    new = self.first_subscribed(tp.topic)
                    assert new is not None
                    self.reassign_to(tp, new)
                    performed = modified = True
            if not modified:
                return performed

    def reassign_to(self, tp: TopicPartition, new: str) -> None:
        member = self.owner[tp]
        to_move = self.movements.partition_to_move(tp, member, new)
        substitute_owner = self.owner[to_move]
        if substitute_owner != member:
            self.move(tp, substitute_owner)
        self.move(to_move, new)

    def move(self, tp: TopicPartition, new: str) -> None:
        old = self.owner[tp]
        self._index_remove(old)
        self._index_remove(new)
        self.movements.move(tp, old, new)
        del self.current[old][tp]
        self.current[new][tp] = None
        self.owner[tp] = new
        self._hold(tp, old, -1)
        self._hold(tp, new, 1)
        self._index_add(new)
        self._index_add(old)
        self._touched()

    def balance_score(self) -> int:
        sizes = sorted(len(tps) for tps in self.current.values())
        n = len(sizes)
        return sum(size * (2 * i - n + 1) for i, size in enumerate(sizes))

    # ------------------------------------------------------------------ build

    def build(self) -> dict[str, list[TopicPartition]]:
        kept = self.keep_owned()
        all_sorted = self.sorted_all_partitions()
        if self.data.legacy_identical:
            all_sorted = self.legacy_sorted_partitions(all_sorted)
        unassigned = [tp for tp in all_sorted if tp not in kept]
        for member in self.subs:
            self._index_add(member)
        if not self.sorted:
            return {}
        initializing = self.count(self.sorted.last_member()) == 0
        self.assign_unassigned(unassigned)

        fixed_topics = {t for t, cs in self.topic_consumers.items() if len(cs) < 2}
        all_sorted = [tp for tp in all_sorted if tp.topic not in fixed_topics]
        unassigned = [tp for tp in unassigned if tp.topic not in fixed_topics]
        fixed: dict[str, dict[TopicPartition, None]] = {}
        for member in list(self.subs):
            if not self.can_participate(member):
                self._index_remove(member)
                fixed[member] = self.current.pop(member)
        self._touched()
        if self.current:
            before = {m: dict(tps) for m, tps in self.current.items()}
            before_owner = dict(self.owner)
            before_score = self.balance_score()
            if not self.revocation_required:
                self.perform_reassignments(unassigned)
            performed = self.perform_reassignments(all_sorted)
            if not initializing and performed and self.balance_score() >= before_score:
                self.current, self.owner = before, before_owner
        for member, tps in fixed.items():
            self.current[member] = tps
        return {m: list(self.current[m]) for m in self.subs}


def general_assign(data: GeneralStickyInput) -> dict[str, list[TopicPartition]]:
    """Run the general sticky algorithm; returns ``{member: partitions}``."""
    return _GeneralBuilder(data).build()
