"""Builders for load data, so tests read like Pulsar's unit tests.

>>> from brokerlb.testing import broker, bundle_stats, load_data
>>> b1 = broker("b1", cpu=80, bundles={"t/ns/0x00000000_0x40000000": bundle_stats(msg_rate_in=100)})
>>> b1.cpu.percent_usage(), b1.msg_rate_in, b1.num_bundles
(80.0, 100.0, 1)
>>> data = load_data([b1, broker("b2", cpu=10)])
>>> sorted(data.broker_data), data.bundle_data["t/ns/0x00000000_0x40000000"].short_term_data.msg_rate_in
(['b1', 'b2'], 100.0)

Conventions:

* Resource arguments are **percentages** of fixed limits: cpu of :data:`CPU_LIMIT` (8 cores),
  memory of :data:`MEMORY_LIMIT_MB`, direct memory of :data:`DIRECT_MEMORY_LIMIT_MB`,
  bandwidth of :data:`BANDWIDTH_LIMIT_KBPS` (10 Gbit/s), as Pulsar's collectors report them.
* A broker's id is its name; ``broker("b1")`` has ``webServiceUrl`` ``http://b1`` and
  :func:`broker_id` gives ``"b1"`` back. Use ``"host:port"`` names for Pulsar-style ids.
* Everything is deterministic; times default to 0 (pass ``last_update=...``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from brokerlb.model import (
    NUM_LONG_SAMPLES,
    NUM_SHORT_SAMPLES,
    BrokerData,
    BrokerLoadData,
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    ResourceWeights,
    SystemResourceUsage,
    TimeAverageBrokerData,
    TimeAverageMessageData,
)
from brokerlb.model._validate import check_non_negative

__all__ = [
    "BANDWIDTH_LIMIT_KBPS",
    "CPU_LIMIT",
    "DIRECT_MEMORY_LIMIT_MB",
    "MEMORY_LIMIT_MB",
    "broker",
    "broker_id",
    "broker_load",
    "bundle_data",
    "bundle_stats",
    "load_data",
    "system_usage",
    "usage",
]

#: cpu limit used by the builders: 8 cores (Pulsar reports 100 per core).
CPU_LIMIT = 800.0
#: JVM heap limit used by the builders, in MB.
MEMORY_LIMIT_MB = 4096.0
#: JVM direct-memory limit used by the builders, in MB.
DIRECT_MEMORY_LIMIT_MB = 4096.0
#: NIC speed used by the builders, in Kbit/s (10 Gbit/s).
BANDWIDTH_LIMIT_KBPS = 1e7


def usage(percent: float, limit: float = 100.0) -> ResourceUsage:
    """A resource at ``percent`` of ``limit``: ``usage(80, 800)`` is 640 of 800."""
    return ResourceUsage(percent / 100 * limit, limit)


def system_usage(
    cpu: float = 0.0,
    memory: float = 0.0,
    direct_memory: float = 0.0,
    bandwidth_in: float = 0.0,
    bandwidth_out: float = 0.0,
) -> SystemResourceUsage:
    """Host usage from five percentages (of the module's fixed limits)."""
    return SystemResourceUsage(
        cpu=usage(cpu, CPU_LIMIT),
        memory=usage(memory, MEMORY_LIMIT_MB),
        direct_memory=usage(direct_memory, DIRECT_MEMORY_LIMIT_MB),
        bandwidth_in=usage(bandwidth_in, BANDWIDTH_LIMIT_KBPS),
        bandwidth_out=usage(bandwidth_out, BANDWIDTH_LIMIT_KBPS),
    )


def bundle_stats(
    msg_rate_in: float = 0.0,
    msg_rate_out: float = 0.0,
    msg_throughput_in: float = 0.0,
    msg_throughput_out: float = 0.0,
    *,
    topics: int = 1,
    consumer_count: int = 0,
    producer_count: int = 0,
    cache_size: int = 0,
) -> NamespaceBundleStats:
    """A bundle sample (msg/s, bytes/s). ``topics`` defaults to 1: a bundle that reports has a topic."""
    return NamespaceBundleStats(
        msg_rate_in=msg_rate_in,
        msg_throughput_in=msg_throughput_in,
        msg_rate_out=msg_rate_out,
        msg_throughput_out=msg_throughput_out,
        consumer_count=consumer_count,
        producer_count=producer_count,
        topics=topics,
        cache_size=cache_size,
    )


def broker(
    name: str,
    *,
    cpu: float = 0.0,
    memory: float = 0.0,
    direct_memory: float = 0.0,
    bandwidth_in: float = 0.0,
    bandwidth_out: float = 0.0,
    bundles: Mapping[str, NamespaceBundleStats] | Iterable[str] = (),
    msg_rate_in: float | None = None,
    msg_rate_out: float | None = None,
    msg_throughput_in: float | None = None,
    msg_throughput_out: float | None = None,
    last_update: int = 0,
    version: str = "4.0.0",
) -> LocalBrokerData:
    """A broker's :class:`LocalBrokerData` as after a report write.

    ``cpu`` ... ``bandwidth_out`` are percentages. ``bundles`` maps bundle name to its stats
    (a plain list of names gets zero stats with one topic each); totals (rates, throughputs,
    topics, consumers, producers, ``num_bundles``) are summed from them by
    :meth:`LocalBrokerData.update`, and gains/losses are cleared. ``msg_rate_in`` etc.
    override the summed totals (Pulsar's shedder tests set them directly).
    """
    host = name.split(":", 1)[0]
    data = LocalBrokerData(
        web_service_url=f"http://{name}",
        pulsar_service_url=f"pulsar://{host}:6650",
        broker_version_string=version,
        load_manager_class_name="org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
        last_update=last_update,
    )
    stats = (
        dict(bundles)
        if isinstance(bundles, Mapping)
        else {bundle: NamespaceBundleStats(topics=1) for bundle in bundles}
    )
    data.update(system_usage(cpu, memory, direct_memory, bandwidth_in, bandwidth_out), stats)
    data.clean_deltas()
    for attr, value in (
        ("msg_rate_in", msg_rate_in),
        ("msg_rate_out", msg_rate_out),
        ("msg_throughput_in", msg_throughput_in),
        ("msg_throughput_out", msg_throughput_out),
    ):
        if value is not None:
            setattr(data, attr, check_non_negative(value, attr))
    return data


def broker_id(data: LocalBrokerData) -> str:
    """The id :func:`broker` gave: the host[:port] of ``webServiceUrl``."""
    if not data.web_service_url:
        raise ValueError("broker data has no webServiceUrl to take an id from")
    return urlsplit(data.web_service_url).netloc


def bundle_data(
    msg_rate_in: float = 0.0,
    msg_rate_out: float = 0.0,
    msg_throughput_in: float = 0.0,
    msg_throughput_out: float = 0.0,
    *,
    long_msg_rate_in: float | None = None,
    long_msg_rate_out: float | None = None,
    long_msg_throughput_in: float | None = None,
    long_msg_throughput_out: float | None = None,
    topics: int = 1,
    num_samples: int | None = None,
) -> BundleData:
    """A bundle's history: short-term averages as given, long-term the same unless ``long_*`` given.

    Windows are full (``num_samples`` = 10 / 1000, a settled history) unless ``num_samples``
    is given (then used for both, capped at each window's size).
    """

    def window(
        max_samples: int, rate_in: float, rate_out: float, tput_in: float, tput_out: float
    ) -> TimeAverageMessageData:
        samples = max_samples if num_samples is None else min(num_samples, max_samples)
        return TimeAverageMessageData(max_samples, samples, tput_in, tput_out, rate_in, rate_out)

    def pick(value: float | None, fallback: float) -> float:
        return fallback if value is None else value

    return BundleData(
        window(NUM_SHORT_SAMPLES, msg_rate_in, msg_rate_out, msg_throughput_in, msg_throughput_out),
        window(
            NUM_LONG_SAMPLES,
            pick(long_msg_rate_in, msg_rate_in),
            pick(long_msg_rate_out, msg_rate_out),
            pick(long_msg_throughput_in, msg_throughput_in),
            pick(long_msg_throughput_out, msg_throughput_out),
        ),
        topics,
    )


def _history_from(stats: NamespaceBundleStats) -> BundleData:
    return bundle_data(
        stats.msg_rate_in,
        stats.msg_rate_out,
        stats.msg_throughput_in,
        stats.msg_throughput_out,
        topics=stats.topics,
    )


def load_data(
    brokers: Mapping[str, LocalBrokerData] | Iterable[LocalBrokerData],
    bundles: Mapping[str, BundleData] | None = None,
    recently_unloaded: Mapping[str, int] | None = None,
    *,
    history_from_stats: bool = True,
) -> LoadData:
    """A leader's :class:`LoadData` snapshot.

    ``brokers`` is a list of :func:`broker` results (ids from :func:`broker_id`) or a mapping
    id -> :class:`LocalBrokerData`. ``bundles`` gives histories explicitly; with
    ``history_from_stats`` every other bundle a broker reports gets a settled history equal
    to its current stats (as if it had looked like this for a long time). Each broker's
    ``time_average_data`` is then computed as the leader does (unknown bundles count as
    Pulsar's default 50 msg/s, 50 000 B/s).
    """
    by_id = dict(brokers) if isinstance(brokers, Mapping) else {broker_id(b): b for b in brokers}
    histories: dict[str, BundleData] = dict(bundles or {})
    if history_from_stats:
        for local in by_id.values():
            for name, stats in local.last_stats.items():
                histories.setdefault(name, _history_from(stats))
    default = NamespaceBundleStats.new_default()
    broker_data = {
        name: BrokerData(local, TimeAverageBrokerData.of(local.last_stats.keys(), histories, default))
        for name, local in by_id.items()
    }
    return LoadData(broker_data, histories, dict(recently_unloaded or {}))


def broker_load(
    cpu: float = 0.0,
    memory: float = 0.0,
    direct_memory: float = 0.0,
    bandwidth_in: float = 0.0,
    bandwidth_out: float = 0.0,
    *,
    msg_throughput_in: float = 0.0,
    msg_throughput_out: float = 0.0,
    msg_rate_in: float = 0.0,
    msg_rate_out: float = 0.0,
    bundle_count: int = 0,
    topics: int = 0,
    now_ms: int = 1,
    weights: ResourceWeights | None = None,
) -> BrokerLoadData:
    """An extensible-LM :class:`BrokerLoadData` after one update (so ``weighted_max_ema`` is the
    weighted max of the given percentages, e.g. ``broker_load(cpu=55).weighted_max_ema == 0.55``)."""
    data = BrokerLoadData()
    data.update(
        system_usage(cpu, memory, direct_memory, bandwidth_in, bandwidth_out),
        msg_throughput_in,
        msg_throughput_out,
        msg_rate_in,
        msg_rate_out,
        bundle_count,
        topics,
        now_ms=now_ms,
        weights=weights,
    )
    return data
