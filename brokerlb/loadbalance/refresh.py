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
   * preallocations are cleaned up: if the broker now reports any of its preallocated
     bundles, every preallocated bundle of that broker that has bundle data is dropped
     (Pulsar iterates the whole preallocation map there, so in practice all of them go);
     each preallocated name is also removed from ``preallocated_bundle_to_broker``;
   * the broker's ``TimeAverageBrokerData`` is recomputed over its ``lastStats`` bundles;
   * its namespace -> bundle-range map is rebuilt from ``lastStats`` plus preallocations.

System namespaces stay in ``bundle_data``; they are left out when shedding reads it
(``LoadData.bundle_data_for_load_shedding``). Split checking (``checkNamespaceBundleSplit``)
is a separate step the caller runs after the refresh (:mod:`brokerlb.loadbalance.split`).

Worked example: a bundle first reported with 100 msg/s in starts from the default history
(50 msg/s, ``numSamples`` 0); the sample replaces the default, so its short- and long-term
``msgRateIn`` are 100. A second report of 200 gives a short-term mean of 150.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from brokerlb.config import ServiceConfig
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
      (``brokerToNamespaceToBundleRange``: reported plus preallocated).
    """

    load_data: LoadData = field(default_factory=LoadData)
    preallocated_bundle_to_broker: dict[str, str] = field(default_factory=dict)
    namespace_bundle_ranges: dict[str, dict[str, set[str]]] = field(default_factory=dict)

    def view(self, config: ServiceConfig, now_ms: int, **extra: Any) -> ClusterView:
        """The view strategies get after this refresh (``extra``: policies, extensible inputs ...)."""
        return ClusterView(config=config, now_ms=now_ms, load_data=self.load_data,
                           bundle_ranges=self.namespace_bundle_ranges, **extra)


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
    if stored_bundle_data is not None:
        stored = stored_bundle_data(bundle)
        if stored is not None:
            return stored.copy()
    if stored_quota is not None:
        quota = stored_quota(bundle)
        if quota is not None:
            return BundleData.from_resource_quota(quota)
    return BundleData.with_defaults(NUM_SHORT_SAMPLES, NUM_LONG_SAMPLES, _DEFAULT_STATS)


def refresh(
    state: LeaderLoadState,
    reports: Mapping[str, LocalBrokerData | None],
    *,
    stored_bundle_data: Callable[[str], BundleData | None] | None = None,
    stored_quota: Callable[[str], ResourceQuota | None] | None = None,
) -> RefreshResult:
    """Fold the active brokers' latest reports into ``state`` (``updateAll`` minus the split check).

    ``reports`` maps every active broker to its current ``LocalBrokerData`` (``None`` when its
    report is missing). The reports are used as they are (not copied): the caller hands over
    fresh objects, as Pulsar's leader does when it reads them from the store.
    """
    added, removed = _update_broker_data(state.load_data, reports)
    new_bundles: list[str] = []
    cleared: list[str] = []
    bundle_data = state.load_data.bundle_data
    for broker, data in state.load_data.broker_data.items():
        stats_map = data.local_data.last_stats
        for bundle in stats_map:
            if bundle not in bundle_data:
                bundle_data[bundle] = bundle_data_or_default(bundle, stored_bundle_data, stored_quota)
                new_bundles.append(bundle)
        ranges = _fold_broker(stats_map, bundle_data, data.time_average_data)
        cleared.extend(_clean_preallocations(state, data))
        for bundle in data.preallocated_bundle_data:
            namespace, _, bundle_range = bundle.rpartition("/")
            ranges.setdefault(namespace, set()).add(bundle_range)
        state.namespace_bundle_ranges[broker] = ranges
    for broker in removed:
        state.namespace_bundle_ranges.pop(broker, None)
    return RefreshResult(tuple(added), tuple(removed), tuple(new_bundles), tuple(cleared))


def _update_broker_data(
    load_data: LoadData, reports: Mapping[str, LocalBrokerData | None]
) -> tuple[list[str], list[str]]:
    brokers = load_data.broker_data
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
        else:
            current.local_data = report
    for broker in [b for b in brokers if b not in reports]:
        del brokers[broker]
        removed.append(broker)
    return sorted(added), sorted(removed)


def _clean_preallocations(state: LeaderLoadState, data: BrokerData) -> list[str]:
    """Pulsar's preallocation clean-up for one broker (see the module docstring)."""
    preallocated = data.preallocated_bundle_data
    if not preallocated:
        return []
    reported = data.local_data.bundles
    bundle_data = state.load_data.bundle_data
    cleared: list[str] = []
    for name in list(preallocated):
        if name in reported:
            for bundle in [b for b in preallocated if b in bundle_data]:
                del preallocated[bundle]
                state.preallocated_bundle_to_broker.pop(bundle, None)
                cleared.append(bundle)
        state.preallocated_bundle_to_broker.pop(name, None)
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


# _fold_broker is BundleData.update, TimeAverageBrokerData.reset and fillNamespaceToBundlesMap
# for one broker, in one pass: the leader runs it for every bundle of the cluster on every
# refresh (100,000 bundles on a large cluster). test_refresh.py checks it against the model.


def _fold_broker(stats_map: Mapping[str, NamespaceBundleStats], bundle_data: Mapping[str, BundleData],
                 average: TimeAverageBrokerData) -> dict[str, set[str]]:
    """Fold each sample into its bundle's windows (every bundle has a history by now), set the
    broker's time averages to the sums of those windows, and return namespace -> ranges."""
    s_tin = s_tout = s_rin = s_rout = l_tin = l_tout = l_rin = l_rout = 0.0
    ranges: dict[str, set[str]] = {}
    for bundle, stats in stats_map.items():
        history = bundle_data[bundle]
        tput_in, tput_out = stats.msg_throughput_in, stats.msg_throughput_out
        rate_in, rate_out = stats.msg_rate_in, stats.msg_rate_out
        w = history.short_term_data
        n = w.num_samples + 1
        if n > w.max_samples:
            n = w.max_samples
        w.num_samples = n
        k = n - 1
        s_tin += (v := (k * w.msg_throughput_in + tput_in) / n)
        w.msg_throughput_in = v
        s_tout += (v := (k * w.msg_throughput_out + tput_out) / n)
        w.msg_throughput_out = v
        s_rin += (v := (k * w.msg_rate_in + rate_in) / n)
        w.msg_rate_in = v
        s_rout += (v := (k * w.msg_rate_out + rate_out) / n)
        w.msg_rate_out = v
        w = history.long_term_data
        n = w.num_samples + 1
        if n > w.max_samples:
            n = w.max_samples
        w.num_samples = n
        k = n - 1
        l_tin += (v := (k * w.msg_throughput_in + tput_in) / n)
        w.msg_throughput_in = v
        l_tout += (v := (k * w.msg_throughput_out + tput_out) / n)
        w.msg_throughput_out = v
        l_rin += (v := (k * w.msg_rate_in + rate_in) / n)
        w.msg_rate_in = v
        l_rout += (v := (k * w.msg_rate_out + rate_out) / n)
        w.msg_rate_out = v
        history.topics = stats.topics
        namespace, _, bundle_range = bundle.rpartition("/")
        members = ranges.get(namespace)
        if members is None:
            members = ranges[namespace] = set()
        members.add(bundle_range)
    average.short_term_msg_throughput_in, average.short_term_msg_throughput_out = s_tin, s_tout
    average.short_term_msg_rate_in, average.short_term_msg_rate_out = s_rin, s_rout
    average.long_term_msg_throughput_in, average.long_term_msg_throughput_out = l_tin, l_tout
    average.long_term_msg_rate_in, average.long_term_msg_rate_out = l_rin, l_rout
    return ranges
