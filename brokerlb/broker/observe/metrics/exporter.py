"""``/metrics``: every series of one broker in Prometheus text, built at each scrape.

Names are Pulsar's (its internal ``brk_`` prefix becomes ``pulsar_``); every series carries
``cluster`` and ``broker`` (the broker id, ``host:port``). A registry per broker (several brokers
share a process in ``brokerlb standalone``).

=========================================================  ===================================================
series                                                     from
=========================================================  ===================================================
``pulsar_lb_cpu_usage``, ``_memory_usage``,                 this broker's load report (percent of the limit),
``_directMemory_usage``, ``_bandwidth_in_usage``,           ``metric="loadBalancing"``
``_bandwidth_out_usage``
``pulsar_lb_resource_usage{feature=max|max_ema}``           the report's max resource usage and its weighted
                                                            EMA (extensible manager's ``BrokerLoadData``), fractions
``pulsar_lb_resource_usage_stats{feature=max_ema,stat}``    the brokers' load avg / std the last shedding cycle saw
``pulsar_lb_unload_broker_total``, ``_unload_bundle_total``  the leader's carried-out moves
``pulsar_lb_bundles_split_total``                           the leader's carried-out splits
``pulsar_lb_unload_broker_breakdown_total{result,reason}``  every shedding decision (:mod:`.counters`)
``pulsar_lb_bundles_split_breakdown_total{result,reason}``  every split decision
``pulsar_lb_assign_broker_breakdown_total{result}``         placements decided by this broker
``pulsar_broker_load_manager_bundle_assigment``             placement latency summary (ms; Pulsar's spelling)
``pulsar_broker_lookup`` (summary, ms), ``_answers``,       topic lookups answered here
``_redirects``, ``_failures``
``pulsar_bundle_msg_rate_in`` ... ``_consumer_count``       per bundle (``bundle`` label), only with
                                                            ``exposeBundlesMetricsInPrometheus=true``
``pulsar_rate_in``, ``_rate_out``, ``_throughput_in``,      topics served here: per topic (``namespace``,
``_throughput_out``, ``pulsar_producers_count``,            ``topic``) with ``exposeTopicLevelMetricsInPrometheus``
``pulsar_consumers_count``, ``pulsar_subscriptions_count``,  (default), else summed per namespace
``pulsar_msg_backlog``
``brokerlb_balancedness``, ``brokerlb_busiest_broker_       every broker's report as the registry holds it
distance_from_lower_bound``, ``brokerlb_broker_load``,       (:mod:`brokerlb.loadbalance.balance_score`)
``brokerlb_broker_bundles``, ``brokerlb_broker_topics``
``brokerlb_moves_total{kind,cause}``                        the leader's carried-out moves by cause, operators'
                                                            (``cause="Admin"``)
``brokerlb_leader_cycles_total{kind}``                      the leader's steps run (shedding, split checks)
``process_*``, ``python_gc_*``, ``python_info``             prometheus-client's default collectors (the process)
=========================================================  ===================================================

Operators' unloads, transfers and splits through the REST API are counted on the broker that carries
them out, with reason ``Admin``, as Pulsar's extensible manager counts them. An empty summary (no
lookup or placement in the last minute) exports its count and sum without quantiles: nothing in a
scrape is ``NaN``.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Iterator

from prometheus_client import GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.exposition import generate_latest
from prometheus_client.samples import Sample

from brokerlb.broker.data.served_topics import ServedTopics
from brokerlb.broker.observe.metrics.counters import AssignmentMetrics, LoadBalancingCounters, LookupMetrics
from brokerlb.broker.observe.metrics.quantiles import QuantileWindow
from brokerlb.config import ServiceConfig
from brokerlb.loadbalance.balance_score import BalanceScore
from brokerlb.model import LocalBrokerData, SystemResourceUsage
from brokerlb.model.extensible import BrokerLoadData
from brokerlb.model.resources import ResourceWeights

__all__ = ["BrokerMetrics", "CONTENT_TYPE_LATEST"]

#: Prometheus text format 0.0.4, what Pulsar serves and every Prometheus reads.
CONTENT_TYPE_LATEST = "text/plain; version=0.0.4; charset=utf-8"

_USAGE = (
    ("pulsar_lb_cpu_usage", "cpu"),
    ("pulsar_lb_memory_usage", "memory"),
    ("pulsar_lb_directMemory_usage", "direct_memory"),
    ("pulsar_lb_bandwidth_in_usage", "bandwidth_in"),
    ("pulsar_lb_bandwidth_out_usage", "bandwidth_out"),
)
_BUNDLE = (
    ("pulsar_bundle_msg_rate_in", "msg_rate_in"),
    ("pulsar_bundle_msg_rate_out", "msg_rate_out"),
    ("pulsar_bundle_msg_throughput_in", "msg_throughput_in"),
    ("pulsar_bundle_msg_throughput_out", "msg_throughput_out"),
    ("pulsar_bundle_topics_count", "topics"),
    ("pulsar_bundle_producer_count", "producer_count"),
    ("pulsar_bundle_consumer_count", "consumer_count"),
)
_TOPIC = ("pulsar_rate_in", "pulsar_rate_out", "pulsar_throughput_in", "pulsar_throughput_out",
          "pulsar_producers_count", "pulsar_consumers_count", "pulsar_subscriptions_count", "pulsar_msg_backlog")  # fmt: skip


class BrokerMetrics:
    """One broker's metrics (module docstring); :meth:`render` answers a scrape."""

    def __init__(
        self,
        *,
        cluster: str,
        broker_id: str,
        conf: ServiceConfig,
        local_report: Callable[[], LocalBrokerData],
        cluster_reports: Callable[[], dict[str, LocalBrokerData]],
        served: ServedTopics,
        counters: LoadBalancingCounters,
        assignments: AssignmentMetrics,
        lookups: LookupMetrics,
    ) -> None:
        self.cluster = cluster
        self.broker_id = broker_id
        self.conf = conf
        self.local_report = local_report
        self.cluster_reports = cluster_reports
        self.served = served
        self.counters = counters
        self.assignments = assignments
        self.lookups = lookups
        self.load_data = BrokerLoadData()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        # what prometheus_client's default registry exports: process_* (CPU seconds, resident and
        # virtual memory, open files, start time), python_gc_*, python_info
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)

    # ------------------------------------------------------------------ inputs
    def report_written(self, report: LocalBrokerData, now_ms: int) -> None:
        """A load report was written: one more sample of the weighted max EMA (as the extensible
        manager updates its ``BrokerLoadData`` at each report)."""
        usage = SystemResourceUsage(
            report.cpu, report.memory, report.direct_memory, report.bandwidth_in, report.bandwidth_out
        )
        self.load_data.update(
            usage,
            report.msg_throughput_in,
            report.msg_throughput_out,
            report.msg_rate_in,
            report.msg_rate_out,
            report.num_bundles,
            report.num_topics,
            now_ms=max(1, now_ms),
            weights=ResourceWeights.from_config(self.conf),
            history_percentage=self.conf.loadBalancerHistoryResourcePercentage,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)

    # ------------------------------------------------------------------ prometheus_client Collector
    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        labels = {"cluster": self.cluster, "broker": self.broker_id}
        report = self.local_report()
        yield from self._usage(labels, report)
        yield from self._lb_counters(labels)
        yield from self._assignments_and_lookups(labels)
        if self.conf.exposeBundlesMetricsInPrometheus:
            yield from self._bundles(labels, report)
        yield from self._topics()
        yield from self._balance()

    def _usage(self, labels: dict[str, str], report: LocalBrokerData) -> Iterator[Metric]:
        lb = {**labels, "metric": "loadBalancing"}
        for name, attr in _USAGE:
            yield _gauge(
                name, f"Broker {attr} usage, percent of its limit", lb, getattr(report, attr).percent_usage()
            )
        usage = GaugeMetricFamily("pulsar_lb_resource_usage", "Broker load: max resource usage, weighted max EMA",
                                  labels=[*lb, "feature"])  # fmt: skip
        usage.add_metric([*lb.values(), "max"], report.max_resource_usage())
        usage.add_metric([*lb.values(), "max_ema"], self.load_data.weighted_max_ema)
        yield usage
        stats = GaugeMetricFamily(
            "pulsar_lb_resource_usage_stats",
            "Brokers' load average and std at the last shedding cycle (none before the first)",
            labels=[*lb, "feature", "stat"],
        )
        if self.counters.load_avg_std is not None:
            avg, std = self.counters.load_avg_std
            stats.add_metric([*lb.values(), "max_ema", "avg"], avg)
            stats.add_metric([*lb.values(), "max_ema", "std"], std)
        yield stats

    def _lb_counters(self, labels: dict[str, str]) -> Iterator[Metric]:
        c = self.counters
        unloading = {**labels, "metric": "bundleUnloading"}
        yield _counter("pulsar_lb_unload_broker", "Brokers unloaded from", unloading, c.unload_broker)
        yield _counter("pulsar_lb_unload_bundle", "Bundles unloaded", unloading, c.unload_bundle)
        yield _counter(
            "pulsar_lb_bundles_split", "Bundles split", {**labels, "metric": "bundlesSplit"}, c.bundles_split
        )
        yield _breakdown("pulsar_lb_unload_broker_breakdown", "Shedding decisions by result and reason",
                         {**labels, "metric": "bundleUnloading"}, c.unload_breakdown)  # fmt: skip
        yield _breakdown("pulsar_lb_bundles_split_breakdown", "Split decisions by result and reason",
                         {**labels, "metric": "bundlesSplit"}, c.split_breakdown)  # fmt: skip
        moves = CounterMetricFamily("brokerlb_moves", "Moves carried out by the leader, by kind and cause",
                                    labels=[*labels, "kind", "cause"])  # fmt: skip
        for (kind, cause), value in sorted(c.moves.items()):
            moves.add_metric([*labels.values(), kind, cause], value)
        yield moves
        cycles = CounterMetricFamily("brokerlb_leader_cycles", "Leader steps run here, by kind",
                                     labels=[*labels, "kind"])  # fmt: skip
        for kind, value in sorted(c.cycles.items()):
            cycles.add_metric([*labels.values(), kind], value)
        yield cycles

    def _assignments_and_lookups(self, labels: dict[str, str]) -> Iterator[Metric]:
        assign = CounterMetricFamily("pulsar_lb_assign_broker_breakdown", "Placements by result",
                                     labels=[*labels, "metric", "result"])  # fmt: skip
        for result, value in sorted(self.assignments.results.items()):
            assign.add_metric([*labels.values(), "assignBrokerBreakdown", result], value)
        yield assign
        yield _summary("pulsar_broker_load_manager_bundle_assigment", "Placement latency (ms)", labels,
                       self.assignments.latency_ms)  # fmt: skip
        yield _summary("pulsar_broker_lookup", "Topic lookup latency (ms)", labels, self.lookups.latency_ms)
        yield _counter(
            "pulsar_broker_lookup_answers", "Lookups answered with the owner", labels, self.lookups.answers
        )
        yield _counter(
            "pulsar_broker_lookup_redirects",
            "Lookups answered with a redirect",
            labels,
            self.lookups.redirects,
        )
        yield _counter("pulsar_broker_lookup_failures", "Lookups that failed", labels, self.lookups.failures)

    def _bundles(self, labels: dict[str, str], report: LocalBrokerData) -> Iterator[Metric]:
        families = {
            name: GaugeMetricFamily(name, f"Bundle {attr}", labels=[*labels, "bundle"])
            for name, attr in _BUNDLE
        }
        for bundle, stats in sorted(report.last_stats.items()):
            for name, attr in _BUNDLE:
                families[name].add_metric([*labels.values(), bundle], float(getattr(stats, attr)))
        yield from families.values()

    def _topics(self) -> Iterator[Metric]:
        per_topic = self.conf.exposeTopicLevelMetricsInPrometheus
        keys = ["cluster", "namespace", "topic"] if per_topic else ["cluster", "namespace"]
        rows: dict[tuple[str, ...], list[float]] = collections.defaultdict(lambda: [0.0] * len(_TOPIC))
        for name in self.served.names():
            view = self.served.view(name)
            if view is None:
                continue
            namespace = name.split("://", 1)[1].rsplit("/", 1)[0]
            key: tuple[str, ...] = (self.cluster, namespace, name) if per_topic else (self.cluster, namespace)
            s = view.stats
            values = (s.msg_rate_in, s.msg_rate_out, s.msg_throughput_in, s.msg_throughput_out,
                      len(view.publishers), s.consumer_count, len(view.subscriptions),
                      sum(sub.msg_backlog for sub in view.subscriptions))  # fmt: skip
            row = rows[key]
            for i, value in enumerate(values):
                row[i] += float(value)
        for i, name in enumerate(_TOPIC):
            family = GaugeMetricFamily(name, name.removeprefix("pulsar_").replace("_", " "), labels=keys)
            for key, row in sorted(rows.items()):
                family.add_metric(list(key), row[i])
            yield family

    def _balance(self) -> Iterator[Metric]:
        reports = self.cluster_reports()
        loads = {b: r.max_resource_usage() * 100.0 for b, r in reports.items()}
        score = BalanceScore.of(loads)
        cl = {"cluster": self.cluster}
        yield _gauge(
            "brokerlb_balancedness", "100 * mean broker load / busiest broker's load", cl, score.balancedness
        )
        yield _gauge("brokerlb_busiest_broker_distance_from_lower_bound",
                     "Busiest broker's load minus the mean (percentage points)", cl, score.busiest_distance)  # fmt: skip
        per_broker = GaugeMetricFamily("brokerlb_broker_load", "Each broker's reported max resource usage (percent)",
                                       labels=["cluster", "broker"])  # fmt: skip
        bundles = GaugeMetricFamily("brokerlb_broker_bundles", "Bundles each broker reports owning",
                                    labels=["cluster", "broker"])  # fmt: skip
        topics = GaugeMetricFamily("brokerlb_broker_topics", "Topics each broker reports serving",
                                   labels=["cluster", "broker"])  # fmt: skip
        for broker, report in sorted(reports.items()):
            per_broker.add_metric([self.cluster, broker], loads[broker])
            bundles.add_metric([self.cluster, broker], float(report.num_bundles))
            topics.add_metric([self.cluster, broker], float(report.num_topics))
        yield per_broker
        yield bundles
        yield topics


def _gauge(name: str, doc: str, labels: dict[str, str], value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family


def _counter(name: str, doc: str, labels: dict[str, str], value: float) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family


def _breakdown(
    name: str, doc: str, labels: dict[str, str], counts: collections.Counter[tuple[str, str]]
) -> Metric:
    family = CounterMetricFamily(name, doc, labels=[*labels, "result", "reason"])
    for (result, reason), value in sorted(counts.items()):
        family.add_metric([*labels.values(), result, reason], value)
    return family


def _summary(name: str, doc: str, labels: dict[str, str], window: QuantileWindow) -> Metric:
    family = SummaryMetricFamily(name, doc, labels=list(labels))
    for q, value in window.quantiles().items():
        if not math.isnan(value):  # nothing observed in the window: no quantile rather than NaN
            family.samples.append(Sample(name, {**labels, "quantile": _q(q)}, value))
    family.add_metric(list(labels.values()), count_value=window.count, sum_value=window.sum)
    return family


def _q(q: float) -> str:
    return str(q) if not math.isclose(q, 1.0) else "1.0"
