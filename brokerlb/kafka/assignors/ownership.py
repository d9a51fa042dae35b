"""Who validly owns what before a rebalance (Java 3.x ``allSubscriptionsEqual``'s generation rules)."""

from __future__ import annotations

from dataclasses import dataclass

from brokerlb.kafka.assignors.snapshot import DEFAULT_GENERATION, GroupSnapshot, TopicPartition

__all__ = ["OwnerResolution", "resolve_owners"]


@dataclass(frozen=True)
class OwnerResolution:
    """Who validly owns what before the rebalance (``allSubscriptionsEqual``'s rules).

    * ``owned[member]``: partitions the member keeps claim to, in its listed
      order -- the partition exists, some member subscribes to its topic and no
      member of the same or a higher generation claims it too;
    * ``multi_owned``: partitions claimed by several members of the highest
      claiming generation -- invalid, treated as unowned;
    * ``previous_owner[tp]``: for ``generalAssign``'s ``prevAssignment``, the
      member of the highest generation below the group's maximum that claimed it.
    """

    owned: dict[str, list[TopicPartition]]
    multi_owned: frozenset[TopicPartition]
    previous_owner: dict[TopicPartition, tuple[str, int]]
    max_generation: int

    def owner_of(self) -> dict[TopicPartition, str]:
        return {tp: m for m, tps in self.owned.items() for tp in tps}


def resolve_owners(group: GroupSnapshot) -> OwnerResolution:
    counts = group.partitions_per_topic()
    members = group.sorted_members()
    max_generation = max((m.generation_or_default for m in members), default=DEFAULT_GENERATION)
    first: dict[TopicPartition, tuple[int, str]] = {}  # the only claim, in the usual case
    conflicts: dict[TopicPartition, list[tuple[int, str]]] = {}
    previous: dict[TopicPartition, tuple[str, int]] = {}
    for m in members:
        gen = m.generation_or_default
        for tp in m.owned:
            if 0 <= tp.partition < counts.get(tp.topic, 0):
                claim = (gen, m.member_id)
                if tp in first:
                    conflicts.setdefault(tp, [first[tp]]).append(claim)
                else:
                    first[tp] = claim
            if gen < max_generation:
                best = previous.get(tp)
                if best is None or gen > best[1]:
                    previous[tp] = (m.member_id, gen)
    winner = {tp: claim[1] for tp, claim in first.items() if tp not in conflicts}
    multi: set[TopicPartition] = set()
    for tp, cl in conflicts.items():
        top = max(g for g, _ in cl)
        at_top = [mid for g, mid in cl if g == top]
        if len(at_top) == 1:
            winner[tp] = at_top[0]
        else:
            multi.add(tp)
    owned = {m.member_id: [tp for tp in m.owned if winner.get(tp) == m.member_id] for m in members}
    return OwnerResolution(owned, frozenset(multi), previous, max_generation)
