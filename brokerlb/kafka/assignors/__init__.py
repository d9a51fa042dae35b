"""Consumer-group assignors: pure functions ``GroupSnapshot -> GroupAssignment``, one module each.

Classic protocol (client-side, ``partition.assignment.strategy``):

* ``range`` -- :class:`RangeAssignor` (eager)
* ``roundrobin`` -- :class:`RoundRobinAssignor` (eager)
* ``sticky`` -- :class:`StickyAssignor` (eager)
* ``cooperative-sticky`` -- :class:`CooperativeStickyAssignor` (cooperative)
* ``load-aware`` -- :class:`LoadAwareAssignor` (cooperative by default)

KIP-848 consumer protocol (server-side, ``group.consumer.assignors``):

* ``uniform`` -- :class:`UniformAssignor` (balanced, then minimal moves)
* ``range-server`` -- :class:`ServerRangeAssignor` (Kafka's server-side ``range``)

The model: :mod:`.snapshot` (input), :mod:`.result` (output), :mod:`.ownership`
(previous owners), :mod:`.interface` (:class:`PartitionAssignor`, the protocol
every entry of :data:`ASSIGNORS` satisfies).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from brokerlb.errors import UnknownStrategyError
from brokerlb.kafka.assignors.cooperative_sticky import CooperativeStickyAssignor
from brokerlb.kafka.assignors.interface import PartitionAssignor, RebalanceProtocol
from brokerlb.kafka.assignors.load_aware import LoadAwareAssignor, member_loads, partition_rates
from brokerlb.kafka.assignors.ownership import OwnerResolution, resolve_owners
from brokerlb.kafka.assignors.range import RangeAssignor, range_for_position
from brokerlb.kafka.assignors.range_server import ServerRangeAssignor
from brokerlb.kafka.assignors.result import GroupAssignment, finish_assignment
from brokerlb.kafka.assignors.roundrobin import RoundRobinAssignor
from brokerlb.kafka.assignors.snapshot import (
    DEFAULT_GENERATION,
    GroupSnapshot,
    Member,
    TopicPartition,
    java_order,
    member_order,
)
from brokerlb.kafka.assignors.sticky import StickyAssignor, sticky_target
from brokerlb.kafka.assignors.uniform import UniformAssignor, uniform_target

__all__ = [
    "ASSIGNORS",
    "DEFAULT_GENERATION",
    "CooperativeStickyAssignor",
    "GroupAssignment",
    "GroupSnapshot",
    "LoadAwareAssignor",
    "Member",
    "OwnerResolution",
    "PartitionAssignor",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "ServerRangeAssignor",
    "StickyAssignor",
    "TopicPartition",
    "UniformAssignor",
    "finish_assignment",
    "get_assignor",
    "java_order",
    "member_loads",
    "member_order",
    "partition_rates",
    "range_for_position",
    "resolve_owners",
    "sticky_target",
    "uniform_target",
]

#: Assignor name -> factory (its keyword options are the assignor's config).
ASSIGNORS: dict[str, Callable[..., PartitionAssignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
    "load-aware": LoadAwareAssignor,
    "uniform": UniformAssignor,
    "range-server": ServerRangeAssignor,
}


def get_assignor(name: str, **options: Any) -> PartitionAssignor:
    """The assignor called ``name``, built with ``options``; unknown names raise ``UnknownStrategyError``."""
    cls = ASSIGNORS.get(name)
    if cls is None:
        raise UnknownStrategyError(name, "assignor", list(ASSIGNORS))
    return cls(**options)
