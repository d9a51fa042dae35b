"""The broker's side of the one leader: its refresh, and the placement of unowned bundles.

Every broker holds one :class:`~brokerlb.loadbalance.leader.Leader` for the life of its process
(the decision engine; pure). :class:`LoadManager` is the glue around it and never decides
anything itself:

* **refresh** -- the leader's ``updateAll`` on the inputs the caches hold
  (:class:`~brokerlb.broker.leader.leader_inputs.LeaderInputs`); first it reads the stored history
  (``/loadbalance/bundle-data``) of bundles the leader has not seen and loads the namespaces the
  reports mention (their anti-affinity groups); then it builds the placement indexes of the new
  load data, so the next lookup does not wait for them (placement reads no clock: where they are
  built changes no decision). One refresh runs at a time; after it, a process that owns its
  garbage collector freezes what is alive (:mod:`brokerlb.broker.leader.collector`) -- unless
  placements were waiting for this refresh: they go first, and the next refresh does it;
* **placement** (:meth:`LoadManager.place`) -- what a lookup of an unowned bundle calls when this
  broker decides (it leads, or no leader is known: Pulsar's rule). It never refreshes: when the
  reports changed since the leader's last refresh it waits (up to :data:`IN_STEP_WAIT`) for the
  refresh the leader's tasks run on every change. A bundle being merged is not
  placed (503, retriable); otherwise :meth:`Leader.place` answers (a one-shot affinity, else
  ``selectBrokerForAssignment`` with preallocation). The same placement chooses the broker of an
  orphaned bundle the leader reassigns and of a merged bundle. Placement is synchronous once the data is
  fresh, and a preallocated bundle is placed where it was, so concurrent lookups -- also of
  namespaces of one anti-affinity group -- see each other's assignments.

The leader's memory (load data, strategy state) is kept when this broker loses and regains
leadership: a lease lost inside the session does not throw its load history away. A broker that
becomes leader for the first time starts from what it has (empty at start), as in Pulsar, where
each broker's load manager keeps its own in-memory data.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from brokerlb.broker.leader.collector import after_leader_refresh
from brokerlb.broker.leader.leader_inputs import LeaderInputs
from brokerlb.broker.observe.metrics.counters import AssignmentMetrics
from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
from brokerlb.clock import Clock
from brokerlb.coordination import LoadDataStore
from brokerlb.errors import (
    BrokerLBError,
    InvalidLoadDataError,
    NoBrokerAvailableError,
    ServiceUnavailableError,
)
from brokerlb.loadbalance.decisions import PlacementDecision
from brokerlb.loadbalance.leader import ClusterInputs, Leader
from brokerlb.loadbalance.operator_actions import OperatorAction, OperatorActionKind
from brokerlb.loadbalance.refresh import RefreshResult
from brokerlb.model import BundleData, LocalBrokerData, ResourceQuota, bundle_namespace
from brokerlb.ring import NamespaceBundle

__all__ = ["LoadManager", "IN_STEP_WAIT"]

#: Seconds a placement waits for the leader's refresh of reports that changed (its tasks refresh
#: within a few tens of milliseconds of a change); then it places with what the leader knows.
IN_STEP_WAIT = 1.0

#: Stored bundle histories a refresh reads at once (a new leader reads every bundle's).
HISTORY_READS = 32

logger = logging.getLogger(__name__)


class LoadManager:
    """Refresh and placement of one broker's leader (module docstring)."""

    def __init__(
        self,
        leader: Leader,
        inputs: LeaderInputs,
        *,
        bundles: NamespaceBundlesCache,
        load_data_store: LoadDataStore,
        clock: Clock,
        metrics: AssignmentMetrics | None = None,
    ) -> None:
        self.leader = leader
        #: placements counted and timed (Pulsar's assignment metrics), when given
        self.metrics = metrics
        self.inputs = inputs
        self._bundles = bundles
        self._load_data_store = load_data_store
        self._clock = clock
        self._refreshing = asyncio.Lock()
        #: placements waiting for the leader's next refresh (the reports changed since the last one)
        self._refresh_waiters: list[asyncio.Future[None]] = []
        #: the last refresh left the collector's pause to this one (placements were waiting)
        self._collector_deferred = False
        self._blocked: dict[str, str] = {}
        self._listeners: list[Callable[[PlacementDecision], None]] = []
        #: broker -> (the report last seen, the namespaces its bundles are in)
        self._report_namespaces: dict[str, tuple[LocalBrokerData, frozenset[str]]] = {}
        #: namespace -> how many of those reports list a bundle of it (the union, kept as they change)
        self._namespace_reports: Counter[str] = Counter()
        #: (reports mapping, leader refreshes) at which the leader's brokers were last found to be
        #: those with a report (placement refreshes first when they are not)
        self._in_step: tuple[Mapping[str, LocalBrokerData | None], int] | None = None

    # ------------------------------------------------------------------ load data

    async def refresh(self) -> RefreshResult:
        """Pulsar's ``updateAll`` on what the caches hold now (module docstring)."""
        async with self._refreshing:
            first = self.inputs.current()
            stored, quotas = await self._stored_histories(self.leader.new_bundles(first))
            await self._load_namespaces(first.reports)
            inputs = self.inputs.current()
            result = self.leader.refresh(
                self._clock.now_ms(), inputs, stored=stored.get, stored_quota=quotas.get
            )
            # the refresh made the leader's brokers exactly those with a report in ``inputs``
            self._in_step = (inputs.reports, self.leader.refreshes)
            self.prepare_placement()
            waiting = [w for w in self._refresh_waiters if not w.done()]
            self._refresh_waiters.clear()
            if waiting and not self._collector_deferred:
                # placements wait for this refresh -- after a leader change, the clean-up of a dead
                # broker's bundles: they go first, the collector's pause (a new leader's first is a
                # full collection, 0.3 s on a loaded machine) waits for the next refresh
                self._collector_deferred = True
            else:
                self._collector_deferred = False
                after_leader_refresh()  # the long-lived state out of the collector's way
            for waiter in waiting:
                waiter.set_result(None)
            return result

    def prepare_placement(self) -> None:
        """Build the placement indexes of the current load data and policies now, if the leader
        has none, rather than in the next lookup (module docstring). The refresh calls it; so does
        the leader's split step, whose decided splits drop the indexes. The extensible manager
        rebuilds them at every placement: nothing to prepare."""
        self.leader.prepare_placement(self._clock.now_ms(), self.inputs.current())

    async def _stored_histories(
        self, bundles: set[str]
    ) -> tuple[dict[str, BundleData], dict[str, ResourceQuota]]:
        """New bundles' stored bundle data, and the legacy resource quota of those without (an
        unreadable node is skipped with a log line; the bundle then starts from the default).

        The reads run concurrently (at most :data:`HISTORY_READS` at once): a new leader's first
        refresh reads every bundle's history, and one read after another kept the leader's first
        placement -- the clean-up of a dead broker's bundles after a leader change -- waiting up to
        a second and more on a loaded store."""
        stored: dict[str, BundleData] = {}
        quotas: dict[str, ResourceQuota] = {}
        limit = asyncio.Semaphore(HISTORY_READS)

        async def read(bundle: str) -> None:
            async with limit:
                try:
                    raw = await self._load_data_store.read_bundle_data(NamespaceBundle.parse(bundle))
                    if raw is not None:
                        stored[bundle] = BundleData.from_json(raw)
                        return
                    raw = await self._load_data_store.read_resource_quota(bundle)
                    if raw is not None:
                        quotas[bundle] = ResourceQuota.from_json(raw)
                except (BrokerLBError, InvalidLoadDataError) as exc:
                    logger.warning("Ignoring the stored history of %s: %s", bundle, exc)

        await asyncio.gather(*(read(bundle) for bundle in sorted(bundles)))
        return stored, quotas

    async def _load_namespaces(self, reports: Mapping[str, LocalBrokerData | None]) -> None:
        """Load the namespaces the reports mention into the bundles cache (groups, bundle counts);
        a report's namespaces are listed once per report, not at every refresh."""
        known = self._report_namespaces
        counts = self._namespace_reports
        for broker, report in reports.items():
            if report is None:
                continue
            seen = known.get(broker)
            if seen is None or seen[0] is not report:
                namespaces = frozenset(map(bundle_namespace, report.last_stats))
                if seen is not None and seen[1] == namespaces:
                    namespaces = seen[1]  # a new report of the same namespaces: counts unchanged
                else:
                    if seen is not None:
                        counts.subtract(seen[1])
                    counts.update(namespaces)
                known[broker] = (report, namespaces)
        for gone in [b for b in known if reports.get(b) is None]:
            counts.subtract(known.pop(gone)[1])
        for ns in [ns for ns, reporting in counts.items() if reporting <= 0]:
            del counts[ns]
        for ns in sorted(counts):
            if self._bundles.policy_of(ns) is not None:
                continue  # loaded (the cache follows its changes)
            try:
                await self._bundles.get(ns)
            except BrokerLBError:
                continue

    def current_inputs(self) -> ClusterInputs:
        return self.inputs.current()

    # ------------------------------------------------------------------ placement

    async def place(self, bundle: NamespaceBundle) -> str:
        """The broker that must own ``bundle`` (module docstring); :class:`NoBrokerAvailableError`
        when none fits."""
        if self.metrics is None:
            return await self._place(bundle)
        return await self.metrics.observe(self._place(bundle))

    async def _place(self, bundle: NamespaceBundle) -> str:
        name = str(bundle)
        why = self._blocked.get(name)
        if why is not None:
            raise ServiceUnavailableError(f"Bundle {name} is {why}; try again")
        inputs = self.inputs.current()
        if not self._leader_in_step(inputs):
            # the reports changed since the leader's last refresh: the leader's tasks refresh at once
            # (debounced on the registry's changes); wait for that refresh, never run one here
            await self._next_refresh(IN_STEP_WAIT)
            inputs = self.inputs.current()
        decision = self.leader.place(self._clock.now_ms(), name, inputs)
        for listener in list(self._listeners):
            try:
                listener(decision)
            except Exception:
                logger.exception("Placement listener failed")
        if decision.broker is None:
            detail = f" ({decision.detail})" if decision.detail else ""
            raise NoBrokerAvailableError(f"No broker available for {name}: {decision.reason}{detail}")
        logger.debug("Placed %s on %s (%s)", name, decision.broker, decision.reason)
        return decision.broker

    async def _next_refresh(self, timeout: float) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._refresh_waiters.append(waiter)
        try:
            await self._clock.wait_for(asyncio.shield(waiter), timeout)
        except TimeoutError:
            pass
        finally:
            if waiter in self._refresh_waiters:
                self._refresh_waiters.remove(waiter)

    def _leader_in_step(self, inputs: ClusterInputs) -> bool:
        """Whether the leader has refreshed and knows exactly the brokers that have a report."""
        leader = self.leader
        if leader.refreshes == 0:
            return False
        key = (inputs.reports, leader.refreshes)
        if self._in_step is not None and self._in_step[0] is key[0] and self._in_step[1] == key[1]:
            return True
        if set(leader.load_state.load_data.broker_data) != {
            b for b, r in inputs.reports.items() if r is not None
        }:
            return False
        self._in_step = key
        return True

    def add_placement_listener(self, listener: Callable[[PlacementDecision], None]) -> Callable[[], None]:
        """``listener(decision)`` after every placement this broker decides; returns a remover."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def set_affinity(self, bundle: str, broker: str) -> None:
        """The next placement of ``bundle`` chooses ``broker`` if it is still registered (once)."""
        self.leader.set_affinity(bundle, broker)

    def operator_action(
        self, kind: OperatorActionKind, bundle: str, *, source: str | None, destination: str | None
    ) -> None:
        """An operator is acting on ``bundle`` by hand: the leader remembers it for the grace period
        (:meth:`Leader.operator_action <brokerlb.loadbalance.leader.Leader.operator_action>`)."""
        self.leader.operator_action(OperatorAction(kind, bundle, self._clock.now_ms(), source, destination))
        logger.info("Operator %s of %s%s", kind.value, bundle, f" (from {source})" if source else "")

    def bundles_merged(self, parts: Sequence[str]) -> None:
        """Adjacent bundles were merged: the leader forgets the parts' histories."""
        self.leader.bundle_merged(parts)

    def block(self, bundles: Sequence[str], why: str) -> None:
        """Refuse to place ``bundles`` (503) until :meth:`unblock` (a merge is under way)."""
        for bundle in bundles:
            self._blocked[bundle] = why

    def unblock(self, bundles: Sequence[str]) -> None:
        for bundle in bundles:
            self._blocked.pop(bundle, None)

    def describe(self) -> dict[str, Any]:
        """Counters for logs and the demo."""
        return self.leader.describe()
