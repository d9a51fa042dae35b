"""The simulated leader: the real decision engine (:mod:`brokerlb.loadbalance`) behind a thin adapter.

The simulator never decides anything itself. Each leader operation builds a
:class:`~brokerlb.loadbalance.ClusterView` from what a Pulsar leader would read -- the
registered brokers' reports, the extensible load data and top bundles, the broker
registry, the ownership channel, namespace policies -- and calls the engine:

* :meth:`SimLeader.refresh` -- Pulsar's ``updateAll`` (:func:`brokerlb.loadbalance.refresh.refresh`);
* :meth:`SimLeader.shed` -- the leader's shedding loop around the configured strategy
  (:func:`brokerlb.loadbalance.shedding.loop.run_shedding_cycle`), then records the unloads
  (``recentlyUnloadedBundles`` / ``recentlyUnloadedBrokers``) as the leader does after executing them;
* :meth:`SimLeader.split` -- the split check (:func:`brokerlb.loadbalance.split.find_bundles_to_split`);
* :meth:`SimLeader.place` -- the placement pipeline
  (:func:`brokerlb.loadbalance.placement.pipeline.select_broker_for_assignment`).

Everything the strategies remember between cycles lives in one
:class:`~brokerlb.loadbalance.StrategyState` per leader; a new leader starts empty.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from brokerlb.config import ServiceConfig, short_class_name
from brokerlb.model import BrokerLoadData, BundleData, LocalBrokerData, TopBundlesLoadData
from brokerlb.ring import NamespaceBundles
from brokerlb.sim.spec import BrokerSpec

__all__ = [
    "ClusterInputs",
    "Leader",
    "LeaderFactory",
    "SimLeader",
    "EXTENSIBLE_LOAD_MANAGER",
    "is_extensible",
]

#: simple class name of Pulsar's extensible load manager
EXTENSIBLE_LOAD_MANAGER = "ExtensibleLoadManagerImpl"


def is_extensible(config: ServiceConfig) -> bool:
    return short_class_name(config.loadManagerClassName) == EXTENSIBLE_LOAD_MANAGER


@dataclass(slots=True)
class ClusterInputs:
    """What the leader can read about the cluster at one instant (built by the simulation)."""

    #: registered broker -> its last written LocalBrokerData (None if it never wrote)
    reports: Mapping[str, LocalBrokerData | None]
    #: extensible: published BrokerLoadData / top bundles of registered brokers
    broker_load_data: Mapping[str, BrokerLoadData] = field(default_factory=dict)
    top_bundles: Mapping[str, TopBundlesLoadData] = field(default_factory=dict)
    #: registered broker -> its host spec (version for the registry)
    brokers: Mapping[str, BrokerSpec] = field(default_factory=dict)
    #: bundle -> owner (computed on demand; the extensible channel)
    ownership: Callable[[], dict[str, str]] = dict
    #: namespace -> its current bundles
    namespace_bundles: Mapping[str, NamespaceBundles] = field(default_factory=dict)
    #: namespace -> anti-affinity group
    anti_affinity: Mapping[str, str] = field(default_factory=dict)


class Leader(Protocol):
    """What the simulation asks of a leader (:class:`SimLeader` is the real one)."""

    config: ServiceConfig

    @property
    def extensible(self) -> bool: ...

    def refresh(self, now_ms: int, inputs: ClusterInputs) -> None: ...

    def shed(self, now_ms: int, inputs: ClusterInputs) -> Any: ...

    def split(self, now_ms: int, inputs: ClusterInputs) -> Any: ...

    def place(self, now_ms: int, bundle: str, inputs: ClusterInputs) -> Any: ...

    def bundle_split(self, parent: str, children: list[str]) -> None: ...

    def bundle_merged(self, parts: list[str], merged: str) -> None: ...

    def persisted_bundle_data(self) -> dict[str, BundleData]: ...


#: builds a leader: (broker id, config, seeded rng, persisted bundle histories) -> leader
LeaderFactory = Callable[[str, ServiceConfig, random.Random, Mapping[str, BundleData]], Leader]


class SimLeader:
    """One leader's load manager (module docstring).

    Placements between two refreshes share one
    :class:`~brokerlb.loadbalance.placement.context.PlacementContext` and are preallocated
    (Pulsar's step 11 of ``selectBrokerForAssignment``): recorded in the context, so the next
    placement counts them, and in the leader's ``LoadData`` (``preallocatedBundleData``), where
    the next refresh drops them once the broker reports the bundle.
    """

    def __init__(
        self,
        broker_id: str,
        config: ServiceConfig,
        rng: random.Random,
        stored_bundle_data: Mapping[str, BundleData] | None = None,
    ) -> None:
        from brokerlb.loadbalance.refresh import LeaderLoadState
        from brokerlb.loadbalance.state import StrategyState

        self.broker_id = broker_id
        self._config = config
        self._extensible = is_extensible(config)
        self.rng = rng
        self.state = StrategyState()
        self.load_state = LeaderLoadState()
        self.recently_unloaded_brokers: dict[str, int] = {}
        self._stored = dict(stored_bundle_data or {})
        self._context: Any = None

    @property
    def config(self) -> ServiceConfig:
        return self._config

    @config.setter
    def config(self, config: ServiceConfig) -> None:
        """A dynamic configuration change (the next view uses it)."""
        self._config = config
        self._extensible = is_extensible(config)
        self._context = None

    @property
    def extensible(self) -> bool:
        return self._extensible

    # ------------------------------------------------------------------ view

    def view(self, now_ms: int, inputs: ClusterInputs) -> Any:
        from brokerlb.loadbalance import BrokerLookupData, NamespacePolicy

        policies = {
            ns: NamespacePolicy(anti_affinity_group=inputs.anti_affinity.get(ns), bundles=bundles)
            for ns, bundles in inputs.namespace_bundles.items()
        }
        extensible = self.extensible
        return self.load_state.view(
            self.config,
            now_ms,
            broker_load_data=inputs.broker_load_data if extensible else {},
            top_bundles=inputs.top_bundles if extensible else {},
            broker_lookup_data={
                broker: BrokerLookupData(
                    web_service_url=f"http://{broker}",
                    broker_version=spec.version,
                    load_manager_class_name=self.config.loadManagerClassName,
                )
                for broker, spec in inputs.brokers.items()
            }
            if extensible
            else {},
            ownership=inputs.ownership() if extensible else {},
            recently_unloaded_brokers=self.recently_unloaded_brokers,
            namespace_policies=policies,
        )

    # ------------------------------------------------------------------ operations

    def refresh(self, now_ms: int, inputs: ClusterInputs) -> None:
        from brokerlb.loadbalance.refresh import refresh

        refresh(self.load_state, inputs.reports, stored_bundle_data=self._stored.get)
        self._context = None

    def shed(self, now_ms: int, inputs: ClusterInputs) -> Any:
        from brokerlb.loadbalance.shedding.loop import record_unloads, run_shedding_cycle

        result = run_shedding_cycle(self.view(now_ms, inputs), self.state, self.rng)
        record_unloads(
            result,
            now_ms,
            self.load_state.load_data.recently_unloaded_bundles,
            self.recently_unloaded_brokers if self.extensible else None,
        )
        return result

    def split(self, now_ms: int, inputs: ClusterInputs) -> Any:
        from brokerlb.loadbalance.split import find_bundles_to_split

        return find_bundles_to_split(self.view(now_ms, inputs), self.state)

    def place(self, now_ms: int, bundle: str, inputs: ClusterInputs) -> Any:
        from brokerlb.loadbalance.decisions import Reason
        from brokerlb.loadbalance.placement.context import PlacementContext
        from brokerlb.loadbalance.placement.pipeline import place_bundle

        if self._context is None or self.extensible:
            # the extensible channel changes with every assignment: a fresh view each time
            self._context = PlacementContext(self.view(now_ms, inputs))
        context = self._context
        decision = place_bundle(context, bundle, self.state, self.rng, preallocate=not self.extensible)
        if not self.extensible and decision.broker is not None and decision.reason is Reason.SELECTED:
            self._remember_preallocation(bundle, decision.broker, context)
        return decision

    def _remember_preallocation(self, bundle: str, broker: str, context: Any) -> None:
        load_data = self.load_state.load_data
        data = context.preallocated_data.get(broker, {}).get(bundle)
        broker_data = load_data.broker_data.get(broker)
        if data is None or broker_data is None:
            return
        load_data.bundle_data.setdefault(bundle, data)
        broker_data.preallocated_bundle_data[bundle] = data
        self.load_state.preallocated_bundle_to_broker[bundle] = broker
        namespace, _, bundle_range = bundle.rpartition("/")
        ranges = self.load_state.namespace_bundle_ranges.setdefault(broker, {})
        ranges.setdefault(namespace, set()).add(bundle_range)

    def bundle_split(self, parent: str, children: list[str]) -> None:
        """Forget the split parent's history (Pulsar's ``checkNamespaceBundleSplit``)."""
        self.load_state.load_data.bundle_data.pop(parent, None)
        self._stored.pop(parent, None)
        self._context = None

    def bundle_merged(self, parts: list[str], merged: str) -> None:
        """Forget the merged parts' histories (the broker's admin merge deletes their bundle data)."""
        for part in parts:
            self.load_state.load_data.bundle_data.pop(part, None)
            self._stored.pop(part, None)
        self._context = None

    def persisted_bundle_data(self) -> dict[str, BundleData]:
        """The bundle histories as the leader persists them (``/loadbalance/bundle-data``)."""
        return {name: data.copy() for name, data in self.load_state.load_data.bundle_data.items()}
