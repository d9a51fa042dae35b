"""Consumer-group assignors: pure functions ``GroupSnapshot -> GroupAssignment``, one module each.

* ``range`` -- :class:`RangeAssignor` (eager)
* ``roundrobin`` -- :class:`RoundRobinAssignor` (eager)
* ``sticky`` -- :class:`StickyAssignor` (eager)
* ``cooperative-sticky`` -- :class:`CooperativeStickyAssignor` (cooperative)
* ``load-aware`` -- :class:`LoadAwareAssignor` (cooperative by default)
"""

from __future__ import annotations

from typing import Any

from brokerlb.errors import UnknownStrategyError
from brokerlb.kafka.assignors.base import (
    DEFAULT_GENERATION,
    GroupAssignment,
    GroupSnapshot,
    Member,
    PartitionAssignor,
    RebalanceProtocol,
    TopicPartition,
    finish_assignment,
    java_order,
    member_order,
    resolve_owners,
)
from brokerlb.kafka.assignors.cooperative_sticky import CooperativeStickyAssignor
from brokerlb.kafka.assignors.load_aware import LoadAwareAssignor, member_loads, partition_rates
from brokerlb.kafka.assignors.range import RangeAssignor, range_for_position
from brokerlb.kafka.assignors.roundrobin import RoundRobinAssignor
from brokerlb.kafka.assignors.sticky import StickyAssignor, sticky_target

__all__ = [
    "ASSIGNORS",
    "DEFAULT_GENERATION",
    "CooperativeStickyAssignor",
    "GroupAssignment",
    "GroupSnapshot",
    "LoadAwareAssignor",
    "Member",
    "PartitionAssignor",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "TopicPartition",
    "finish_assignment",
    "get_assignor",
    "java_order",
    "member_loads",
    "member_order",
    "partition_rates",
    "range_for_position",
    "resolve_owners",
    "sticky_target",
]

#: ``partition.assignment.strategy`` short name -> assignor class.
ASSIGNORS: dict[str, type] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
    "load-aware": LoadAwareAssignor,
}


def get_assignor(name: str, **options: Any) -> PartitionAssignor:
    """The assignor called ``name``, built with ``options``; unknown names raise ``UnknownStrategyError``."""
    cls = ASSIGNORS.get(name)
    if cls is None:
        raise UnknownStrategyError(name, "assignor", list(ASSIGNORS))
    assignor: PartitionAssignor = cls(**options)
    return assignor
