"""A broker's own load report: Pulsar's ``LocalBrokerData``.

This is what each broker writes to ``/loadbalance/brokers/{brokerId}`` (modular
load manager) and what ``pulsar-admin broker-stats load-report`` prints. The JSON
uses Pulsar's names and order; ``null`` values are omitted; ``maxResourceUsage``
and ``loadReportType`` are derived and written, but ignored when read.

The broker refreshes it with :meth:`LocalBrokerData.update` (host usage + the
per-bundle stats), decides with
:func:`~brokerlb.model.report_update.need_broker_data_update` whether to write it,
and after a write sets ``last_update`` and calls :meth:`LocalBrokerData.clean_deltas`.

Reading JSON (:meth:`LocalBrokerData.from_json`) follows Pulsar's Jackson set-up:
unknown keys are ignored; a missing (or ``null``) key takes the default of Pulsar's
constructor (resources 0/0, counts 0, flags ``true``, empty maps and sets, ``lastUpdate``
0 -- no clock is read). A document that is a Simple-load-manager ``LoadReport``
(``"loadReportType": "LoadReport"`` or an ``underLoaded`` key, which Pulsar's
``LoadReportDeserializer`` sends to another class) is refused. Every number is
validated (see :mod:`brokerlb.model.resources` and :mod:`brokerlb.model.bundle_stats`);
the first bad one raises :class:`~brokerlb.errors.InvalidLoadDataError` with its path,
e.g. ``cpu.usage`` or ``lastStats[t/ns/0x00000000_0x40000000].msgRateIn``, and nothing
is half-read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, ClassVar

from brokerlb.model._validate import JsonObject, check_count, check_non_negative, check_str, invalid
from brokerlb.model.bundle_stats import NamespaceBundleStats
from brokerlb.model.resources import ResourceUsage, SystemResourceUsage
from brokerlb.model.stats_columns import BundleStatsColumns, stats_columns_from_json
from brokerlb.model.usage import (
    max_usage,
    max_usage_with_memory_2x,
    max_usage_with_weight,
    max_usage_with_weight_within_limit,
)

__all__ = ["LocalBrokerData", "AdvertisedListener", "LOAD_REPORT_TYPE"]

#: ``loadReportType`` written in every ``LocalBrokerData`` JSON.
LOAD_REPORT_TYPE = "LocalBrokerData"


@dataclass(frozen=True, slots=True)
class AdvertisedListener:
    """One advertised listener: JSON ``{"brokerServiceUrl": ..., "brokerServiceUrlTls": ...}``."""

    broker_service_url: str | None = None
    broker_service_url_tls: str | None = None

    def __post_init__(self) -> None:
        check_str(self.broker_service_url, "brokerServiceUrl")
        check_str(self.broker_service_url_tls, "brokerServiceUrlTls")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.broker_service_url is not None:
            out["brokerServiceUrl"] = self.broker_service_url
        if self.broker_service_url_tls is not None:
            out["brokerServiceUrlTls"] = self.broker_service_url_tls
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> AdvertisedListener:
        obj = JsonObject(data, path)
        return cls(obj.text("brokerServiceUrl"), obj.text("brokerServiceUrlTls"))


_URL_FIELDS = (
    ("web_service_url", "webServiceUrl"),
    ("web_service_url_tls", "webServiceUrlTls"),
    ("pulsar_service_url", "pulsarServiceUrl"),
    ("pulsar_service_url_tls", "pulsarServiceUrlTls"),
)
_RESOURCE_FIELDS = (
    ("cpu", "cpu"),
    ("memory", "memory"),
    ("direct_memory", "directMemory"),
    ("bandwidth_in", "bandwidthIn"),
    ("bandwidth_out", "bandwidthOut"),
)
_TOTAL_FIELDS = (
    ("msg_throughput_in", "msgThroughputIn"),
    ("msg_throughput_out", "msgThroughputOut"),
    ("msg_rate_in", "msgRateIn"),
    ("msg_rate_out", "msgRateOut"),
)
_COUNT_FIELDS = (
    ("num_topics", "numTopics"),
    ("num_bundles", "numBundles"),
    ("num_consumers", "numConsumers"),
    ("num_producers", "numProducers"),
)
_SET_FIELDS = (
    ("bundles", "bundles"),
    ("last_bundle_gains", "lastBundleGains"),
    ("last_bundle_losses", "lastBundleLosses"),
)


@dataclass(slots=True)
class LocalBrokerData:
    """Everything a broker reports about itself (Pulsar's ``LocalBrokerData``, all fields).

    Attributes are Pulsar's fields in snake_case. ``bundles``/``last_bundle_gains``/
    ``last_bundle_losses`` are sets (Pulsar's ``HashSet``); JSON lists them sorted.
    ``last_stats`` maps bundle name to its latest :class:`NamespaceBundleStats`: a ``dict``, or
    the same map held as columns (:class:`~brokerlb.model.BundleStatsColumns`, read-only; a report
    written in process, which the leader's fold reads without making the samples).
    Times are milliseconds since the epoch, passed in by the caller.
    """

    load_report_type: ClassVar[str] = LOAD_REPORT_TYPE

    web_service_url: str | None = None
    web_service_url_tls: str | None = None
    pulsar_service_url: str | None = None
    pulsar_service_url_tls: str | None = None
    persistent_topics_enabled: bool = True
    non_persistent_topics_enabled: bool = True
    cpu: ResourceUsage = field(default_factory=ResourceUsage)
    memory: ResourceUsage = field(default_factory=ResourceUsage)
    direct_memory: ResourceUsage = field(default_factory=ResourceUsage)
    bandwidth_in: ResourceUsage = field(default_factory=ResourceUsage)
    bandwidth_out: ResourceUsage = field(default_factory=ResourceUsage)
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    last_update: int = 0
    last_stats: Mapping[str, NamespaceBundleStats] = field(default_factory=dict)
    num_topics: int = 0
    num_bundles: int = 0
    num_consumers: int = 0
    num_producers: int = 0
    bundles: set[str] = field(default_factory=set)
    last_bundle_gains: set[str] = field(default_factory=set)
    last_bundle_losses: set[str] = field(default_factory=set)
    broker_version_string: str | None = None
    protocols: dict[str, str] = field(default_factory=dict)
    advertised_listeners: dict[str, AdvertisedListener] = field(default_factory=dict)
    load_manager_class_name: str | None = None
    start_timestamp: int = 0

    def __post_init__(self) -> None:
        for attr, key in _URL_FIELDS:
            check_str(getattr(self, attr), key)
        check_str(self.broker_version_string, "brokerVersionString")
        check_str(self.load_manager_class_name, "loadManagerClassName")
        for attr, key in _RESOURCE_FIELDS:
            if not isinstance(getattr(self, attr), ResourceUsage):
                raise invalid(key, getattr(self, attr), "expected a ResourceUsage")
        for attr, key in _TOTAL_FIELDS:
            setattr(self, attr, check_non_negative(getattr(self, attr), key))
        for attr, key in _COUNT_FIELDS + (
            ("last_update", "lastUpdate"),
            ("start_timestamp", "startTimestamp"),
        ):
            setattr(self, attr, check_count(getattr(self, attr), key))
        self.last_stats = _checked_stats(self.last_stats, "lastStats")
        for attr, key in _SET_FIELDS:
            value = getattr(self, attr)
            if isinstance(value, str) or not all(isinstance(item, str) for item in value):
                raise invalid(key, value, "expected a collection of bundle names")
            setattr(self, attr, set(value))

    # ------------------------------------------------------------------ updates

    def update(
        self, system_resource_usage: SystemResourceUsage, bundle_stats: Mapping[str, NamespaceBundleStats]
    ) -> None:
        """Take new host usage and bundle stats (Pulsar's ``update(SystemResourceUsage, Map)``).

        * the five resources are replaced;
        * totals are recomputed as sums over ``bundle_stats`` (throughputs, rates, topics,
          consumers, producers; ``num_bundles`` = number of entries);
        * a bundle in ``bundles`` but not in ``bundle_stats`` is added to
          ``last_bundle_losses`` and removed; a new one is added to ``last_bundle_gains``
          and ``bundles``. Gains/losses accumulate until :meth:`clean_deltas`;
        * ``last_stats`` becomes (a copy of) ``bundle_stats`` (columns are kept as they are:
          they cannot change). ``last_update`` is untouched.
        """
        if not isinstance(system_resource_usage, SystemResourceUsage):
            raise invalid("systemResourceUsage", system_resource_usage, "expected a SystemResourceUsage")
        stats = _checked_stats(bundle_stats, "bundleStats")
        self._set_resources(
            system_resource_usage.cpu,
            system_resource_usage.memory,
            system_resource_usage.direct_memory,
            system_resource_usage.bandwidth_in,
            system_resource_usage.bandwidth_out,
        )
        self._update_bundle_data(stats)
        self.last_stats = stats

    def update_from(self, other: LocalBrokerData) -> None:
        """Pulsar's ``update(LocalBrokerData other)``: take ``other``'s resources and ``last_stats``,
        recompute totals and gains/losses here. (Used to keep the "last written" copy.)"""
        self._set_resources(
            other.cpu, other.memory, other.direct_memory, other.bandwidth_in, other.bandwidth_out
        )
        stats = other.last_stats
        if not isinstance(stats, BundleStatsColumns):
            stats = dict(stats)
        self._update_bundle_data(stats)
        self.last_stats = stats

    def clean_deltas(self) -> None:
        """Forget bundle gains and losses (done after each successful write)."""
        self.last_bundle_gains.clear()
        self.last_bundle_losses.clear()

    def _set_resources(
        self,
        cpu: ResourceUsage,
        memory: ResourceUsage,
        direct_memory: ResourceUsage,
        bandwidth_in: ResourceUsage,
        bandwidth_out: ResourceUsage,
    ) -> None:
        self.cpu = cpu
        self.memory = memory
        self.direct_memory = direct_memory
        self.bandwidth_in = bandwidth_in
        self.bandwidth_out = bandwidth_out

    def _update_bundle_data(self, stats: Mapping[str, NamespaceBundleStats]) -> None:
        lost = {bundle for bundle in self.bundles if bundle not in stats}
        self.last_bundle_losses |= lost
        self.bundles -= lost
        if isinstance(stats, BundleStatsColumns):
            gained = set(stats.names)
            gained -= self.bundles
            self.last_bundle_gains |= gained
            self.bundles |= gained
            (
                self.msg_throughput_in,
                self.msg_throughput_out,
                self.msg_rate_in,
                self.msg_rate_out,
                self.num_topics,
                self.num_consumers,
                self.num_producers,
            ) = stats.totals()
            self.num_bundles = len(stats)
            return
        throughput_in = throughput_out = rate_in = rate_out = 0.0
        topics = consumers = producers = 0
        for bundle, sample in stats.items():
            if bundle not in self.bundles:
                self.last_bundle_gains.add(bundle)
                self.bundles.add(bundle)
            throughput_in += sample.msg_throughput_in
            throughput_out += sample.msg_throughput_out
            rate_in += sample.msg_rate_in
            rate_out += sample.msg_rate_out
            topics += sample.topics
            consumers += sample.consumer_count
            producers += sample.producer_count
        self.msg_throughput_in, self.msg_throughput_out = throughput_in, throughput_out
        self.msg_rate_in, self.msg_rate_out = rate_in, rate_out
        self.num_topics, self.num_bundles = topics, len(stats)
        self.num_consumers, self.num_producers = consumers, producers

    # ------------------------------------------------------------------ derived load

    def total_msg_rate(self) -> float:
        """``msgRateIn + msgRateOut``."""
        return self.msg_rate_in + self.msg_rate_out

    def total_msg_throughput(self) -> float:
        """``msgThroughputIn + msgThroughputOut`` (bytes/s)."""
        return self.msg_throughput_in + self.msg_throughput_out

    def max_resource_usage(self, *, include_memory: bool = False) -> float:
        """Highest resource usage as a fraction (``getMaxResourceUsage``).

        Default (current Pulsar): ``max(cpu%, directMemory%, bwIn%, bwOut%) / 100``.
        ``include_memory=True`` reproduces Pulsar 2.x exactly: memory included, computed
        in float32 (see :func:`brokerlb.model.usage.max_usage_with_memory_2x`).
        """
        if include_memory:
            return max_usage_with_memory_2x(
                self.cpu, self.memory, self.direct_memory, self.bandwidth_in, self.bandwidth_out
            )
        return max_usage(self.cpu, self.direct_memory, self.bandwidth_in, self.bandwidth_out)

    def max_resource_usage_with_weight(
        self,
        cpu_weight: float,
        memory_weight: float,
        direct_memory_weight: float,
        bandwidth_in_weight: float,
        bandwidth_out_weight: float,
    ) -> float:
        """``max(cpu%*w, memory%*w, directMemory%*w, bwIn%*w, bwOut%*w) / 100`` (5-weight overload)."""
        return max_usage_with_weight(
            self.cpu,
            self.memory,
            self.direct_memory,
            self.bandwidth_in,
            self.bandwidth_out,
            (cpu_weight, memory_weight, direct_memory_weight, bandwidth_in_weight, bandwidth_out_weight),
        )

    def max_resource_usage_with_weight_no_memory(
        self,
        cpu_weight: float,
        direct_memory_weight: float,
        bandwidth_in_weight: float,
        bandwidth_out_weight: float,
    ) -> float:
        """The 4-weight overload AvgShedder calls: ``max(cpu%*w, directMemory%*w, bwIn%*w, bwOut%*w) / 100``."""
        return max_usage_with_weight(
            self.cpu,
            self.memory,
            self.direct_memory,
            self.bandwidth_in,
            self.bandwidth_out,
            (cpu_weight, None, direct_memory_weight, bandwidth_in_weight, bandwidth_out_weight),
        )

    def max_resource_usage_with_weight_within_limit(
        self,
        cpu_weight: float,
        memory_weight: float,
        direct_memory_weight: float,
        bandwidth_in_weight: float,
        bandwidth_out_weight: float,
    ) -> float:
        """Like :meth:`max_resource_usage_with_weight` but weighted terms above 100% are ignored."""
        return max_usage_with_weight_within_limit(
            self.cpu,
            self.memory,
            self.direct_memory,
            self.bandwidth_in,
            self.bandwidth_out,
            (cpu_weight, memory_weight, direct_memory_weight, bandwidth_in_weight, bandwidth_out_weight),
        )

    def print_resource_usage(self) -> str:
        """Pulsar's ``printResourceUsage()``: the five resources in percent, for logs and decisions.

        ``String.format(Locale.ENGLISH, "cpu: %.2f%%, ...")`` of Java's 32-bit percentages: Java
        rounds the shortest decimal of the value half up (Python's format would round 0.125 to even).

        >>> LocalBrokerData(cpu=ResourceUsage(12.5, 400.0)).print_resource_usage()
        'cpu: 3.13%, memory: 0.00%, directMemory: 0.00%, bandwidthIn: 0.00%, bandwidthOut: 0.00%'
        """
        return ", ".join(
            f"{name}: {_java_two_decimals(usage.percent_usage())}%"
            for name, usage in (
                ("cpu", self.cpu),
                ("memory", self.memory),
                ("directMemory", self.direct_memory),
                ("bandwidthIn", self.bandwidth_in),
                ("bandwidthOut", self.bandwidth_out),
            )
        )

    # ------------------------------------------------------------------ copies and JSON

    def copy(self) -> LocalBrokerData:
        """An independent copy (collections copied; their values are immutable). Not validated
        again: every value was checked when this report was made or read, and the collections are
        copied as they are."""
        clone: LocalBrokerData = object.__new__(LocalBrokerData)
        for name, value in zip(_FIELD_NAMES, map(self.__getattribute__, _FIELD_NAMES), strict=True):
            _set_field[name](clone, value)
        stats = self.last_stats
        clone.last_stats = stats if isinstance(stats, BundleStatsColumns) else dict(stats)
        clone.bundles = set(self.bundles)
        clone.last_bundle_gains = set(self.last_bundle_gains)
        clone.last_bundle_losses = set(self.last_bundle_losses)
        clone.protocols = dict(self.protocols)
        clone.advertised_listeners = dict(self.advertised_listeners)
        return clone

    def to_json(self, *, include_memory_in_max: bool = False) -> dict[str, Any]:
        """Pulsar's JSON (field order as Jackson writes it, nulls omitted).

        ``maxResourceUsage`` is :meth:`max_resource_usage` (``include_memory_in_max`` picks
        the 2.x formula).
        """
        out: dict[str, Any] = {}
        for attr, key in _URL_FIELDS:
            if getattr(self, attr) is not None:
                out[key] = getattr(self, attr)
        out["persistentTopicsEnabled"] = self.persistent_topics_enabled
        out["nonPersistentTopicsEnabled"] = self.non_persistent_topics_enabled
        for attr, key in _RESOURCE_FIELDS:
            out[key] = getattr(self, attr).to_json()
        for attr, key in _TOTAL_FIELDS:
            out[key] = getattr(self, attr)
        out["lastUpdate"] = self.last_update
        out["lastStats"] = {bundle: stats.to_json() for bundle, stats in self.last_stats.items()}
        for attr, key in _COUNT_FIELDS:
            out[key] = getattr(self, attr)
        for attr, key in _SET_FIELDS:
            out[key] = sorted(getattr(self, attr))
        if self.broker_version_string is not None:
            out["brokerVersionString"] = self.broker_version_string
        out["protocols"] = dict(self.protocols)
        out["advertisedListeners"] = {name: lst.to_json() for name, lst in self.advertised_listeners.items()}
        if self.load_manager_class_name is not None:
            out["loadManagerClassName"] = self.load_manager_class_name
        out["startTimestamp"] = self.start_timestamp
        out["maxResourceUsage"] = self.max_resource_usage(include_memory=include_memory_in_max)
        out["loadReportType"] = LOAD_REPORT_TYPE
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> LocalBrokerData:
        """Read a ``LocalBrokerData`` JSON document (rules in the module docstring)."""
        obj = JsonObject(data, path)
        report_type = obj.raw("loadReportType")
        if report_type == "LoadReport" or "underLoaded" in obj.data:
            raise invalid(
                obj.field("loadReportType"),
                report_type,
                "a SimpleLoadManagerImpl LoadReport, not a LocalBrokerData document",
            )
        values: dict[str, Any] = {attr: obj.text(key) for attr, key in _URL_FIELDS}
        values["persistent_topics_enabled"] = obj.flag("persistentTopicsEnabled", True)
        values["non_persistent_topics_enabled"] = obj.flag("nonPersistentTopicsEnabled", True)
        for attr, key in _RESOURCE_FIELDS:
            sub = obj.obj(key)
            values[attr] = ResourceUsage() if sub is None else ResourceUsage.from_json(sub.data, sub.path)
        for attr, key in _TOTAL_FIELDS:
            values[attr] = obj.rate(key)
        values["last_update"] = obj.timestamp("lastUpdate")
        values["last_stats"] = stats_columns_from_json(obj.raw("lastStats"), obj.field("lastStats"))
        for attr, key in _COUNT_FIELDS:
            values[attr] = obj.count(key)
        for attr, key in _SET_FIELDS:
            values[attr] = set(obj.str_list(key))
        values["broker_version_string"] = obj.text("brokerVersionString")
        values["protocols"] = obj.str_map("protocols")
        values["advertised_listeners"] = {
            name: AdvertisedListener.from_json(item, item_path)
            for name, item, item_path in obj.entries("advertisedListeners")
        }
        values["load_manager_class_name"] = obj.text("loadManagerClassName")
        values["start_timestamp"] = obj.timestamp("startTimestamp")
        return cls(**values)


_FIELD_NAMES = tuple(f.name for f in fields(LocalBrokerData))
_set_field = {name: getattr(LocalBrokerData, name).__set__ for name in _FIELD_NAMES}


def _checked_stats(
    bundle_stats: Mapping[str, NamespaceBundleStats], field: str
) -> Mapping[str, NamespaceBundleStats]:
    """A copy of ``bundle_stats`` checked entry by entry; columns as they are (checked when made,
    and read-only)."""
    if isinstance(bundle_stats, BundleStatsColumns):
        return bundle_stats
    if not isinstance(bundle_stats, Mapping):
        raise invalid(field, bundle_stats, "expected a mapping of bundle name to NamespaceBundleStats")
    stats: dict[str, NamespaceBundleStats] = {}
    for bundle, sample in bundle_stats.items():
        if not isinstance(bundle, str):
            raise invalid(field, bundle, "bundle names must be strings")
        if not isinstance(sample, NamespaceBundleStats):
            raise invalid(f"{field}[{bundle}]", sample, "expected a NamespaceBundleStats")
        stats[bundle] = sample
    return stats


def _java_two_decimals(value: float) -> str:
    """Java's ``%.2f``: the shortest decimal of ``value`` rounded half up to two places."""
    return str(Decimal(repr(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
