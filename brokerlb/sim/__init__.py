"""The cluster simulator: what a load-balancing strategy would do, before it runs on a real cluster.

A discrete-time simulation on an injected clock (:class:`~brokerlb.clock.ManualClock`):
brokers with capacities, namespaces, bundles and topics carrying seeded workloads, brokers
writing load reports by the real report-update rule, and the real decision engine
(:mod:`brokerlb.loadbalance`) as the leader -- refresh, shedding, split, placement, grace
periods, preallocation -- with ownership moving through the real state machine
(:mod:`brokerlb.ownership`) after modelled unload, transfer and lookup delays.

Entry points (all inputs and outputs are picklable; no global state):

* :func:`run_scenario` -- one scenario, one strategy -> :class:`SimulationResult`;
* :func:`compare` -- one scenario, several strategies (same seed, same traffic);
* :func:`load_scenario` / :func:`parse_scenario` / :func:`resolve_scenario` -- scenarios
  from YAML, data, or the library (:func:`list_scenarios`);
* :class:`RecordedWorkload` -- replay recorded topic stats instead of a synthetic workload;
* :class:`Simulation` -- step by step, for tests and notebooks;
* :func:`write_report` (in :mod:`brokerlb.sim.report`) -- summary table, PNG plots, HTML.
"""

from brokerlb.sim.library import SCENARIO_DIR, ScenarioInfo, list_scenarios, resolve_scenario
from brokerlb.sim.loader import apply_settings, load_scenario, parse_scenario, scenario_to_dict
from brokerlb.sim.recorded import RecordedWorkload
from brokerlb.sim.result import SimulationResult
from brokerlb.sim.runner import compare, run_scenario
from brokerlb.sim.simulation import Simulation
from brokerlb.sim.spec import (
    AddBroker,
    BrokerSpec,
    DiurnalSpec,
    FailBroker,
    HotTopic,
    NamespaceGrowth,
    NamespaceSpec,
    ResourceModelSpec,
    RestartBroker,
    ScaleTraffic,
    Scenario,
    SetConfig,
    TimingSpec,
    WorkloadSpec,
)
from brokerlb.sim.strategies import strategy_label, strategy_overrides

__all__ = [
    "SCENARIO_DIR",
    "AddBroker",
    "BrokerSpec",
    "DiurnalSpec",
    "FailBroker",
    "HotTopic",
    "NamespaceGrowth",
    "NamespaceSpec",
    "RecordedWorkload",
    "ResourceModelSpec",
    "RestartBroker",
    "ScaleTraffic",
    "Scenario",
    "ScenarioInfo",
    "SetConfig",
    "Simulation",
    "SimulationResult",
    "TimingSpec",
    "WorkloadSpec",
    "apply_settings",
    "compare",
    "list_scenarios",
    "load_scenario",
    "parse_scenario",
    "resolve_scenario",
    "run_scenario",
    "scenario_to_dict",
    "strategy_label",
    "strategy_overrides",
]
