"""What an assignor answers: :class:`GroupAssignment`, and :func:`finish_assignment` that builds it from a target."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from brokerlb.kafka.assignors.ownership import OwnerResolution, resolve_owners
from brokerlb.kafka.assignors.snapshot import GroupSnapshot, TopicPartition, by_topic

__all__ = ["GroupAssignment", "finish_assignment"]


@dataclass(frozen=True)
class GroupAssignment:
    """An assignor's answer.

    * ``assignment``: what each member is given *this round*;
    * ``pending``: partitions withheld this round because another member still
      owns them (cooperative protocol: assigned in the follow-up round);
    * ``revoked``: partitions each member owned and does not keep;
    * ``moved``: partitions whose owner changes (validly owned before, a
      different member in the target).
    """

    assignment: dict[str, list[TopicPartition]]
    revoked: dict[str, list[TopicPartition]]
    pending: dict[str, list[TopicPartition]]
    moved: int

    def target(self) -> dict[str, list[TopicPartition]]:
        """Where every partition ends up once the follow-up round (if any) is done."""
        return {m: sorted(tps + self.pending.get(m, [])) for m, tps in self.assignment.items()}

    def to_json(self) -> dict[str, Any]:
        return {
            "assignment": {m: by_topic(tps) for m, tps in self.assignment.items()},
            "moved": self.moved,
            "revoked": {m: by_topic(tps) for m, tps in self.revoked.items() if tps},
            "pending": {m: by_topic(tps) for m, tps in self.pending.items() if tps},
        }


def finish_assignment(
    group: GroupSnapshot,
    target: Mapping[str, Iterable[TopicPartition]],
    cooperative: bool = False,
    owners: OwnerResolution | None = None,
) -> GroupAssignment:
    """Turn a target ``{member: partitions}`` into a :class:`GroupAssignment`.

    ``moved`` counts partitions whose target owner differs from the valid owner
    before the rebalance. With ``cooperative``, a partition is withheld from its
    target owner this round (``pending``) while any *other* member still claims
    it -- CooperativeStickyAssignor's ``adjustAssignment``.
    """
    previous = (owners if owners is not None else resolve_owners(group)).owner_of()
    claimants: dict[TopicPartition, set[str]] = {}
    if cooperative:
        for mid, member in group.members.items():
            for tp in member.owned:
                claimants.setdefault(tp, set()).add(mid)
    assignment: dict[str, list[TopicPartition]] = {}
    pending: dict[str, list[TopicPartition]] = {}
    kept_by: dict[str, set[TopicPartition]] = {}
    moved = 0
    for mid in group.members:
        now: list[TopicPartition] = []
        later: list[TopicPartition] = []
        for tp in sorted(target.get(mid, ())):
            before = previous.get(tp)
            if before is not None and before != mid:
                moved += 1
            if cooperative and claimants.get(tp, set()) - {mid}:
                later.append(tp)
            else:
                now.append(tp)
        assignment[mid] = now
        pending[mid] = later
        kept_by[mid] = set(now)
    revoked = {
        mid: [tp for tp in group.members[mid].owned if tp not in kept_by[mid]] for mid in group.members
    }
    return GroupAssignment(assignment, revoked, pending, moved)
