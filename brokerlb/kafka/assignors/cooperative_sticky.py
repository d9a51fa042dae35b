"""CooperativeSticky assignor (KIP-429, ``partition.assignment.strategy=cooperative-sticky``).

Goal: the sticky target, reached without a stop-the-world pause. Members keep
their partitions across the rebalance; a partition whose target owner differs
from its current owner is *withheld* this round: the current owner sees it
disappear from its assignment and revokes it, then rejoins, and the follow-up
rebalance gives it to the new owner (``CooperativeStickyAssignor.adjustAssignment``).

The result's ``assignment`` is this round's answer, ``pending`` the partitions
withheld for the follow-up round, ``revoked`` what each member gives up now.
A partition is withheld from member X whenever another member still claims it
(whatever its generation) -- for claims by two members of the same generation
Java's general path would hand it to one of the claimants at once; we wait for
both to revoke.

Worked example: t0 with 2 partitions owned by A; B joins. Target A [t0-0],
B [t0-1]. Round 1: A [t0-0] (revokes t0-1), B [] with t0-1 pending; round 2
(A no longer owns t0-1): A [t0-0], B [t0-1].
"""

from __future__ import annotations

from brokerlb.kafka.assignors.interface import RebalanceProtocol
from brokerlb.kafka.assignors.ownership import resolve_owners
from brokerlb.kafka.assignors.result import GroupAssignment, finish_assignment
from brokerlb.kafka.assignors.snapshot import GroupSnapshot
from brokerlb.kafka.assignors.sticky import sticky_target

__all__ = ["CooperativeStickyAssignor"]


class CooperativeStickyAssignor:
    name = "cooperative-sticky"
    protocol = RebalanceProtocol.COOPERATIVE

    def __init__(self, constrained: bool = True) -> None:
        self.constrained = constrained

    def assign(self, group: GroupSnapshot) -> GroupAssignment:
        owners = resolve_owners(group)
        return finish_assignment(
            group, sticky_target(group, self.constrained, owners), cooperative=True, owners=owners
        )
