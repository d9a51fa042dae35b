"""The assignor interface: what every registered assignor is.

An assignor is a pure function ``GroupSnapshot -> GroupAssignment``: no I/O, no
clock, no randomness; the same snapshot gives the same answer whatever the order
of its members and topics. It has a name (the ``partition.assignment.strategy``
short name, or the server-side assignor name) and says which rebalance protocol
its answer is meant for. ``tests/kafka/test_assignor_interface.py`` checks that
every entry of :data:`brokerlb.kafka.assignors.ASSIGNORS` satisfies
:class:`PartitionAssignor`.
"""

from __future__ import annotations

import enum
from typing import Protocol, runtime_checkable

from brokerlb.kafka.assignors.result import GroupAssignment
from brokerlb.kafka.assignors.snapshot import GroupSnapshot

__all__ = ["PartitionAssignor", "RebalanceProtocol"]


class RebalanceProtocol(enum.Enum):
    """How an assignor's answer reaches the members.

    * ``EAGER`` / ``COOPERATIVE`` -- KIP-429 (``group.protocol=classic``): eager
      members revoke everything before the rebalance, cooperative ones only what
      moves (the assignor withholds partitions still owned elsewhere: ``pending``);
    * ``CONSUMER`` -- KIP-848 (``group.protocol=consumer``): a server-side
      assignor computes the *target* only; the group coordinator's reconciliation
      hands a partition to its new owner once the old one has revoked it
      (:mod:`brokerlb.kafka.group.reconciliation`), so ``pending`` stays empty.
    """

    EAGER = "EAGER"
    COOPERATIVE = "COOPERATIVE"
    CONSUMER = "CONSUMER"


@runtime_checkable
class PartitionAssignor(Protocol):
    """One assignor: a registry name, the protocol its answer is for, and a pure ``assign``.

    ``assign`` must not mutate the snapshot and must be deterministic: the answer
    depends on the snapshot's content only (members and topics are sorted inside).
    """

    @property
    def name(self) -> str:
        """The registry name (``ASSIGNORS`` key)."""

    @property
    def protocol(self) -> RebalanceProtocol:
        """The rebalance protocol the answer is meant for."""

    def assign(self, group: GroupSnapshot) -> GroupAssignment: ...
