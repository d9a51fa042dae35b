"""Load data of Pulsar's extensible load manager (PIP-192): ``BrokerLoadData`` and top-K bundles.

Each broker publishes a :class:`BrokerLoadData` (topic
``loadbalancer-broker-load-data``) and a :class:`TopBundlesLoadData` (its
heaviest bundles, topic ``loadbalancer-top-bundles-load-data``).

:meth:`BrokerLoadData.update` follows Pulsar's ``BrokerLoadData.update(usage,
msgThroughputIn, msgThroughputOut, msgRateIn, msgRateOut, bundleCount, topics,
conf)``, with the configuration passed as plain values and the time passed in:

* ``max_resource_usage = max(cpu%, directMemory%, bwIn%, bwOut%) / 100`` (memory excluded);
* ``weighted_max = max(cpu%*w, memory%*w, directMemory%*w, bwIn%*w, bwOut%*w) / 100``
  with the five ``loadBalancer*ResourceWeight`` weights;
* ``weighted_max_ema = weighted_max`` on the first update (``updated_at == 0``), else
  ``ema * h + (1 - h) * weighted_max`` with ``h = loadBalancerHistoryResourcePercentage`` (0.9);
* ``msg_throughput_ema`` likewise over ``msgThroughputIn + msgThroughputOut``;
* ``updated_at = now_ms``.

Before any update ``max_resource_usage`` and ``weighted_max_ema`` are 1.0 (Pulsar's
``DEFAULT_RESOURCE_USAGE``: an unknown broker looks full), ``msg_throughput_ema`` 0.

Worked example (Pulsar's ``BrokerLoadDataTest``: weights 0.5, h = 0.75): memory 800 of
200 gives ``weighted_max = 400% * 0.5 / 100 = 2.0`` on the first update, so the EMA is
2.0; a second update with cpu 300 of 100 gives ``1.5`` and the EMA becomes
``2.0 * 0.75 + 0.25 * 1.5 = 1.875``.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from brokerlb.errors import InvalidConfigError
from brokerlb.model._validate import (
    JsonObject,
    check_count,
    check_non_negative,
    check_str,
    invalid,
)
from brokerlb.model.bundle_stats import NamespaceBundleStats, bundle_namespace
from brokerlb.model.resources import ResourceUsage, ResourceWeights, SystemResourceUsage
from brokerlb.model.usage import max_usage, max_usage_with_weight
from brokerlb.naming import is_system_service_namespace

__all__ = [
    "BrokerLoadData",
    "BundleLoadData",
    "TopBundlesLoadData",
    "top_k_bundles",
    "DEFAULT_HISTORY_RESOURCE_PERCENTAGE",
    "DEFAULT_RESOURCE_USAGE",
]

#: ``loadBalancerHistoryResourcePercentage`` default.
DEFAULT_HISTORY_RESOURCE_PERCENTAGE = 0.9
#: Max resource usage of a broker that never reported (Pulsar's ``DEFAULT_RESOURCE_USAGE``).
DEFAULT_RESOURCE_USAGE = 1.0

_RESOURCE_FIELDS = (
    ("cpu", "cpu"),
    ("memory", "memory"),
    ("direct_memory", "directMemory"),
    ("bandwidth_in", "bandwidthIn"),
    ("bandwidth_out", "bandwidthOut"),
)
_RATE_FIELDS = (
    ("msg_throughput_in", "msgThroughputIn"),
    ("msg_throughput_out", "msgThroughputOut"),
    ("msg_rate_in", "msgRateIn"),
    ("msg_rate_out", "msgRateOut"),
)


def _check_history(h: Any) -> float:
    if isinstance(h, bool) or not isinstance(h, int | float) or not 0.0 <= h <= 1.0:
        raise InvalidConfigError(
            "loadBalancerHistoryResourcePercentage", h, "must be a number between 0 and 1"
        )
    return float(h)


@dataclass(slots=True)
class BrokerLoadData:
    """A broker's load as the extensible load manager sees it (JSON keys in Pulsar's order:
    ``cpu, memory, directMemory, bandwidthIn, bandwidthOut, msgThroughputIn, msgThroughputOut,
    msgRateIn, msgRateOut, bundleCount, topics, maxResourceUsage, weightedMaxEMA,
    msgThroughputEMA, updatedAt, reportedAt``).

    Validation: rates, throughputs and ``msg_throughput_ema`` finite and ``>= 0``;
    ``max_resource_usage`` and ``weighted_max_ema`` finite and ``>= 0``; counts and times
    integers ``>= 0``.
    """

    cpu: ResourceUsage = field(default_factory=ResourceUsage)
    memory: ResourceUsage = field(default_factory=ResourceUsage)
    direct_memory: ResourceUsage = field(default_factory=ResourceUsage)
    bandwidth_in: ResourceUsage = field(default_factory=ResourceUsage)
    bandwidth_out: ResourceUsage = field(default_factory=ResourceUsage)
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    bundle_count: int = 0
    topics: int = 0
    max_resource_usage: float = DEFAULT_RESOURCE_USAGE
    weighted_max_ema: float = DEFAULT_RESOURCE_USAGE
    msg_throughput_ema: float = 0.0
    updated_at: int = 0
    reported_at: int = 0

    def __post_init__(self) -> None:
        for attr, key in _RESOURCE_FIELDS:
            if not isinstance(getattr(self, attr), ResourceUsage):
                raise invalid(key, getattr(self, attr), "expected a ResourceUsage")
        for attr, key in _RATE_FIELDS + (
            ("max_resource_usage", "maxResourceUsage"),
            ("weighted_max_ema", "weightedMaxEMA"),
            ("msg_throughput_ema", "msgThroughputEMA"),
        ):
            setattr(self, attr, check_non_negative(getattr(self, attr), key))
        for attr, key in (
            ("bundle_count", "bundleCount"),
            ("topics", "topics"),
            ("updated_at", "updatedAt"),
            ("reported_at", "reportedAt"),
        ):
            setattr(self, attr, check_count(getattr(self, attr), key))

    def update(
        self,
        usage: SystemResourceUsage,
        msg_throughput_in: float,
        msg_throughput_out: float,
        msg_rate_in: float,
        msg_rate_out: float,
        bundle_count: int,
        topics: int,
        *,
        now_ms: int,
        weights: ResourceWeights | None = None,
        history_percentage: float = DEFAULT_HISTORY_RESOURCE_PERCENTAGE,
    ) -> None:
        """New sample; recompute the features (module docstring) and set ``updated_at = now_ms``.

        ``now_ms`` must be ``> 0``: Pulsar uses ``updatedAt == 0`` to mean "never updated".
        All inputs are validated before anything changes.
        """
        if not isinstance(usage, SystemResourceUsage):
            raise invalid("usage", usage, "expected a SystemResourceUsage")
        rates = [
            check_non_negative(value, key)
            for value, (_, key) in zip(
                (msg_throughput_in, msg_throughput_out, msg_rate_in, msg_rate_out), _RATE_FIELDS, strict=True
            )
        ]
        bundle_count = check_count(bundle_count, "bundleCount")
        topics = check_count(topics, "topics")
        if check_count(now_ms, "now_ms") <= 0:
            raise invalid("now_ms", now_ms, "must be > 0 (updatedAt == 0 means 'never updated')")
        h = _check_history(history_percentage)
        w = weights or ResourceWeights()

        self.cpu, self.memory, self.direct_memory = usage.cpu, usage.memory, usage.direct_memory
        self.bandwidth_in, self.bandwidth_out = usage.bandwidth_in, usage.bandwidth_out
        self.msg_throughput_in, self.msg_throughput_out, self.msg_rate_in, self.msg_rate_out = rates
        self.bundle_count, self.topics = bundle_count, topics

        self.max_resource_usage = max_usage(
            self.cpu, self.direct_memory, self.bandwidth_in, self.bandwidth_out
        )
        weighted_max = max_usage_with_weight(
            self.cpu,
            self.memory,
            self.direct_memory,
            self.bandwidth_in,
            self.bandwidth_out,
            (w.cpu, w.memory, w.direct_memory, w.bandwidth_in, w.bandwidth_out),
        )
        throughput = self.msg_throughput_in + self.msg_throughput_out
        first = self.updated_at == 0
        self.weighted_max_ema = weighted_max if first else self.weighted_max_ema * h + (1 - h) * weighted_max
        self.msg_throughput_ema = throughput if first else self.msg_throughput_ema * h + (1 - h) * throughput
        self.updated_at = now_ms

    def update_from(self, other: BrokerLoadData) -> None:
        """Pulsar's ``update(BrokerLoadData other)``: copy every field of ``other``."""
        for f in _FIELDS:
            setattr(self, f, getattr(other, f))

    def clear(self) -> None:
        """Back to the never-updated state (Pulsar's ``clear()``)."""
        self.update_from(BrokerLoadData())

    def total_msg_rate(self) -> float:
        return self.msg_rate_in + self.msg_rate_out

    def total_msg_throughput(self) -> float:
        return self.msg_throughput_in + self.msg_throughput_out

    def copy(self) -> BrokerLoadData:
        clone = BrokerLoadData()
        clone.update_from(self)
        return clone

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {key: getattr(self, attr).to_json() for attr, key in _RESOURCE_FIELDS}
        out.update({key: getattr(self, attr) for attr, key in _RATE_FIELDS})
        out["bundleCount"] = self.bundle_count
        out["topics"] = self.topics
        out["maxResourceUsage"] = self.max_resource_usage
        out["weightedMaxEMA"] = self.weighted_max_ema
        out["msgThroughputEMA"] = self.msg_throughput_ema
        out["updatedAt"] = self.updated_at
        out["reportedAt"] = self.reported_at
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> BrokerLoadData:
        """Read Pulsar's JSON; missing keys take the never-updated defaults, unknown keys are ignored."""
        obj = JsonObject(data, path)
        values: dict[str, Any] = {}
        for attr, key in _RESOURCE_FIELDS:
            sub = obj.obj(key)
            values[attr] = ResourceUsage() if sub is None else ResourceUsage.from_json(sub.data, sub.path)
        values.update({attr: obj.rate(key) for attr, key in _RATE_FIELDS})
        values["bundle_count"] = obj.count("bundleCount")
        values["topics"] = obj.count("topics")
        values["max_resource_usage"] = obj.rate("maxResourceUsage", DEFAULT_RESOURCE_USAGE)
        values["weighted_max_ema"] = obj.rate("weightedMaxEMA", DEFAULT_RESOURCE_USAGE)
        values["msg_throughput_ema"] = obj.rate("msgThroughputEMA")
        values["updated_at"] = obj.timestamp("updatedAt")
        values["reported_at"] = obj.timestamp("reportedAt")
        return cls(**values)


_FIELDS = tuple(f.name for f in fields(BrokerLoadData))


# --------------------------------------------------------------------------- top-K bundles


@dataclass(frozen=True, slots=True)
class BundleLoadData:
    """One entry of a top-bundles report: JSON ``{"bundleName": ..., "stats": {...}}``."""

    bundle_name: str
    stats: NamespaceBundleStats

    def __post_init__(self) -> None:
        check_str(self.bundle_name, "bundleName", optional=False)
        if not isinstance(self.stats, NamespaceBundleStats):
            raise invalid("stats", self.stats, "expected a NamespaceBundleStats")

    def to_json(self) -> dict[str, Any]:
        return {"bundleName": self.bundle_name, "stats": self.stats.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> BundleLoadData:
        obj = JsonObject(data, path)
        name = obj.text("bundleName")
        if name is None:
            raise invalid(obj.field("bundleName"), None, "required")
        stats = obj.obj("stats")
        return cls(
            name,
            NamespaceBundleStats()
            if stats is None
            else NamespaceBundleStats.from_json(stats.data, stats.path),
        )


def top_k_bundles(
    bundle_stats: Mapping[str, NamespaceBundleStats],
    k: int,
    *,
    excluded_namespaces: Collection[str] = (),
    has_policies: Callable[[str], bool] | None = None,
) -> list[BundleLoadData]:
    """The ``k`` heaviest bundles, in **Pulsar's report order: lightest of the K first, heaviest last**.

    As Pulsar's ``TopKBundles.update``: bundles of system-service namespaces
    (``pulsar/system``, heartbeat, SLA) and of ``excluded_namespaces``
    (``loadBalancerSheddingExcludedNamespaces``) are left out, and so are bundles for which
    ``has_policies(bundle)`` is true (pass a predicate for "namespace has an isolation policy
    or an anti-affinity group" unless ``loadBalancerSheddingBundlesWithPoliciesEnabled``).
    Heaviness is :meth:`NamespaceBundleStats.sort_key`; equal keys are ordered by bundle name
    so the result is deterministic. ``k`` is ``loadBalancerMaxNumberOfBundlesInBundleLoadReport``;
    ``k < 0`` means no limit (the modular load manager's "-1 disables the filter").

    >>> heavy = NamespaceBundleStats(msg_rate_in=100_000.0)
    >>> light = NamespaceBundleStats(msg_rate_in=500.0)
    >>> [b.bundle_name for b in top_k_bundles({"t/a/0x0_0x1": heavy, "t/b/0x0_0x1": light}, 2)]
    ['t/b/0x0_0x1', 't/a/0x0_0x1']
    """
    k = int(k)
    excluded = set(excluded_namespaces)
    skip_namespace: dict[str, bool] = {}
    ranked: list[tuple[tuple[int, ...], str, NamespaceBundleStats]] = []
    for bundle, stats in bundle_stats.items():
        namespace = bundle_namespace(bundle)
        skip = skip_namespace.get(namespace)
        if skip is None:
            skip = skip_namespace[namespace] = is_system_service_namespace(namespace) or namespace in excluded
        if skip or (has_policies is not None and has_policies(bundle)):
            continue
        # negated key: ascending order = heaviest first, then the smaller name (names are unique)
        ranked.append((tuple(-part for part in stats.sort_key()), bundle, stats))
    if 0 <= k < len(ranked):
        ranked = heapq.nsmallest(k, ranked)
    else:
        ranked.sort()
    return [BundleLoadData(bundle, stats) for _, bundle, stats in reversed(ranked)]


@dataclass(slots=True)
class TopBundlesLoadData:
    """A broker's top-bundles report: JSON ``{"topBundlesLoadData": [{"bundleName", "stats"}, ...]}``."""

    top_bundles_load_data: list[BundleLoadData] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        bundle_stats: Mapping[str, NamespaceBundleStats],
        k: int,
        *,
        excluded_namespaces: Collection[str] = (),
        has_policies: Callable[[str], bool] | None = None,
    ) -> TopBundlesLoadData:
        """Build the report with :func:`top_k_bundles` (same arguments)."""
        return cls(
            top_k_bundles(bundle_stats, k, excluded_namespaces=excluded_namespaces, has_policies=has_policies)
        )

    def bundle_names(self) -> list[str]:
        return [entry.bundle_name for entry in self.top_bundles_load_data]

    def to_json(self) -> dict[str, Any]:
        return {"topBundlesLoadData": [entry.to_json() for entry in self.top_bundles_load_data]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> TopBundlesLoadData:
        obj = JsonObject(data, path)
        items = obj.raw("topBundlesLoadData")
        if items is None:
            return cls()
        if not isinstance(items, list):
            raise invalid(obj.field("topBundlesLoadData"), items, "expected a list")
        return cls(
            [
                BundleLoadData.from_json(item, f"{obj.field('topBundlesLoadData')}[{i}]")
                for i, item in enumerate(items)
            ]
        )
