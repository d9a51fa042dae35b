"""Load-aware assignor (beyond Kafka): balance measured partition rates, not counts, and stay sticky.

Why: Kafka's assignors balance partition *counts*; one hot partition makes its
consumer the bottleneck however evenly the counts fall. This assignor balances
the sum of the partitions' measured rates (messages or bytes per second, from
the snapshot's ``rates``) per member, and moves as little as possible.

Steps:

1. keep every valid owned partition whose topic the owner still subscribes to;
2. place the other partitions heaviest first, each on the subscribed member
   with the lowest (load, partition count, member id) -- LPT scheduling;
3. local search: take the most loaded member; move one of its partitions (rate
   ``r > 0``) to the least loaded member subscribed to that topic when the
   receiver stays more than ``tolerance`` below the donor's current load
   (``receiver + r < donor - tolerance``); choose the partition whose move
   lowers the larger of the two loads most, prefer one placed in step 2, then
   the smallest id; repeat until no member has such a move.

The result satisfies the checker's load condition with the same ``tolerance``
(:meth:`LoadAwareAssignor.tolerance_for`): no partition could move to another
subscribed member and leave it more than ``tolerance`` below the donor. Each
move strictly lowers the sum of squared loads, so the search ends.

Rates: a topic without rates gets the mean of all given rates per partition
(1.0 if none are given), so with no rates at all this balances counts.

Config (constructor): ``tolerance_ratio`` (0.05) -- hysteresis as a fraction of
the mean member load, so small rate changes between rebalances do not move
partitions back and forth; ``cooperative`` (True) -- withhold moving partitions
for a follow-up round as KIP-429 does.

Worked example: t0 rates [10, 1, 1, 1, 1]; A and B fresh. Heaviest first: A gets
p0 (10), then B gets p1..p4 (4). Loads 10 / 4: moving p0 would give 0 / 14,
worse, so that is final -- count-based assignors would give A three partitions
(10 + 1 + 1 = 12) and B two (2).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from brokerlb.errors import InvalidConfigError
from brokerlb.kafka.assignors.interface import RebalanceProtocol
from brokerlb.kafka.assignors.ownership import OwnerResolution, resolve_owners
from brokerlb.kafka.assignors.result import GroupAssignment, finish_assignment
from brokerlb.kafka.assignors.snapshot import GroupSnapshot, TopicPartition, java_order

__all__ = ["LoadAwareAssignor", "partition_rates", "member_loads"]


def partition_rates(group: GroupSnapshot) -> dict[TopicPartition, float]:
    """The rate of every subscribed partition, filling topics without rates with the mean."""
    given = [r for rates in group.rates.values() for r in rates]
    default = sum(given) / len(given) if given else 1.0
    out: dict[TopicPartition, float] = {}
    for tp in group.all_partitions():
        rate = group.rate(tp)
        out[tp] = default if rate is None else rate
    return out


def member_loads(
    assignment: Mapping[str, Iterable[TopicPartition]], rates: Mapping[TopicPartition, float]
) -> dict[str, float]:
    return {m: sum(rates[tp] for tp in tps) for m, tps in assignment.items()}


@dataclass
class _Member:
    member_id: str
    key: bytes
    topics: frozenset[str]
    load: float = 0.0
    count: int = 0

    def order(self) -> tuple[float, int, bytes]:
        return (self.load, self.count, self.key)


class _Placement:
    """Mutable assignment with per-class min lookups and per-member rate-sorted partitions."""

    def __init__(self, group: GroupSnapshot, rates: Mapping[TopicPartition, float]) -> None:
        self.rates = rates
        per_topic = group.partitions_per_topic()
        self.members = {
            mid: _Member(mid, java_order(mid), frozenset(t for t in m.topics if t in per_topic))
            for mid, m in group.members.items()
        }
        # members grouped by subscription; each class kept sorted by (load, count, id)
        self.classes: dict[frozenset[str], list[tuple[float, int, bytes, str]]] = {}
        for m in self.members.values():
            self.classes.setdefault(m.topics, []).append((m.load, m.count, m.key, m.member_id))
        for entries in self.classes.values():
            entries.sort()
        self.classes_of_topic: dict[str, list[frozenset[str]]] = {t: [] for t in per_topic}
        for topics in self.classes:
            for t in topics:
                self.classes_of_topic[t].append(topics)
        self.owner: dict[TopicPartition, str] = {}
        # member -> topic -> sorted [(rate, tp)]
        self.held: dict[str, dict[str, list[tuple[float, TopicPartition]]]] = {m: {} for m in self.members}

    # bulk phase: place without keeping the sorted indexes, then rebuild them once

    def _record(self, tp: TopicPartition, m: _Member) -> None:
        rate = self.rates[tp]
        m.load += rate
        m.count += 1
        self.held[m.member_id].setdefault(tp.topic, []).append((rate, tp))
        self.owner[tp] = m.member_id

    def keep(self, tp: TopicPartition, member_id: str) -> None:
        self._record(tp, self.members[member_id])

    def place_greedily(self, partitions: Iterable[TopicPartition]) -> None:
        """Each partition (in the given order) to the least loaded subscribed member (LPT)."""
        heaps: dict[frozenset[str], list[tuple[float, int, bytes, str]]] = {cls: [] for cls in self.classes}
        for m in self.members.values():
            heaps[m.topics].append(m.order() + (m.member_id,))
        for heap in heaps.values():
            heapq.heapify(heap)
        for tp in partitions:
            best: tuple[float, int, bytes, str] | None = None
            best_heap: list[tuple[float, int, bytes, str]] | None = None
            for cls in self.classes_of_topic.get(tp.topic, ()):
                heap = heaps[cls]
                if heap and (best is None or heap[0] < best):
                    best, best_heap = heap[0], heap
            if best is None or best_heap is None:
                continue
            m = self.members[best[3]]
            self._record(tp, m)
            heapq.heapreplace(best_heap, m.order() + (m.member_id,))

    def rebuild_indexes(self) -> None:
        for by_topic in self.held.values():
            for lst in by_topic.values():
                lst.sort()
        for entries in self.classes.values():
            entries.clear()
        for m in self.members.values():
            self.classes[m.topics].append(m.order() + (m.member_id,))
        for entries in self.classes.values():
            entries.sort()

    # incremental phase: keep the indexes sorted

    def _reindex(self, m: _Member, load: float, count: int) -> None:
        entries = self.classes[m.topics]
        old = (m.load, m.count, m.key, m.member_id)
        del entries[bisect.bisect_left(entries, old)]
        m.load, m.count = load, count
        bisect.insort(entries, (m.load, m.count, m.key, m.member_id))

    def place(self, tp: TopicPartition, member_id: str) -> None:
        m = self.members[member_id]
        rate = self.rates[tp]
        self._reindex(m, m.load + rate, m.count + 1)
        bisect.insort(self.held[member_id].setdefault(tp.topic, []), (rate, tp))
        self.owner[tp] = member_id

    def remove(self, tp: TopicPartition) -> None:
        member_id = self.owner.pop(tp)
        m = self.members[member_id]
        rate = self.rates[tp]
        self._reindex(m, m.load - rate, m.count - 1)
        lst = self.held[member_id][tp.topic]
        del lst[bisect.bisect_left(lst, (rate, tp))]

    def least_loaded(self, topic: str, exclude: str | None = None) -> _Member | None:
        best: tuple[float, int, bytes, str] | None = None
        for cls in self.classes_of_topic.get(topic, ()):
            for entry in self.classes[cls][:2]:
                if entry[3] != exclude:
                    if best is None or entry < best:
                        best = entry
                    break
        return None if best is None else self.members[best[3]]


class LoadAwareAssignor:
    name = "load-aware"

    def __init__(self, tolerance_ratio: float = 0.05, cooperative: bool = True) -> None:
        if not 0.0 <= tolerance_ratio < 1.0:
            raise InvalidConfigError("tolerance_ratio", tolerance_ratio, "must be in [0, 1)")
        self.tolerance_ratio = tolerance_ratio
        self.cooperative = cooperative

    @property
    def protocol(self) -> RebalanceProtocol:
        return RebalanceProtocol.COOPERATIVE if self.cooperative else RebalanceProtocol.EAGER

    def tolerance_for(
        self, group: GroupSnapshot, rates: Mapping[TopicPartition, float] | None = None
    ) -> float:
        """The absolute hysteresis: ``tolerance_ratio`` x mean load per member (tiny floor)."""
        rates = rates if rates is not None else partition_rates(group)
        members = [m for m in group.members.values() if any(t in group.partitions for t in m.topics)]
        mean = sum(rates.values()) / len(members) if members else 0.0
        return max(self.tolerance_ratio * mean, 1e-9 * max(mean, 1.0))

    def assign(self, group: GroupSnapshot) -> GroupAssignment:
        owners = resolve_owners(group)
        return finish_assignment(
            group, self.target(group, owners), cooperative=self.cooperative, owners=owners
        )

    def target(
        self, group: GroupSnapshot, owners: OwnerResolution | None = None
    ) -> dict[str, list[TopicPartition]]:
        rates = partition_rates(group)
        placement = _Placement(group, rates)
        tolerance = self.tolerance_for(group, rates)
        kept: set[TopicPartition] = set()
        owners = owners if owners is not None else resolve_owners(group)
        for mid, tps in owners.owned.items():
            for tp in tps:
                if tp.topic in placement.members[mid].topics:
                    placement.keep(tp, mid)
                    kept.add(tp)
        fresh = sorted((tp for tp in rates if tp not in kept), key=lambda tp: (-rates[tp], tp))
        placement.place_greedily(fresh)
        placement.rebuild_indexes()
        _improve(placement, kept, tolerance)
        out: dict[str, list[TopicPartition]] = {mid: [] for mid in group.members}
        for tp, mid in placement.owner.items():
            out[mid].append(tp)
        return {mid: sorted(tps) for mid, tps in out.items()}


def _best_move(
    p: _Placement, donor: _Member, kept: set[TopicPartition], tolerance: float
) -> tuple[TopicPartition, str] | None:
    best: tuple[float, int, TopicPartition, str] | None = None
    for topic, held in p.held[donor.member_id].items():
        if not held:
            continue
        receiver = p.least_loaded(topic, exclude=donor.member_id)
        if receiver is None:
            continue
        gap = donor.load - receiver.load
        limit = gap - tolerance  # need 0 < rate < limit
        if limit <= 0:
            continue
        # new max = donor - r for r <= gap/2 (best: the largest such r), receiver + r above (best: the
        # smallest such r); so look at the two partitions around min(gap/2, limit)
        i = bisect.bisect_left(held, (min(gap / 2.0, limit),))
        for j in (i - 1, i):
            if not 0 <= j < len(held):
                continue
            rate, tp = held[j]
            if not 0 < rate < limit:
                continue
            new_max = max(donor.load - rate, receiver.load + rate)
            candidate = (new_max, 1 if tp in kept else 0, tp, receiver.member_id)
            if best is None or candidate < best:
                best = candidate
    return None if best is None else (best[2], best[3])


def _improve(p: _Placement, kept: set[TopicPartition], tolerance: float) -> None:
    while True:
        moved = False
        heap = [(-m.load, m.key, m.member_id) for m in p.members.values()]
        heapq.heapify(heap)
        while heap:
            neg_load, _, mid = heapq.heappop(heap)
            donor = p.members[mid]
            if -neg_load != donor.load:
                continue  # stale entry
            move = _best_move(p, donor, kept, tolerance)
            if move is None:
                continue
            tp, receiver = move
            p.remove(tp)
            p.place(tp, receiver)
            moved = True
            for m in (donor, p.members[receiver]):
                heapq.heappush(heap, (-m.load, m.key, m.member_id))
        if not moved:
            return
