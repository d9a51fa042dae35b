"""The modular load manager on a live broker: load data, placement, and the leader's cycles.

:class:`LoadManager` is the glue between the running system and the decision engine
(:mod:`brokerlb.loadbalance`, pure) -- it never decides anything itself:

* **load data** -- the leader's :class:`~brokerlb.loadbalance.refresh.LeaderLoadState` is
  refreshed from the brokers' reports (the registry cache: every
  ``/loadbalance/brokers/*`` node) with Pulsar's ``updateAll``
  (:func:`~brokerlb.loadbalance.refresh.refresh`); a bundle the leader has not seen
  starts from its stored ``/loadbalance/bundle-data`` node;
* **view** -- a :class:`~brokerlb.loadbalance.view.ClusterView` of that state with the
  namespaces' anti-affinity groups and bundle counts, the cluster's isolation policies
  and failure domains, and the clock;
* **placement** -- :meth:`LoadManager.decide` runs ``selectBrokerForAssignment``
  (:func:`~brokerlb.loadbalance.placement.place_bundle`) on a
  :class:`~brokerlb.loadbalance.placement.PlacementContext` and records the
  preallocation both there and in the load data, so the next placement (and the next
  refresh) counts it. Strategy memory (EMA, round-robin counter, shedder history) lives
  in one :class:`~brokerlb.loadbalance.state.StrategyState` per leadership;
* **leader cycles** live in :mod:`brokerlb.broker.leader`.

Every broker has one (a broker decides placements only when it leads, or when no
leader is known -- Pulsar's rule); a new leader starts from empty memory, as in Pulsar.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from brokerlb.broker.bundles_cache import NamespaceBundlesCache
from brokerlb.broker.policies_cache import ClusterPoliciesCache
from brokerlb.clock import Clock
from brokerlb.config import ServiceConfig
from brokerlb.coordination import BrokerRegistry, LoadDataStore
from brokerlb.errors import BrokerLBError, InvalidLoadDataError, NoBrokerAvailableError
from brokerlb.loadbalance import ClusterView, StrategyState
from brokerlb.loadbalance.placement import PlacementContext, place_bundle
from brokerlb.loadbalance.policies import NamespacePolicy
from brokerlb.loadbalance.refresh import LeaderLoadState, RefreshResult, refresh
from brokerlb.model import BundleData, LocalBrokerData, bundle_namespace
from brokerlb.ring import NamespaceBundle

__all__ = ["LoadManager"]

logger = logging.getLogger(__name__)


class LoadManager:
    """Load data, view and placement of one broker (module docstring)."""

    def __init__(
        self,
        conf: ServiceConfig,
        *,
        registry: BrokerRegistry,
        bundles: NamespaceBundlesCache,
        policies: ClusterPoliciesCache,
        load_data_store: LoadDataStore,
        clock: Clock,
        seed: int | None = None,
    ) -> None:
        self.conf = conf
        self.registry = registry
        self.bundles = bundles
        self.policies = policies
        self.load_data_store = load_data_store
        self.clock = clock
        self._seed = seed
        self.reset()

    def reset(self) -> None:
        """Forget everything (a new leadership starts with empty memory, as in Pulsar)."""
        self.state = LeaderLoadState()
        self.strategy_state = StrategyState()
        self.rng = random.Random(self._seed)
        self._context: PlacementContext | None = None
        self._context_policies = -1
        self.refreshes = 0

    # ------------------------------------------------------------------ load data
    def reports(self) -> dict[str, LocalBrokerData | None]:
        """Every active broker's latest report from the registry cache (``None`` if unreadable)."""
        out: dict[str, LocalBrokerData | None] = {}
        for broker in self.registry.available_brokers():
            raw = self.registry.broker_json(broker)
            try:
                out[broker] = LocalBrokerData.from_json(raw) if isinstance(raw, dict) else None
            except InvalidLoadDataError as exc:
                logger.warning("Ignoring the unreadable load report of %s: %s", broker, exc)
                out[broker] = None
        return out

    async def refresh(self) -> RefreshResult:
        """Pulsar's ``updateAll`` on the current reports, then a new view and placement context."""
        reports = self.reports()
        stored = await self._stored_bundle_data(reports)
        result = refresh(self.state, reports, stored_bundle_data=stored.get)
        await self._read_policies(reports)
        self._context = None
        self.refreshes += 1
        return result

    async def _stored_bundle_data(self, reports: dict[str, LocalBrokerData | None]) -> dict[str, BundleData]:
        """The stored histories of bundles the leader is about to see for the first time."""
        known = self.state.load_data.bundle_data
        new = {b for r in reports.values() if r is not None for b in r.last_stats if b not in known}
        stored: dict[str, BundleData] = {}
        for bundle in sorted(new):
            try:
                raw = await self.load_data_store.read_bundle_data(bundle)
                if raw is not None:
                    stored[bundle] = BundleData.from_json(raw)
            except (BrokerLBError, InvalidLoadDataError) as exc:
                logger.warning("Ignoring the stored bundle data of %s: %s", bundle, exc)
        return stored

    async def _read_policies(self, reports: dict[str, LocalBrokerData | None]) -> None:
        """Load the namespaces the reports mention into the bundle cache (anti-affinity groups, counts)."""
        namespaces = {bundle_namespace(b) for r in reports.values() if r is not None for b in r.last_stats}
        for ns in namespaces:
            try:
                await self.bundles.get(ns)
            except BrokerLBError:
                continue

    def namespace_policies(self) -> dict[str, NamespacePolicy]:
        out: dict[str, NamespacePolicy] = {}
        for ns, bundles, group in self.bundles.known_namespaces():
            out[ns] = NamespacePolicy(group, bundles)
        return out

    def view(self) -> ClusterView:
        return ClusterView(
            config=self.conf,
            now_ms=self.clock.now_ms(),
            load_data=self.state.load_data,
            namespace_policies=self.namespace_policies(),
            isolation_policies=dict(self.policies.isolation),
            failure_domains=dict(self.policies.failure_domains),
        )

    # ------------------------------------------------------------------ placement
    def context(self) -> PlacementContext:
        """The placement context of the current view (rebuilt after a refresh or a policy change)."""
        if self._context is None or self._context_policies != self.policies.version:
            self._context = PlacementContext(self.view())
            self._context_policies = self.policies.version
        return self._context

    async def decide(self, bundle: NamespaceBundle) -> str:
        """``selectBrokerForAssignment`` with preallocation; :class:`NoBrokerAvailableError` if none fits."""
        if self.refreshes == 0 or set(self.state.load_data.broker_data) != set(
            self.registry.available_brokers()
        ):
            await self.refresh()
        name = str(bundle)
        context = self.context()
        decision = place_bundle(
            context, name, self.strategy_state, self.rng, non_persistent=False, preallocate=True
        )
        if decision.broker is None:
            raise NoBrokerAvailableError(
                f"No broker available for {name}: {decision.reason}"
                + (f" ({decision.detail})" if decision.detail else "")
            )
        self._record_preallocation(name, decision.broker, context)
        logger.debug("Placed %s on %s (%s)", name, decision.broker, decision.reason)
        return decision.broker

    def _record_preallocation(self, bundle: str, broker: str, context: PlacementContext) -> None:
        """Pulsar's step 11 in the load data too, so the next refresh keeps it until the broker reports it."""
        data = self.state.load_data.broker_data.get(broker)
        if data is None or bundle in data.preallocated_bundle_data:
            return
        history = context.preallocated_data.get(broker, {}).get(bundle) or context.bundle_data(bundle)
        data.preallocated_bundle_data[bundle] = history
        self.state.preallocated_bundle_to_broker[bundle] = broker
        ranges = self.state.namespace_bundle_ranges.setdefault(broker, {})
        ranges.setdefault(bundle_namespace(bundle), set()).add(bundle.rpartition("/")[2])

    def forget_bundle(self, bundle: str) -> None:
        """Drop a split or merged bundle from the leader's data (Pulsar removes its bundle data)."""
        self.state.load_data.bundle_data.pop(bundle, None)
        self.state.load_data.recently_unloaded_bundles.pop(bundle, None)

    def describe(self) -> dict[str, Any]:
        """Counters for logs and the demo."""
        return {
            "brokers": len(self.state.load_data.broker_data),
            "bundles": len(self.state.load_data.bundle_data),
            "preallocated": len(self.state.preallocated_bundle_to_broker),
            "refreshes": self.refreshes,
        }
