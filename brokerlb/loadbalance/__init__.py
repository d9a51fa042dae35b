"""The load-balancing decision engine (pure core: no I/O, no wall clock, no asyncio).

Shared contract (used by shedding, placement, split, the planner, the simulator, the broker
service's leader loop and the Spark backtests):

* :mod:`~brokerlb.loadbalance.decisions` -- :class:`Label`, :class:`Reason`,
  :class:`UnloadDecision`, :class:`SplitDecision`, :class:`MergeDecision`, :class:`PlacementDecision`,
  :class:`SheddingResult`, :class:`SplitResult`;
* :mod:`~brokerlb.loadbalance.view` -- :class:`ClusterView`, the read-only input of every strategy;
* :mod:`~brokerlb.loadbalance.snapshot` -- snapshot JSON <-> view (docs/snapshot.md);
* :mod:`~brokerlb.loadbalance.state` -- :class:`StrategyState` (memory between cycles), :func:`new_rng`;
* :mod:`~brokerlb.loadbalance.registry` -- strategies by Pulsar class name or short name;
* :mod:`~brokerlb.loadbalance.interfaces` -- the three strategy roles (protocols);
* :mod:`~brokerlb.loadbalance.refresh` -- the modular leader's ``updateAll``;
* :mod:`~brokerlb.loadbalance.shedding` -- shedding strategies and the leader's loop;
* :mod:`~brokerlb.loadbalance.planner` -- the offline planner (``brokerlb plan``).
"""

from brokerlb.loadbalance.broker_lookup import BrokerLookupData
from brokerlb.loadbalance.decisions import (
    Label,
    MergeDecision,
    PlacementDecision,
    Reason,
    SheddingResult,
    SplitDecision,
    SplitResult,
    UnloadDecision,
)
from brokerlb.loadbalance.policies import (
    AutoFailoverPolicy,
    FailureDomain,
    NamespaceIsolationData,
    NamespacePolicy,
)
from brokerlb.loadbalance.registry import (
    StrategyKind,
    StrategySpec,
    default_strategy_name,
    known_names,
    resolve,
)
from brokerlb.loadbalance.snapshot import load_snapshot, parse_snapshot, snapshot_to_json
from brokerlb.loadbalance.state import DEFAULT_SEED, StrategyState, new_rng
from brokerlb.loadbalance.view import ClusterView

__all__ = [
    "AutoFailoverPolicy",
    "BrokerLookupData",
    "ClusterView",
    "DEFAULT_SEED",
    "FailureDomain",
    "Label",
    "MergeDecision",
    "NamespaceIsolationData",
    "NamespacePolicy",
    "PlacementDecision",
    "Reason",
    "SheddingResult",
    "SplitDecision",
    "SplitResult",
    "StrategyKind",
    "StrategySpec",
    "StrategyState",
    "UnloadDecision",
    "default_strategy_name",
    "known_names",
    "load_snapshot",
    "new_rng",
    "parse_snapshot",
    "resolve",
    "snapshot_to_json",
]
