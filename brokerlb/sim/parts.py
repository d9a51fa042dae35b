"""What the parts of a :class:`~brokerlb.sim.simulation.Simulation` share.

The simulation is split by role -- the loop (:mod:`brokerlb.sim.simulation`), the leader's
duties (:mod:`brokerlb.sim.leadership`) and the cluster's life between cycles
(:mod:`brokerlb.sim.lifecycle`) -- over one set of attributes, declared here for readers and
type checkers and set by ``Simulation.__init__``.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from brokerlb.clock import ManualClock
    from brokerlb.config import ServiceConfig
    from brokerlb.loadbalance.broker_lookup import BrokerLookupData
    from brokerlb.loadbalance.cycle import LeaderSchedule
    from brokerlb.loadbalance.leader import ClusterInputs, Leader
    from brokerlb.loadbalance.policies import NamespacePolicy
    from brokerlb.model import BundleData
    from brokerlb.sim.brokers import BundleTraffic, ReportWriter, SimBroker
    from brokerlb.sim.leadership import LeaderFactory
    from brokerlb.sim.ownership import Move, OwnershipTable
    from brokerlb.sim.resources import Capacities, ResourceModel
    from brokerlb.sim.spec import Scenario
    from brokerlb.sim.timeline import Timeline
    from brokerlb.sim.topology import Topology
    from brokerlb.sim.workloads import TopicTraffic

__all__ = ["SimulationParts"]


class SimulationParts:
    """Shared state of the simulation's parts (declarations only)."""

    scenario: Scenario
    config: ServiceConfig
    clock: ManualClock
    validate: bool
    history: Any
    topology: Topology
    ownership: OwnershipTable
    timeline: Timeline
    brokers: list[SimBroker]
    broker_index: dict[str, int]
    broker_ids: list[str]
    anti_affinity: dict[str, str]
    caps: Capacities
    model: ResourceModel
    writer: ReportWriter
    leader: Leader | None
    engine_seconds: float
    engine_phases: dict[str, list[float]]
    refreshes: int
    _leader_factory: LeaderFactory
    _leader_broker: int
    _leader_seed: int
    _registration_order: list[int]
    _stored_bundle_data: dict[str, BundleData]
    _schedule: LeaderSchedule | None
    _reports_changed: bool
    _structure_changed: bool
    _change_version: int
    _inputs_version: int
    _last_refresh_ms: float
    _cached_inputs: ClusterInputs | None
    #: the leader's inputs that change only with registrations or bundles, with their keys
    _lookup_inputs: tuple[tuple[str, ...], dict[str, BrokerLookupData]] | None
    _policy_inputs: tuple[tuple[int, ...], dict[str, NamespacePolicy]] | None
    _cycle: int
    _cycle_decisions: Counter[str]
    _cycle_moves: list[Move]
    _cycle_splits: int
    _bundle_traffic: BundleTraffic | None
    #: the topics' traffic of the last sample (a split child's moved throughput)
    _topic_traffic: TopicTraffic | None
    _lookup_attempts: dict[int, int]

    @property
    def now_ms(self) -> int:
        return self.clock.now_ms()

    def _mark_changed(self, *, structure: bool = False) -> None:
        """Something the leader reads changed: a report (``structure=False``), or the brokers or
        bundles themselves (registration, departure, split)."""
        if structure:
            self._structure_changed = True
        else:
            self._reports_changed = True
        self._change_version += 1

    # provided by the leader's duties (brokerlb.sim.leadership)
    @property
    def leader_available(self) -> bool:
        raise NotImplementedError

    def _elect_leader(self) -> None:
        raise NotImplementedError

    def _inputs(self) -> ClusterInputs:
        raise NotImplementedError

    def _ensure_refreshed(self, inputs: ClusterInputs) -> bool:
        raise NotImplementedError

    def _phase(self, name: str, started: float) -> None:
        raise NotImplementedError

    # provided by the cluster's life cycle (brokerlb.sim.lifecycle)
    def _throughput_of(self, b: int) -> float:
        raise NotImplementedError
