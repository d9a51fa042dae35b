"""Placement: which broker gets an unowned bundle (pure core: no I/O, no clock).

Entry points:

* :func:`select_broker_for_assignment` (``view, bundle, state, rng, *, strategy=None,
  non_persistent=False``) -- what the leader answers for a bundle (planner ``place``);
* :func:`place_bundle` / :class:`PlacementContext` -- the same with preallocation, for many
  placements between two refreshes;
* unload checks for the shedding loop: :func:`should_namespace_policies_unload`,
  :func:`should_anti_affinity_namespace_unload`, :func:`anti_affinity_can_unload`,
  :func:`has_placement_policies`.

Building blocks (Pulsar's ``LoadManagerShared`` and filters): :mod:`.isolation`,
:mod:`.anti_affinity`, :mod:`.filters`, :mod:`.semver`, and the strategies in
:mod:`.strategies` (``LeastLongTermMessageRate``, ``LeastResourceUsageWithWeight`` modular and
extensible, ``RoundRobinBrokerSelector``; ``AvgShedder`` lives with the shedders).
"""

from brokerlb.loadbalance.placement.context import PlacementContext, context_for
from brokerlb.loadbalance.placement.pipeline import (
    heartbeat_or_sla_broker,
    place_bundle,
    select_broker_for_assignment,
)
from brokerlb.loadbalance.placement.unload_checks import (
    anti_affinity_can_unload,
    has_placement_policies,
    should_anti_affinity_namespace_unload,
    should_namespace_policies_unload,
)

__all__ = [
    "PlacementContext",
    "anti_affinity_can_unload",
    "context_for",
    "has_placement_policies",
    "heartbeat_or_sla_broker",
    "place_bundle",
    "select_broker_for_assignment",
    "should_anti_affinity_namespace_unload",
    "should_namespace_policies_unload",
]
