"""The modular leader's load-data refresh: Pulsar's ``ModularLoadManagerImpl.updateAll``.

Whenever broker reports change the leader folds them into its :class:`LeaderLoadState`:

1. **broker data** (``updateAllBrokerData``): every active broker's latest
   ``LocalBrokerData`` replaces the previous one (a new broker gets a fresh ``BrokerData``);
   a broker whose report is missing, or that is no longer active, is dropped;
2. **bundle data** (``updateBundleData``), for each broker:

   * each bundle in its ``lastStats`` adds one sample to that bundle's ``BundleData``; a
     bundle the leader has not seen starts from the stored history (``/loadbalance/bundle-data``),
     else a legacy resource quota, else the default (50 msg/s, 50 000 B/s, no samples) --
     Pulsar's ``getBundleDataOrDefault`` -- and then takes the sample;
   * preallocations are cleaned up (Pulsar's rule, ``keep_preallocations=False``): if the
     broker now reports any of its preallocated bundles, every preallocated bundle of that
     broker that has bundle data is dropped (Pulsar iterates the whole preallocation map there,
     and placement gave every preallocated bundle its data, so in practice all of them go); each
     preallocated name is also removed from ``preallocated_bundle_to_broker``. With
     ``keep_preallocations`` (``brokerlbKeepPreallocationsUntilReported``) a preallocation is
     dropped when its own bundle is reported -- by that broker, or by any other (another broker
     took it: a lookup raced the placement) -- so the bundles of a burst of placements stay
     counted on their brokers until each is reported, and none stays preallocated for ever;
   * the broker's ``TimeAverageBrokerData`` is recomputed over its ``lastStats`` bundles;
   * its namespace -> bundle-range map is rebuilt from ``lastStats`` plus preallocations.

**Order.** Brokers are folded in broker-id order. Pulsar walks a ``ConcurrentHashMap``; the
order matters only when two reports list one bundle (a stale report right after a move), and
fixing it to the id order makes the leader, the in-process replay
(:mod:`brokerlb.history.replay`) and the Spark pipeline fold alike.

System namespaces stay in ``bundle_data``; they are left out when shedding reads it
(``LoadData.bundle_data_for_load_shedding``). Split checking (``checkNamespaceBundleSplit``)
is a separate step the caller runs after the refresh (:mod:`brokerlb.loadbalance.split`).

Speed: the folding runs on arrays (:mod:`brokerlb.loadbalance.fold`, bit for bit the scalar
arithmetic) and skips re-reading the reports that did not change; the refresh then converts
``load_data.bundle_data`` to a :class:`~brokerlb.loadbalance.tracked.TrackedDict` (a ``dict``
that logs its changed keys) and the folded histories' windows to column views
(:mod:`brokerlb.loadbalance.windows`). Both stay what they were to every reader.

Worked example: a bundle first reported with 100 msg/s in starts from the default history
(50 msg/s, ``numSamples`` 0); the sample replaces the default, so its short- and long-term
``msgRateIn`` are 100. A second report of 200 gives a short-term mean of 150.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance.fold import FoldCache, FoldSummary, Segment
from brokerlb.loadbalance.range_counts import NamespaceRangeCounts
from brokerlb.loadbalance.tracked import TrackedDict
from brokerlb.loadbalance.view import ClusterView
from brokerlb.model import (
    NUM_LONG_SAMPLES,
    NUM_SHORT_SAMPLES,
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceQuota,
    TimeAverageBrokerData,
)

__all__ = [
    "LeaderLoadState",
    "RefreshResult",
    "refresh",
    "bundle_data_or_default",
    "namespace_to_bundle_ranges",
]

_DEFAULT_STATS = NamespaceBundleStats.new_default()


@dataclass(slots=True)
class LeaderLoadState:
    """What a modular leader keeps between refreshes (and placements).

    * ``load_data`` -- brokers, bundle histories, recently unloaded bundles;
    * ``preallocated_bundle_to_broker`` -- bundle -> broker it was just assigned to;
    * ``namespace_bundle_ranges`` -- broker -> namespace -> bundle ranges it holds
      (``brokerToNamespaceToBundleRange``: reported plus preallocated). A broker's map is
      replaced, never changed in place, when its ranges change (``range_counts`` relies on it).
    """

    load_data: LoadData = field(default_factory=LoadData)
    preallocated_bundle_to_broker: dict[str, str] = field(default_factory=dict)
    namespace_bundle_ranges: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    #: what the last refresh folded (the split check's prefilter; :mod:`brokerlb.loadbalance.fold`)
    fold_summary: FoldSummary | None = field(default=None, repr=False)
    #: the fold's memory between refreshes (window columns, resolved reports)
    fold_cache: FoldCache = field(default_factory=FoldCache, repr=False)
    #: broker -> (its BrokerData, the namespace map built for it, the reported ranges it was built
    #: from) when built without preallocations (reused while exact; see ``_namespace_ranges``)
    built_ranges: dict[str, tuple[BrokerData, dict[str, set[str]], dict[str, tuple[str, ...]]]] = field(
        default_factory=dict, repr=False
    )
    #: ``namespace_bundle_ranges`` turned around (namespace -> broker -> ranges), synced per view
    range_counts: NamespaceRangeCounts = field(default_factory=NamespaceRangeCounts, repr=False)
    #: refreshes so far; broker -> the refresh that first folded its current report; bundle ->
    #: the refresh its preallocation followed (``keep_preallocations`` drops a preallocation a
    #: later report of another broker lists)
    refreshes: int = 0
    report_refresh: dict[str, int] = field(default_factory=dict, repr=False)
    preallocated_after: dict[str, int] = field(default_factory=dict, repr=False)

    def preallocated(self, bundle: str, broker: str) -> None:
        """``bundle`` was just assigned to ``broker`` (kept until a report lists it)."""
        self.preallocated_bundle_to_broker[bundle] = broker
        self.preallocated_after[bundle] = self.refreshes

    def view(self, config: ServiceConfig, now_ms: int, **extra: Any) -> ClusterView:
        """The view strategies get after this refresh (``extra``: policies, extensible inputs ...)."""
        return ClusterView(
            config=config,
            now_ms=now_ms,
            load_data=self.load_data,
            bundle_ranges=self.namespace_bundle_ranges,
            range_counts=self.range_counts.sync(self.namespace_bundle_ranges),
            fold_summary=self.fold_summary,
            **extra,
        )


@dataclass(frozen=True, slots=True)
class RefreshResult:
    """What a refresh changed (for logs, metrics and tests)."""

    added_brokers: tuple[str, ...] = ()
    removed_brokers: tuple[str, ...] = ()
    new_bundles: tuple[str, ...] = ()
    cleared_preallocations: tuple[str, ...] = ()


def bundle_data_or_default(
    bundle: str,
    stored_bundle_data: Callable[[str], BundleData | None] | None = None,
    stored_quota: Callable[[str], ResourceQuota | None] | None = None,
) -> BundleData:
    """Pulsar's ``getBundleDataOrDefault``: stored history, else a legacy quota ("ample history"),
    else the default history (numSamples 0, so the first sample replaces it)."""
    stored = _stored_history(bundle, stored_bundle_data, stored_quota)
    return (
        stored
        if stored is not None
        else BundleData.with_defaults(NUM_SHORT_SAMPLES, NUM_LONG_SAMPLES, _DEFAULT_STATS)
    )


def _stored_history(
    bundle: str,
    stored_bundle_data: Callable[[str], BundleData | None] | None,
    stored_quota: Callable[[str], ResourceQuota | None] | None,
) -> BundleData | None:
    if stored_bundle_data is not None:
        stored = stored_bundle_data(bundle)
        if stored is not None:
            return stored.copy()
    if stored_quota is not None:
        quota = stored_quota(bundle)
        if quota is not None:
            return BundleData.from_resource_quota(quota)
    return None


#: a default history's window columns (``windows.FIELDS`` order): no samples, the default stats
_DEFAULT_COLUMNS = np.array(
    [
        [
            0.0,
            max_samples,
            _DEFAULT_STATS.msg_throughput_in,
            _DEFAULT_STATS.msg_throughput_out,
            _DEFAULT_STATS.msg_rate_in,
            _DEFAULT_STATS.msg_rate_out,
        ]
        for max_samples in (NUM_SHORT_SAMPLES, NUM_LONG_SAMPLES)
    ]
).T


def _new_histories(
    state: LeaderLoadState,
    bundles: list[str],
    stored_bundle_data: Callable[[str], BundleData | None] | None,
    stored_quota: Callable[[str], ResourceQuota | None] | None,
) -> list[BundleData]:
    """``bundle_data_or_default`` for each bundle; the default ones are made with their windows
    already in the fold's table (a new leader's first refresh creates every history)."""
    histories = [_stored_history(b, stored_bundle_data, stored_quota) for b in bundles]
    defaults = [i for i, h in enumerate(histories) if h is None]
    if defaults:
        views = state.fold_cache.table.new_views(np.tile(_DEFAULT_COLUMNS, len(defaults)))
        for j, i in enumerate(defaults):
            histories[i] = BundleData(views[2 * j], views[2 * j + 1])
    return histories  # type: ignore[return-value]


def refresh(
    state: LeaderLoadState,
    reports: Mapping[str, LocalBrokerData | None],
    *,
    stored_bundle_data: Callable[[str], BundleData | None] | None = None,
    stored_quota: Callable[[str], ResourceQuota | None] | None = None,
    keep_preallocations: bool = False,
) -> RefreshResult:
    """Fold the active brokers' latest reports into ``state`` (``updateAll`` minus the split check).

    ``reports`` maps every active broker to its current ``LocalBrokerData`` (``None`` when its
    report is missing). The reports are used as they are (not copied): the caller hands over
    fresh objects, as Pulsar's leader does when it reads them from the store.
    """
    state.refreshes += 1
    added, removed = _update_broker_data(state, reports)
    new_bundles: list[str] = []
    cleared: list[str] = []
    load_data = state.load_data
    if not isinstance(load_data.bundle_data, TrackedDict):
        load_data.bundle_data = TrackedDict(load_data.bundle_data)
    bundle_data = load_data.bundle_data
    brokers = [
        (broker, data.local_data, data.time_average_data) for broker, data in load_data.broker_data.items()
    ]
    unchanged = state.fold_cache.unchanged(bundle_data, {b: r for b, r, _ in brokers})
    preallocating = set()  # brokers the leader preallocated to since the last refresh
    reported_later = _ReportedLater(state)
    for broker, data in load_data.broker_data.items():
        stats_map = data.local_data.last_stats
        if data.preallocated_bundle_data:
            preallocating.add(broker)
        if broker not in unchanged and not all(map(bundle_data.__contains__, stats_map)):
            missing = [b for b in stats_map if b not in bundle_data]
            for bundle, history in zip(
                missing, _new_histories(state, missing, stored_bundle_data, stored_quota), strict=True
            ):
                bundle_data[bundle] = history
            new_bundles.extend(missing)
        cleared.extend(_clean_preallocations(state, data, keep_preallocations, reported_later))
    # every sample is folded after all new histories exist: each fold reads and writes only its
    # own bundle's history, so the order across brokers is kept where it matters (fold.py)
    state.fold_summary = summary = state.fold_cache.fold(brokers, bundle_data, unchanged)
    for (broker, data), segment in zip(load_data.broker_data.items(), summary.segments, strict=True):
        state.namespace_bundle_ranges[broker] = _namespace_ranges(
            state, broker, data, segment, broker in unchanged and broker not in preallocating
        )
    for broker in removed:
        state.namespace_bundle_ranges.pop(broker, None)
        state.built_ranges.pop(broker, None)
    return RefreshResult(tuple(added), tuple(removed), tuple(new_bundles), tuple(cleared))


def _namespace_ranges(
    state: LeaderLoadState, broker: str, data: BrokerData, segment: Segment, reusable: bool
) -> dict[str, set[str]]:
    """``fillNamespaceToBundlesMap`` for one broker: its reported ranges plus its preallocations.

    The map built at the last refresh is kept when it is still exact (``reusable``: the same
    bundles reported, and no preallocation to this broker then or since -- the leader adds to
    this map only when it preallocates, which it records in ``preallocated_bundle_data``, and
    only the refresh removes from there).
    """
    built = state.built_ranges.get(broker)
    if (
        reusable
        and built is not None
        and built[0] is data
        and built[1] is state.namespace_bundle_ranges.get(broker)
    ):
        return built[1]
    preallocated = data.preallocated_bundle_data
    # added in report order, as Pulsar's loop does (the same sets, the same layout). A namespace
    # whose ranges are those the last map was built from keeps that map's set: such a set is made
    # by set(ranges) alike and never changed in place (only a map without preallocations is kept
    # here, and the leader replaces a broker's set when it preallocates)
    if built is not None and built[0] is data:
        _, sets, before = built
        skip = {bundle.rpartition("/")[0] for bundle in preallocated} if preallocated else ()
        ranges = {
            ns: sets[ns] if ns not in skip and before.get(ns) == names else set(names)
            for ns, names in segment.ranges.items()
        }
    else:
        ranges = dict(zip(segment.ranges, map(set, segment.ranges.values()), strict=True))
    for bundle in preallocated:
        namespace, _, bundle_range = bundle.rpartition("/")
        ranges.setdefault(namespace, set()).add(bundle_range)
    if preallocated:
        state.built_ranges.pop(broker, None)
    else:
        state.built_ranges[broker] = (data, ranges, segment.ranges)
    return ranges


def _update_broker_data(
    state: LeaderLoadState, reports: Mapping[str, LocalBrokerData | None]
) -> tuple[list[str], list[str]]:
    brokers = state.load_data.broker_data
    first_folded = state.report_refresh
    added: list[str] = []
    removed: list[str] = []
    for broker, report in reports.items():
        if report is None:
            if brokers.pop(broker, None) is not None:
                removed.append(broker)
            continue
        current = brokers.get(broker)
        if current is None:
            brokers[broker] = BrokerData(report, TimeAverageBrokerData())
            added.append(broker)
            first_folded[broker] = state.refreshes
        else:
            if current.local_data is not report:
                first_folded[broker] = state.refreshes
            current.local_data = report
    for broker in [b for b in brokers if b not in reports]:
        del brokers[broker]
        removed.append(broker)
    for broker in removed:
        first_folded.pop(broker, None)
    if added:  # the fold visits brokers in id order (module docstring)
        ordered = sorted(brokers.items())
        brokers.clear()
        brokers.update(ordered)
    return sorted(added), sorted(removed)


class _ReportedLater:
    """Whether a broker's report folded after a bundle's preallocation lists that bundle."""

    def __init__(self, state: LeaderLoadState) -> None:
        self._state = state
        #: refresh -> the bundle sets of the reports folded after it
        self._later: dict[int, list[AbstractSet[str]]] = {}

    def lists(self, bundle: str) -> bool:
        state = self._state
        after = state.preallocated_after.get(bundle, 0)
        later = self._later.get(after)
        if later is None:
            later = self._later[after] = [
                data.local_data.bundles
                for broker, data in state.load_data.broker_data.items()
                if state.report_refresh.get(broker, 0) > after
            ]
        return any(bundle in bundles for bundles in later)


def _clean_preallocations(
    state: LeaderLoadState,
    data: BrokerData,
    keep: bool = False,
    reported_later: _ReportedLater | None = None,
) -> list[str]:
    """The preallocation clean-up for one broker (see the module docstring)."""
    preallocated = data.preallocated_bundle_data
    if not preallocated:
        return []
    reported = data.local_data.bundles
    if keep:
        done = [
            name
            for name in preallocated
            if name in reported or (reported_later is not None and reported_later.lists(name))
        ]
        for name in done:
            del preallocated[name]
            state.preallocated_bundle_to_broker.pop(name, None)
            state.preallocated_after.pop(name, None)
        return done
    bundle_data = state.load_data.bundle_data
    cleared: list[str] = []
    for name in list(preallocated):
        if name in reported:
            for bundle in [b for b in preallocated if b in bundle_data]:
                del preallocated[bundle]
                state.preallocated_bundle_to_broker.pop(bundle, None)
                state.preallocated_after.pop(bundle, None)
                cleared.append(bundle)
        state.preallocated_bundle_to_broker.pop(name, None)
        state.preallocated_after.pop(name, None)
    return cleared


def namespace_to_bundle_ranges(bundles: Iterable[str]) -> dict[str, set[str]]:
    """``namespace -> {range}`` of bundle names (``LoadManagerShared.fillNamespaceToBundlesMap``)."""
    out: dict[str, set[str]] = {}
    for bundle in bundles:
        namespace, _, bundle_range = bundle.rpartition("/")
        ranges = out.get(namespace)
        if ranges is None:
            ranges = out[namespace] = set()
        ranges.add(bundle_range)
    return out
