"""The leader's load manager: one implementation, run by the live broker and by the simulator.

A :class:`Leader` is what a Pulsar leader keeps between cycles and everything it decides. It
owns the load data (:class:`~brokerlb.loadbalance.refresh.LeaderLoadState`), the strategies'
memory (:class:`~brokerlb.loadbalance.state.StrategyState`), the seeded random source, the
placement context of the current view with its preallocations, the one-shot bundle
affinities and TransferShedder's broker cool-downs. It never performs I/O and never reads a
clock: every operation gets ``now_ms`` and a :class:`ClusterInputs` -- what a leader can read
about the cluster at that instant -- and returns decisions with reasons.

The shells around it are a scheduler and an executor (:mod:`brokerlb.loadbalance.cycle`):
the live broker (:mod:`brokerlb.broker.leader.leader`) builds the inputs from the metadata store and
carries out moves through the owners; the simulator (:mod:`brokerlb.sim.leadership`) builds
them from its model and executes moves on its timeline. Both call the same methods in the
same order, so a simulation is evidence about the live leader.

Operations:

* :meth:`Leader.refresh` -- Pulsar's ``updateAll`` (:func:`~brokerlb.loadbalance.refresh.refresh`);
* :meth:`Leader.view` -- the :class:`~brokerlb.loadbalance.view.ClusterView` strategies read;
* :meth:`Leader.shed` -- the shedding loop around the configured strategy
  (:func:`~brokerlb.loadbalance.shedding.run_shedding_cycle`) and the :class:`Move` each
  unload becomes (a transfer when :meth:`Leader.transfers` says so, else an unload that
  leaves the destination as a one-shot affinity);
* :meth:`Leader.moves_executed` -- remembers the moves that were carried out
  (``recentlyUnloadedBundles``; TransferShedder's broker cool-down), as Pulsar's leader does
  after a successful unload only;
* :meth:`Leader.place` -- a one-shot affinity if one is set and its broker is registered, else
  ``selectBrokerForAssignment`` with preallocation (Pulsar's step 11, recorded in the
  placement context and in the load data so the next refresh keeps it until the broker
  reports the bundle). With ``brokerlbKeepPreallocationsUntilReported`` (the default) the
  affinity's broker is preallocated too, so every lookup until the destination takes the
  bundle gets the same answer; Pulsar answers the affinity once;
* :meth:`Leader.split_check` -- the split check
  (:func:`~brokerlb.loadbalance.split.find_bundles_to_split`);
* :meth:`Leader.split_decided` / :meth:`Leader.bundle_merged` / :meth:`Leader.forget_bundle` --
  drop the history of a bundle chosen for a split, of merged parts, or of a deleted bundle;
* :meth:`Leader.operator_action` -- an operator split, unloaded, transferred or merged a bundle
  by hand: kept for ``loadBalancerSheddingGracePeriodMinutes`` and shown to the strategies
  (:mod:`brokerlb.loadbalance.operator_actions`; brokerlb's balancer respects it).

Worked example: two brokers report, the leader refreshes, and placing a new bundle twice
gives the same broker (the first placement preallocated it):

>>> import random
>>> from brokerlb.testing import broker
>>> leader = Leader("b1:8080", rng=random.Random(7))
>>> inputs = ClusterInputs(reports={"b1:8080": broker("b1:8080", cpu=30), "b2:8080": broker("b2:8080")})
>>> _ = leader.refresh(0, inputs)
>>> first = leader.place(0, "t/ns/0x00000000_0xffffffff", inputs)
>>> second = leader.place(0, "t/ns/0x00000000_0xffffffff", inputs)
>>> first.broker == second.broker, str(second.reason)
(True, 'Preallocated')
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import filterfalse

from brokerlb.config import ServiceConfig, is_extensible_load_manager
from brokerlb.loadbalance.broker_lookup import BrokerLookupData
from brokerlb.loadbalance.decisions import (
    Label,
    PlacementDecision,
    Reason,
    SheddingResult,
    SplitDecision,
    SplitResult,
    UnloadDecision,
)
from brokerlb.loadbalance.operator_actions import OperatorAction, recent_operator_actions
from brokerlb.loadbalance.placement.context import PlacementContext
from brokerlb.loadbalance.placement.pipeline import place_bundle
from brokerlb.loadbalance.policies import FailureDomain, NamespaceIsolationData, NamespacePolicy
from brokerlb.loadbalance.refresh import LeaderLoadState, RefreshResult, refresh
from brokerlb.loadbalance.shedding.loop import record_unloads, run_shedding_cycle
from brokerlb.loadbalance.split import find_bundles_to_split
from brokerlb.loadbalance.state import StrategyState
from brokerlb.loadbalance.tracked import TrackedDict
from brokerlb.loadbalance.view import ClusterView
from brokerlb.model import (
    BrokerLoadData,
    BundleData,
    LocalBrokerData,
    ResourceQuota,
    TopBundlesLoadData,
    bundle_namespace,
)

__all__ = [
    "ClusterInputs",
    "Leader",
    "Move",
    "StoredBundleData",
    "StoredResourceQuota",
    "is_transfer",
    "unless_stale",
]

#: ``stored(bundle) -> BundleData | None``: a bundle's persisted history (``/loadbalance/bundle-data``).
StoredBundleData = Callable[[str], BundleData | None]
#: bundle -> its legacy ``/loadbalance/resource-quota/namespace/{bundle}`` quota, if any
StoredResourceQuota = Callable[[str], ResourceQuota | None]


def is_transfer(config: ServiceConfig, destination: str | None) -> bool:
    """Whether an unload to ``destination`` hands the bundle straight over (a transfer) rather than
    unloading it with the destination as a one-shot affinity: the extensible manager with
    ``loadBalancerTransferEnabled``; the modular one with ``brokerlbModularTransferEnabled`` (true
    by default; false is Pulsar's modular behaviour). No destination: an unload."""
    if not destination:
        return False
    extensible = is_extensible_load_manager(config.loadManagerClassName)
    return bool(config.loadBalancerTransferEnabled if extensible else config.brokerlbModularTransferEnabled)


def _no_owners() -> Mapping[str, str]:
    return {}


@dataclass(slots=True)
class ClusterInputs:
    """What a leader can read about the cluster at one instant (built by the shell)."""

    #: registered broker -> its latest ``LocalBrokerData`` (``None``: not written or unreadable)
    reports: Mapping[str, LocalBrokerData | None]
    #: extensible manager: published ``BrokerLoadData`` and top bundles of registered brokers
    broker_load_data: Mapping[str, BrokerLoadData] = field(default_factory=dict)
    top_bundles: Mapping[str, TopBundlesLoadData] = field(default_factory=dict)
    #: extensible manager: the broker registry (version, load manager class, topic domains)
    broker_lookup: Mapping[str, BrokerLookupData] = field(default_factory=dict)
    #: extensible manager: bundle -> owner (the service-unit channel); called only when needed
    ownership: Callable[[], Mapping[str, str]] = _no_owners
    #: namespace -> anti-affinity group and bundles
    namespace_policies: Mapping[str, NamespacePolicy] = field(default_factory=dict)
    #: isolation policy name -> policy; failure domain name -> brokers
    isolation_policies: Mapping[str, NamespaceIsolationData] = field(default_factory=dict)
    failure_domains: Mapping[str, FailureDomain] = field(default_factory=dict)
    #: changes whenever a policy, a namespace or its bundles changed (placement indexes rebuild)
    policies_version: int = 0
    #: ``owner_of(bundle)``: the broker that owns the bundle now as the shell knows it (``None``:
    #: no broker does); the leader checks each move against it (:meth:`Leader.shed`). Not given:
    #: no check (a strategy's decisions are carried out as they are)
    owner_of: Callable[[str], str | None] | None = None


@dataclass(frozen=True, slots=True)
class Move:
    """A shedding decision as it is carried out.

    ``transfer``: the source hands the bundle straight to ``destination`` (clients are told
    where it went). Otherwise the bundle is unloaded and the next lookup places it; a
    ``destination`` is then a one-shot affinity the leader set before the unload.
    """

    bundle: str
    source: str
    destination: str | None
    transfer: bool
    decision: UnloadDecision

    @property
    def reason(self) -> str:
        return str(self.decision.reason)

    @property
    def detail(self) -> str:
        return self.decision.detail


class Leader:
    """One leadership's load manager (module docstring). Not thread-safe; one task drives it."""

    def __init__(
        self,
        broker_id: str = "",
        config: ServiceConfig | None = None,
        *,
        rng: random.Random | None = None,
        stored_bundle_data: Mapping[str, BundleData] | None = None,
    ) -> None:
        self.broker_id = broker_id
        self._config = config if config is not None else ServiceConfig()
        self._extensible = is_extensible_load_manager(self._config.loadManagerClassName)
        self.rng = rng if rng is not None else random.Random()
        self.load_state = LeaderLoadState()
        self.strategy_state = StrategyState()
        #: TransferShedder's cool-down: source broker -> time of its last executed unload
        self.recently_unloaded_brokers: dict[str, int] = {}
        #: bundle -> broker the next placement must choose (once), set by an unload with a destination
        self.affinity: dict[str, str] = {}
        #: bundles whose split was decided and that some report still lists
        self.splitting: set[str] = set()
        #: bundle -> the operator's latest action on it (kept for the grace period)
        self.operator_actions: dict[str, OperatorAction] = {}
        #: bundle -> when this leader decided to split it (kept for the no-merge cool-down)
        self.recent_splits: dict[str, int] = {}
        self._stored = dict(stored_bundle_data or {})
        self._context: PlacementContext | None = None
        self._last_context: PlacementContext | None = None
        self._context_key: tuple[int, int] = (-1, -1)
        #: refreshes done by this leader
        self.refreshes = 0

    # ------------------------------------------------------------------ configuration

    @property
    def config(self) -> ServiceConfig:
        return self._config

    @config.setter
    def config(self, config: ServiceConfig) -> None:
        """A dynamic configuration change: the next view uses it."""
        self._config = config
        self._extensible = is_extensible_load_manager(config.loadManagerClassName)
        self._context = None

    @property
    def extensible(self) -> bool:
        """Whether ``loadManagerClassName`` selects the extensible load manager."""
        return self._extensible

    def transfers(self, destination: str | None) -> bool:
        """Whether an unload to ``destination`` is a transfer (:func:`is_transfer`)."""
        return is_transfer(self._config, destination)

    # ------------------------------------------------------------------ load data

    def new_bundles(self, inputs: ClusterInputs) -> set[str]:
        """Bundles the next refresh sees for the first time (their stored history is read first).

        A report the last refresh folded as it is listed only bundles with a history then; of those,
        only a bundle whose history was dropped since (a split, a merge: ``bundle_data`` logs its
        changed keys) can be new, so only the other reports are read bundle by bundle."""
        state = self.load_state
        bundle_data = state.load_data.bundle_data
        known = bundle_data.__contains__
        changed = None  # what the last fold's reports say holds only for the map it folded into
        if isinstance(bundle_data, TrackedDict) and state.fold_cache.bundle_data is bundle_data:
            changed = bundle_data.peek_changes()
        folded = state.fold_cache.folded_whole
        new: set[str] = set()
        kept: list[Mapping[str, object]] = []
        for broker, report in inputs.reports.items():
            if report is None:
                continue
            if changed is not None and folded(broker, report):
                kept.append(report.last_stats)
            else:
                new.update(filterfalse(known, report.last_stats))
        for bundle in changed or ():
            if bundle not in bundle_data and any(bundle in stats for stats in kept):
                new.add(bundle)
        return new

    def refresh(
        self,
        now_ms: int,
        inputs: ClusterInputs,
        *,
        stored: StoredBundleData | None = None,
        stored_quota: StoredResourceQuota | None = None,
    ) -> RefreshResult:
        """Pulsar's ``updateAll`` on ``inputs.reports``. A bundle seen for the first time starts
        from ``stored(bundle)`` (default: the histories handed to this leader at start), else from
        its legacy ``stored_quota(bundle)``, else from the default."""
        if self.splitting:  # a split is done for the leader once no report lists the bundle
            reported = [r.last_stats for r in inputs.reports.values() if r is not None]
            # a few bundles against every report: look each up (intersection() would walk the reports)
            self.splitting = {b for b in self.splitting if any(b in stats for stats in reported)}
        result = refresh(
            self.load_state,
            inputs.reports,
            stored_bundle_data=stored or self._stored.get,
            stored_quota=stored_quota,
            keep_preallocations=self._config.brokerlbKeepPreallocationsUntilReported,
        )
        self.refreshes += 1
        self._context = None
        return result

    def view(self, now_ms: int, inputs: ClusterInputs) -> ClusterView:
        """What strategies read: the load data with the extensible inputs when that manager runs."""
        extensible = self._extensible
        return self.load_state.view(
            self._config,
            now_ms,
            broker_load_data=inputs.broker_load_data if extensible else {},
            top_bundles=inputs.top_bundles if extensible else {},
            broker_lookup_data=inputs.broker_lookup if extensible else {},
            ownership=inputs.ownership() if extensible else {},
            recently_unloaded_brokers=self.recently_unloaded_brokers,
            namespace_policies=inputs.namespace_policies,
            isolation_policies=inputs.isolation_policies,
            failure_domains=inputs.failure_domains,
            operator_actions=self._recent_operator_actions(now_ms),
            recent_splits=self._recent_splits(now_ms),
        )

    def _recent_splits(self, now_ms: int) -> dict[str, int]:
        if not self.recent_splits:
            return {}
        cutoff = now_ms - int(
            self._config.duration_seconds("brokerlbBalancerNoMergeAfterSplitMinutes") * 1000
        )
        self.recent_splits = {b: at for b, at in self.recent_splits.items() if at >= cutoff}
        return dict(self.recent_splits)

    def operator_action(self, action: OperatorAction) -> None:
        """An operator acted on a bundle by hand (module docstring of
        :mod:`~brokerlb.loadbalance.operator_actions`): remembered for the grace period."""
        self.operator_actions[action.bundle] = action
        self._context = None

    def _recent_operator_actions(self, now_ms: int) -> dict[str, OperatorAction]:
        if not self.operator_actions:
            return {}
        grace_ms = int(self._config.duration_seconds("loadBalancerSheddingGracePeriodMinutes") * 1000)
        kept = recent_operator_actions(self.operator_actions, now_ms, grace_ms)
        if len(kept) != len(self.operator_actions):
            self.operator_actions = kept
        return dict(kept)

    def forget_bundle(self, bundle: str) -> None:
        """Drop a split, merged or deleted bundle's history (Pulsar removes its bundle data)."""
        data = self.load_state.load_data
        data.bundle_data.pop(bundle, None)
        data.recently_unloaded_bundles.pop(bundle, None)
        self._stored.pop(bundle, None)
        self.affinity.pop(bundle, None)
        self._context = None

    def split_decided(self, bundle: str, now_ms: int | None = None) -> None:
        """A split of ``bundle`` was decided: forget its history (Pulsar's
        ``checkNamespaceBundleSplit``) and keep it aside until no report lists it any more, so
        a stale report cannot have it split again meanwhile (:meth:`split_check` skips it). With
        ``now_ms`` it is also a recent split strategies see (:attr:`ClusterView.recent_splits
        <brokerlb.loadbalance.view.ClusterView.recent_splits>`) for
        ``brokerlbBalancerNoMergeAfterSplitMinutes``."""
        self.forget_bundle(bundle)
        self.splitting.add(bundle)
        if now_ms is not None:
            self.recent_splits[bundle] = now_ms

    def bundle_merged(self, parts: Sequence[str]) -> None:
        """Adjacent bundles were merged: forget the parts' histories (the broker's merge deletes
        their stored bundle data); the merged bundle starts from the default at its first report."""
        for part in parts:
            self.forget_bundle(part)

    def persisted_bundle_data(self) -> dict[str, BundleData]:
        """The bundle histories as the leader persists them (``/loadbalance/bundle-data``)."""
        return {name: data.copy() for name, data in self.load_state.load_data.bundle_data.items()}

    # ------------------------------------------------------------------ shedding

    def shed(self, now_ms: int, inputs: ClusterInputs) -> tuple[SheddingResult, list[Move]]:
        """One shedding cycle: the decisions, and the moves to carry out (in decision order).

        Each move with a destination that is not a transfer leaves that destination as a
        one-shot affinity for the bundle's next placement; a transfer's destination is written in
        the bundle's ownership record (the move is one transition: nothing to remember here).

        A decision to move a bundle its source does not own now (``inputs.owner_of``) is not
        carried out: it becomes ``Skip``/``NotOwned`` (:func:`unless_stale`).
        """
        result = run_shedding_cycle(self.view(now_ms, inputs), self.strategy_state, self.rng)
        if inputs.owner_of is not None:
            result = unless_stale(result, inputs.owner_of)
        moves = []
        for decision in result.unloads:
            bundle, source = decision.bundle or "", decision.broker or ""
            transfer = self.transfers(decision.destination)
            if decision.destination and not transfer:
                self.affinity[bundle] = decision.destination
            moves.append(Move(bundle, source, decision.destination, transfer, decision))
        return result, moves

    def moves_executed(self, result: SheddingResult, executed: list[Move], now_ms: int) -> int:
        """Remember the moves that were carried out (``recentlyUnloadedBundles``, and the source
        brokers' cool-down for the extensible manager); returns how many."""
        done = SheddingResult.of((m.decision for m in executed), result.stats)
        return record_unloads(
            done,
            now_ms,
            self.load_state.load_data.recently_unloaded_bundles,
            self.recently_unloaded_brokers if self._extensible else None,
        )

    # ------------------------------------------------------------------ splitting

    def split_check(self, now_ms: int, inputs: ClusterInputs) -> SplitResult:
        """The split check of the configured strategy on the current view; a bundle whose split
        is under way is skipped (``Splitting``)."""
        result = find_bundles_to_split(self.view(now_ms, inputs), self.strategy_state)
        if not self.splitting:
            return result
        return SplitResult(tuple(map(self._unless_splitting, result.decisions)), result.stats)

    def _unless_splitting(self, decision: SplitDecision) -> SplitDecision:
        if not (decision.is_split and decision.bundle in self.splitting):
            return decision
        return replace(
            decision,
            label=Label.SKIP,
            reason=Reason.SPLITTING,
            detail="its split is under way (a report still lists it)",
        )

    # ------------------------------------------------------------------ placement

    def set_affinity(self, bundle: str, broker: str) -> None:
        """The next placement of ``bundle`` chooses ``broker`` if it is still registered (once)."""
        self.affinity[bundle] = broker

    def placement_context(self, now_ms: int, inputs: ClusterInputs) -> PlacementContext:
        """The placement indexes of the current view, shared by the placements until the next
        refresh or policy change (the extensible channel changes with every assignment: its
        context is rebuilt each time)."""
        key = (self.refreshes, inputs.policies_version)
        if self._context is None or self._context_key != key or self._extensible:
            # the previous context lends the figures of brokers whose report did not change
            self._context = PlacementContext(self.view(now_ms, inputs), previous=self._last_context)
            self._context_key = key
            self._last_context = self._context
        return self._context

    def prepare_placement(self, now_ms: int, inputs: ClusterInputs) -> None:
        """Build the placement context of the current view now, with the answers nearly every
        placement asks (:meth:`PlacementContext.prepare`), so the next lookup finds them built."""
        if not self._extensible:
            self.placement_context(now_ms, inputs).prepare()

    def place(
        self, now_ms: int, bundle: str, inputs: ClusterInputs, *, non_persistent: bool = False
    ) -> PlacementDecision:
        """Where ``bundle`` goes (module docstring); ``broker`` is ``None`` when none fits."""
        affinity = self.affinity.pop(bundle, None)
        if affinity is not None and affinity in inputs.reports:
            if not self._extensible and self._config.brokerlbKeepPreallocationsUntilReported:
                # held until the destination reports it: a second lookup before the destination
                # took the bundle is answered alike (Pulsar's affinity answers once, and that
                # lookup got a fresh choice -- seen live: the overloaded source took it back)
                context = self.placement_context(now_ms, inputs)
                context.preallocate(bundle, affinity)
                self._record_preallocation(bundle, affinity, context)
            return PlacementDecision(
                bundle, affinity, (affinity,), Reason.AFFINITY, f"one-shot affinity to {affinity}"
            )
        context = self.placement_context(now_ms, inputs)
        decision = place_bundle(
            context,
            bundle,
            self.strategy_state,
            self.rng,
            non_persistent=non_persistent,
            preallocate=not self._extensible,
        )
        if not self._extensible and decision.broker is not None and decision.reason is Reason.SELECTED:
            self._record_preallocation(bundle, decision.broker, context)
        return decision

    def _record_preallocation(self, bundle: str, broker: str, context: PlacementContext) -> None:
        """Pulsar's step 11 in the load data too, so a rebuilt context and the next refresh keep
        the assignment until the broker reports the bundle (``bundleData.computeIfAbsent`` first)."""
        load_data = self.load_state.load_data
        broker_data = load_data.broker_data.get(broker)
        data = context.preallocated_data.get(broker, {}).get(bundle)
        if broker_data is None or data is None:
            return
        load_data.bundle_data.setdefault(bundle, data)
        broker_data.preallocated_bundle_data[bundle] = data
        self.load_state.preallocated(bundle, broker)
        # the broker's map is replaced, not changed in place (LeaderLoadState.namespace_bundle_ranges)
        all_ranges = self.load_state.namespace_bundle_ranges
        ranges = dict(all_ranges.get(broker, {}))
        namespace = bundle_namespace(bundle)
        ranges[namespace] = {*ranges.get(namespace, ()), bundle.rpartition("/")[2]}
        all_ranges[broker] = ranges

    # ------------------------------------------------------------------ observing

    def describe(self) -> dict[str, int]:
        """Counters for logs, the demo and the admin API."""
        data = self.load_state.load_data
        return {
            "brokers": len(data.broker_data),
            "bundles": len(data.bundle_data),
            "preallocated": len(self.load_state.preallocated_bundle_to_broker),
            "refreshes": self.refreshes,
        }


def unless_stale(result: SheddingResult, owner_of: Callable[[str], str | None]) -> SheddingResult:
    """``result`` with every unload of a bundle its source does not own now turned into a
    ``Skip``/``NotOwned`` decision that says who owns it.

    A strategy reads load reports, and a broker rewrites its report only when its load changed
    enough or ``loadBalancerReportUpdateMaxIntervalMinutes`` passed: a report may still list a
    bundle that moved away minutes ago, and a new leader has no memory of the recent moves to
    keep it from choosing that bundle again. Carried out, such a decision unloads the bundle from
    a broker the strategy did not mean -- or, when the bundle is already on the destination, is
    a transfer to its own owner, which the ownership machine refuses ("unload to the same broker
    is not allowed"). The leader skips it instead, with the reason, and the shells count it
    (``pulsar_lb_unload_broker_breakdown_total{result="Skip",reason="NotOwned"}``).

    >>> from brokerlb.loadbalance.decisions import UnloadDecision, Label, Reason
    >>> stale = UnloadDecision("b1:8080", "t/ns/0x00000000_0xffffffff", "b2:8080", Label.SUCCESS, Reason.OVERLOADED)
    >>> checked = unless_stale(SheddingResult.of([stale]), {"t/ns/0x00000000_0xffffffff": "b2:8080"}.get)
    >>> checked.unloads, str(checked.decisions[0].reason), checked.decisions[0].detail
    ([], 'NotOwned', 'not moved: b2:8080 owns it already (its destination; b1:8080 reported it last)')
    """
    decisions = list(result.decisions)
    changed = False
    for i, decision in enumerate(decisions):
        if not decision.is_unload or decision.bundle is None:
            continue
        owner = owner_of(decision.bundle)
        if owner == decision.broker:
            continue
        if owner is None:
            why = "no broker owns it now"
        elif owner == decision.destination:
            why = f"{owner} owns it already (its destination; {decision.broker} reported it last)"
        else:
            why = f"{owner} owns it now ({decision.broker} reported it last)"
        detail = f"{decision.detail}; not moved: {why}" if decision.detail else f"not moved: {why}"
        decisions[i] = replace(decision, label=Label.SKIP, reason=Reason.NOT_OWNED, detail=detail)
        changed = True
    return replace(result, decisions=tuple(decisions)) if changed else result
