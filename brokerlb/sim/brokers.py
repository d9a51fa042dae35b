"""Simulated brokers: registration, and the load reports they write.

Each broker samples its load once per cycle and decides, with the real
:func:`~brokerlb.model.need_broker_data_update` rule, whether to rewrite its report:

* **modular load manager** -- its :class:`~brokerlb.model.LocalBrokerData` (what
  ``/loadbalance/brokers/{id}`` holds): written at registration, then when the max resource
  usage, message rate, throughput or bundle count changed by more than
  ``loadBalancerReportUpdateThresholdPercentage`` since the last write, or after
  ``loadBalancerReportUpdateMaxIntervalMinutes``. A written report is a full
  ``LocalBrokerData`` built by ``LocalBrokerData.update(systemResourceUsage, bundleStats)``
  with one sample per bundle the broker serves, held as columns
  (:class:`~brokerlb.model.BundleStatsColumns`: the leader's fold reads the arrays, and a
  ``NamespaceBundleStats`` is made only for a bundle something asks about).
* **extensible load manager** -- its :class:`~brokerlb.model.BrokerLoadData` (updated every
  sample, with the weighted-max EMA) published under the same rule, and its top-K bundles
  report (:func:`~brokerlb.model.top_k_bundles`) published every cycle.

Sampling once per cycle (Pulsar samples every ``loadBalancerReportUpdateMinIntervalMillis``,
5 s) is the simulator's time resolution; with 1-minute cycles the rule sees the same
changes, only later within the minute.

The deciding sample is a summary ``LocalBrokerData`` (resources, totals, bundle count --
everything the rule reads); the per-bundle stats are built only for reports that are
written, which keeps a cycle of 100 brokers cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from brokerlb.config import ServiceConfig
from brokerlb.errors import InvalidLoadDataError
from brokerlb.model import (
    BrokerLoadData,
    BundleStatsColumns,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    ResourceWeights,
    SystemResourceUsage,
    TopBundlesLoadData,
    need_broker_data_update,
    top_k_bundles,
)
from brokerlb.model.bundle_stats import MSG_RATE_RESOLUTION, THROUGHPUT_RESOLUTION
from brokerlb.sim.resources import BrokerUsage, Capacities
from brokerlb.sim.spec import BrokerSpec, ResourceModelSpec

__all__ = ["BundleTraffic", "SimBroker", "ReportWriter", "LOAD_MANAGER_CLASS"]

#: ``loadManagerClassName`` the simulated brokers report
LOAD_MANAGER_CLASS = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"


@dataclass(slots=True)
class BundleTraffic:
    """Per-bundle sums of this cycle (arrays indexed by bundle id)."""

    msg_rate_in: np.ndarray
    msg_rate_out: np.ndarray
    msg_throughput_in: np.ndarray
    msg_throughput_out: np.ndarray
    producers: np.ndarray
    consumers: np.ndarray
    topics: np.ndarray
    #: the rows of a report's columns for every bundle (:meth:`stats_map`), stacked when first asked
    _rates: np.ndarray | None = field(default=None, init=False, repr=False)
    _counts: np.ndarray | None = field(default=None, init=False, repr=False)

    def check(self) -> None:
        """Every value finite and ``>= 0`` (what :class:`NamespaceBundleStats` validates), checked
        once for all bundles so :meth:`stats` can skip the per-object checks."""
        for name in ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out"):
            values = getattr(self, name)
            bad = np.flatnonzero(~np.isfinite(values) | (values < 0))
            if len(bad):
                raise InvalidLoadDataError(
                    f"bundle {int(bad[0])}: {name} = {values[bad[0]]!r}",
                    field=name,
                    value=float(values[bad[0]]),
                )
        for name in ("producers", "consumers", "topics"):
            if (getattr(self, name) < 0).any():
                raise InvalidLoadDataError(f"negative {name}", field=name)

    def stats(self, b: int) -> NamespaceBundleStats:
        """Bundle ``b``'s sample (values checked by :meth:`check`, as ``from_json`` does after reading)."""
        sample = object.__new__(NamespaceBundleStats)
        put = object.__setattr__
        put(sample, "msg_rate_in", float(self.msg_rate_in[b]))
        put(sample, "msg_throughput_in", float(self.msg_throughput_in[b]))
        put(sample, "msg_rate_out", float(self.msg_rate_out[b]))
        put(sample, "msg_throughput_out", float(self.msg_throughput_out[b]))
        put(sample, "consumer_count", int(self.consumers[b]))
        put(sample, "producer_count", int(self.producers[b]))
        put(sample, "topics", int(self.topics[b]))
        put(sample, "cache_size", 0)
        return sample

    def stats_map(self, bundles: np.ndarray, bundle_names: list[str]) -> BundleStatsColumns:
        """The samples of ``bundles`` in order, as a report's ``lastStats`` held in columns (a
        report holds every bundle of its broker; no sample object is made)."""
        if self._rates is None or self._counts is None:
            self._rates = np.stack(
                (self.msg_throughput_in, self.msg_throughput_out, self.msg_rate_in, self.msg_rate_out)
            )
            self._counts = np.stack(
                (self.topics, self.consumers, self.producers, np.zeros(len(self.topics), dtype=np.int64))
            )
        # every value was checked for all bundles at once (:meth:`check`); names are distinct
        return BundleStatsColumns.of_checked(
            list(map(bundle_names.__getitem__, bundles.tolist())),
            self._rates.take(bundles, axis=1),
            self._counts.take(bundles, axis=1),
        )

    @property
    def throughput(self) -> np.ndarray:
        return self.msg_throughput_in + self.msg_throughput_out


@dataclass(slots=True)
class SimBroker:
    """One simulated broker process and what it has written."""

    index: int
    spec: BrokerSpec
    up: bool = False
    registered: bool = False
    start_ms: int = 0
    #: the broker's own LocalBrokerData (updated on every write)
    local_data: LocalBrokerData | None = None
    #: summary of the last written report (what need_broker_data_update compares with)
    last_written: LocalBrokerData | None = None
    #: the report as the leader reads it (None before the first write)
    report: LocalBrokerData | None = None
    #: extensible: the broker's BrokerLoadData and the published copy
    load_data: BrokerLoadData = field(default_factory=BrokerLoadData)
    published_load_data: BrokerLoadData | None = None
    last_published: BrokerLoadData | None = None
    top_bundles: TopBundlesLoadData | None = None
    writes: int = 0
    #: the broker's id (``host:port``)
    broker_id: str = ""

    def __post_init__(self) -> None:
        self.broker_id = self.spec.broker_id

    def start(self, now_ms: int) -> None:
        """(Re)start: up and registered, with a fresh report and no bundles."""
        self.up = True
        self.registered = True
        self.start_ms = now_ms
        self.local_data = LocalBrokerData(
            web_service_url=f"http://{self.broker_id}",
            pulsar_service_url=f"pulsar://{self.broker_id.rsplit(':', 1)[0]}:6650",
            broker_version_string=self.spec.version,
            load_manager_class_name=LOAD_MANAGER_CLASS,
            start_timestamp=now_ms,
        )
        self.last_written = None
        self.report = None
        self.load_data = BrokerLoadData()
        self.published_load_data = None
        self.last_published = None
        self.top_bundles = None

    def stop(self) -> None:
        self.up = False
        self.registered = False


class ReportWriter:
    """Builds reports and applies the write rule for every live broker (module docstring).

    With a hundred brokers, building a summary ``LocalBrokerData`` for every broker every
    cycle is most of a cycle's cost, so :meth:`candidates` first computes the rule's four
    changes for all brokers at once (numpy, the same float32 percentages) and leaves out the
    brokers whose largest change is more than :data:`PREFILTER_MARGIN` points below the
    threshold and whose last write is not close to the maximum interval. Every other broker
    -- every broker that might write -- is decided by the real rule.
    """

    #: percentage points below the threshold under which a broker is certainly not writing
    PREFILTER_MARGIN = 0.5

    def __init__(self, caps: Capacities, resources: ResourceModelSpec) -> None:
        self.caps = caps
        self.resources = resources
        self._memory: ResourceUsage | None = None
        n = len(caps.cores)
        self._written = np.zeros(n, dtype=bool)
        self._last_max = np.zeros(n)
        self._last_rate = np.zeros(n)
        self._last_tput = np.zeros(n)
        self._last_bundles = np.zeros(n)
        self._last_write = np.zeros(n)

    def max_usage(self, usage: BrokerUsage) -> np.ndarray:
        """``max(cpu%, directMemory%, bwIn%, bwOut%) / 100`` per broker, percentages in float32 as Pulsar."""
        f32 = np.float32
        dm_limit = np.full(len(usage.cpu), self.resources.direct_memory_mb)
        percents = [
            (usage.cpu.astype(f32) / self.caps.cpu_limit.astype(f32)) * f32(100),
            (usage.direct_memory.astype(f32) / dm_limit.astype(f32)) * f32(100),
            (usage.bandwidth_in.astype(f32) / self.caps.nic_kbps.astype(f32)) * f32(100),
            (usage.bandwidth_out.astype(f32) / self.caps.nic_kbps.astype(f32)) * f32(100),
        ]
        return np.maximum.reduce(percents).astype(float) / 100

    def candidates(
        self,
        now_ms: int,
        up: np.ndarray,
        current_max: np.ndarray,
        rate: np.ndarray,
        tput: np.ndarray,
        bundles: np.ndarray,
        conf: ServiceConfig,
    ) -> np.ndarray:
        """Indices of the live brokers the real rule must decide for (class docstring)."""

        def change(old: np.ndarray, new: np.ndarray) -> np.ndarray:
            with np.errstate(divide="ignore", invalid="ignore"):
                out = np.where(old == 0, np.where(new == 0, 0.0, np.inf), 100 * np.abs((old - new) / old))
            return out

        interval_ms = conf.loadBalancerReportUpdateMaxIntervalMinutes * 60_000
        threshold = conf.loadBalancerReportUpdateThresholdPercentage
        largest = np.maximum.reduce(
            [
                100 * np.abs(self._last_max - current_max),
                change(self._last_rate, rate),
                change(self._last_tput, tput),
                change(self._last_bundles, bundles.astype(float)),
            ]
        )
        due = now_ms - self._last_write > interval_ms - 1000
        maybe = ~self._written | due | (largest > threshold - self.PREFILTER_MARGIN)
        return np.flatnonzero(up & maybe)

    def _remember(self, i: int, current: LocalBrokerData, now_ms: int) -> None:
        self._written[i] = True
        self._last_max[i] = current.max_resource_usage()
        self._last_rate[i] = current.total_msg_rate()
        self._last_tput[i] = current.total_msg_throughput()
        self._last_bundles[i] = current.num_bundles
        self._last_write[i] = now_ms

    def usage_of(self, i: int, usage: BrokerUsage) -> SystemResourceUsage:
        s = self.resources
        if self._memory is None:
            self._memory = ResourceUsage(s.heap_used_mb, s.heap_mb)
        return SystemResourceUsage(
            cpu=ResourceUsage(float(usage.cpu[i]), float(self.caps.cpu_limit[i])),
            memory=self._memory,
            direct_memory=ResourceUsage(float(usage.direct_memory[i]), s.direct_memory_mb),
            bandwidth_in=ResourceUsage(float(usage.bandwidth_in[i]), float(self.caps.nic_kbps[i])),
            bandwidth_out=ResourceUsage(float(usage.bandwidth_out[i]), float(self.caps.nic_kbps[i])),
        )

    def write_local_data(
        self,
        broker: SimBroker,
        now_ms: int,
        system: SystemResourceUsage,
        totals: tuple[float, float, float, float, int],
        bundles: np.ndarray,
        traffic: BundleTraffic,
        bundle_names: list[str],
        conf: ServiceConfig,
        force: bool = False,
    ) -> bool:
        """Sample the broker; write its ``LocalBrokerData`` if the rule says so. Returns whether it wrote."""
        assert broker.local_data is not None
        rate_in, rate_out, tput_in, tput_out, num_bundles = totals
        current = LocalBrokerData(
            cpu=system.cpu,
            memory=system.memory,
            direct_memory=system.direct_memory,
            bandwidth_in=system.bandwidth_in,
            bandwidth_out=system.bandwidth_out,
            msg_rate_in=rate_in,
            msg_rate_out=rate_out,
            msg_throughput_in=tput_in,
            msg_throughput_out=tput_out,
            num_bundles=num_bundles,
            last_update=broker.local_data.last_update,
        )
        last = broker.last_written or LocalBrokerData()
        decision = need_broker_data_update(
            last,
            current,
            now_ms,
            max_interval_minutes=conf.loadBalancerReportUpdateMaxIntervalMinutes,
            threshold_percentage=conf.loadBalancerReportUpdateThresholdPercentage,
            force=force or broker.report is None,
        )
        if not decision.write:
            return False
        stats = traffic.stats_map(bundles, bundle_names)
        data = broker.local_data
        data.update(system, stats)
        data.last_update = now_ms
        broker.report = data.copy()
        data.clean_deltas()
        current.last_update = now_ms
        broker.last_written = current
        broker.writes += 1
        self._remember(broker.index, current, now_ms)
        return True

    def publish_load_data(
        self,
        broker: SimBroker,
        now_ms: int,
        system: SystemResourceUsage,
        totals: tuple[float, float, float, float, int],
        topics: int,
        conf: ServiceConfig,
        weights: ResourceWeights,
    ) -> bool:
        """Extensible load manager: update the broker's ``BrokerLoadData``; publish it if the rule says so."""
        rate_in, rate_out, tput_in, tput_out, num_bundles = totals
        broker.load_data.update(
            system,
            tput_in,
            tput_out,
            rate_in,
            rate_out,
            num_bundles,
            topics,
            now_ms=now_ms,
            weights=weights,
            history_percentage=conf.loadBalancerHistoryResourcePercentage,
        )
        last = broker.last_published or BrokerLoadData()
        decision = need_broker_data_update(
            last,
            broker.load_data,
            now_ms,
            max_interval_minutes=conf.loadBalancerReportUpdateMaxIntervalMinutes,
            threshold_percentage=conf.loadBalancerReportUpdateThresholdPercentage,
            force=broker.published_load_data is None,
            last_write_ms=last.reported_at,
        )
        if not decision.write:
            return False
        broker.load_data.reported_at = now_ms
        broker.published_load_data = broker.load_data.copy()
        broker.last_published = broker.published_load_data
        broker.writes += 1
        return True

    def publish_top_bundles(
        self,
        broker: SimBroker,
        bundles: np.ndarray,
        traffic: BundleTraffic,
        bundle_names: list[str],
        k: int,
        has_policies: Callable[[str], bool] | None,
        excluded_namespaces: frozenset[str] = frozenset(),
        reportable: np.ndarray | None = None,
    ) -> None:
        """Extensible load manager: the broker's top-``k`` bundles (Pulsar's order, lightest first).

        ``reportable`` (a bool per bundle id) marks the bundles Pulsar's ``TopKBundles`` may
        report at all -- not of a system namespace, not of ``loadBalancerSheddingExcludedNamespaces``,
        without policies unless ``loadBalancerSheddingBundlesWithPoliciesEnabled``; the others are
        left out *before* the heaviest ``k`` are picked, so they never take a place of the K.
        """
        if reportable is not None:
            bundles = bundles[reportable[bundles]]
        candidates = top_k_candidates(bundles, traffic, k)
        stats = {bundle_names[b]: traffic.stats(b) for b in candidates}
        broker.top_bundles = TopBundlesLoadData(
            top_k_bundles(stats, k, excluded_namespaces=excluded_namespaces, has_policies=has_policies)
        )


def top_k_candidates(bundles: np.ndarray, traffic: BundleTraffic, k: int) -> np.ndarray:
    """A subset of ``bundles`` guaranteed to contain their top ``k`` by Pulsar's bundle ordering.

    The ordering's first three keys (rounded throughput in, throughput out, total msg rate) are
    computed vectorised; every bundle whose key is at least the k-th largest is kept, so
    :func:`~brokerlb.model.top_k_bundles` over the subset gives the same answer as over all
    (the later keys only break ties among equal prefixes, which are all kept).
    """
    if k < 0 or len(bundles) <= k:
        return bundles
    tin = np.floor(traffic.msg_throughput_in[bundles] / THROUGHPUT_RESOLUTION + 0.5)
    tout = np.floor(traffic.msg_throughput_out[bundles] / THROUGHPUT_RESOLUTION + 0.5)
    rate = np.floor(
        (traffic.msg_rate_in[bundles] + traffic.msg_rate_out[bundles]) / MSG_RATE_RESOLUTION + 0.5
    )
    order = np.lexsort((rate, tout, tin))[::-1]  # descending by (tin, tout, rate)
    kth = order[k - 1]
    key = (tin[kth], tout[kth], rate[kth])
    keep = (tin > key[0]) | ((tin == key[0]) & ((tout > key[1]) | ((tout == key[1]) & (rate >= key[2]))))
    return bundles[keep]
