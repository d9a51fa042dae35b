"""A bundle's traffic history: Pulsar's ``BundleData`` (and the legacy ``ResourceQuota``).

The leader keeps one :class:`BundleData` per bundle (persisted at
``/loadbalance/bundle-data/{bundle}``): a short-term window of
:data:`NUM_SHORT_SAMPLES` samples, a long-term window of :data:`NUM_LONG_SAMPLES`,
and the latest topic count. JSON: ``{"shortTermData": {...}, "longTermData":
{...}, "topics": N}``.

Where an unseen bundle's history comes from (``getBundleDataOrDefault``):

1. ``/loadbalance/bundle-data/{bundle}`` if present (:meth:`BundleData.from_json`);
2. else a legacy ``/loadbalance/resource-quota/namespace/{bundle}``
   (:meth:`BundleData.from_resource_quota`: both windows set to the quota, with full
   ``numSamples`` -- "ample history");
3. else :meth:`BundleData.new_default` (50 msg/s, 50 000 B/s, ``numSamples`` 0, so the
   first real sample replaces the defaults).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from brokerlb.model._validate import JsonObject, check_count, check_non_negative
from brokerlb.model.bundle_stats import NamespaceBundleStats
from brokerlb.model.time_average import TimeAverageMessageData

__all__ = ["BundleData", "ResourceQuota", "NUM_SHORT_SAMPLES", "NUM_LONG_SAMPLES"]

#: Samples in the short-term window (``ModularLoadManagerImpl.NUM_SHORT_SAMPLES``).
NUM_SHORT_SAMPLES = 10
#: Samples in the long-term window (``ModularLoadManagerImpl.NUM_LONG_SAMPLES``).
NUM_LONG_SAMPLES = 1000


def _short_window() -> TimeAverageMessageData:
    return TimeAverageMessageData(NUM_SHORT_SAMPLES)


def _long_window() -> TimeAverageMessageData:
    return TimeAverageMessageData(NUM_LONG_SAMPLES)


@dataclass(slots=True)
class BundleData:
    """Short- and long-term averages of one bundle plus its latest topic count.

    ``BundleData()`` is Pulsar's ``BundleData(10, 1000)``: empty windows at zero.
    """

    short_term_data: TimeAverageMessageData = field(default_factory=_short_window)
    long_term_data: TimeAverageMessageData = field(default_factory=_long_window)
    topics: int = 0

    def __post_init__(self) -> None:
        self.topics = check_count(self.topics, "topics")

    @classmethod
    def with_defaults(
        cls, num_short_samples: int, num_long_samples: int, default_stats: NamespaceBundleStats
    ) -> BundleData:
        """Pulsar's ``BundleData(numShort, numLong, defaultStats)``: both windows start at the defaults."""
        return cls(
            TimeAverageMessageData.with_defaults(num_short_samples, default_stats),
            TimeAverageMessageData.with_defaults(num_long_samples, default_stats),
        )

    @classmethod
    def new_default(cls) -> BundleData:
        """Pulsar's ``newDefaultBundleData()``: 10/1000 windows at 50 msg/s and 50 000 B/s, no samples."""
        return cls(_DEFAULT_SHORT.copy(), _DEFAULT_LONG.copy())

    @classmethod
    def from_resource_quota(cls, quota: ResourceQuota) -> BundleData:
        """History from a legacy ``ResourceQuota``: both windows = the quota, ``numSamples`` full (10/1000)."""

        def window(max_samples: int) -> TimeAverageMessageData:
            return TimeAverageMessageData(
                max_samples=max_samples,
                num_samples=max_samples,
                msg_throughput_in=quota.bandwidth_in,
                msg_throughput_out=quota.bandwidth_out,
                msg_rate_in=quota.msg_rate_in,
                msg_rate_out=quota.msg_rate_out,
            )

        return cls(window(NUM_SHORT_SAMPLES), window(NUM_LONG_SAMPLES))

    def update(self, sample: NamespaceBundleStats) -> None:
        """Fold a sample into both windows; ``topics`` becomes the sample's topic count."""
        self.short_term_data.update(sample)
        self.long_term_data.update(sample)
        self.topics = sample.topics

    def copy(self) -> BundleData:
        return BundleData(self.short_term_data.copy(), self.long_term_data.copy(), self.topics)

    def to_json(self) -> dict[str, Any]:
        return {
            "shortTermData": self.short_term_data.to_json(),
            "longTermData": self.long_term_data.to_json(),
            "topics": self.topics,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> BundleData:
        """Read Pulsar's JSON. A missing window is an empty one (10 or 1000 samples)."""
        obj = JsonObject(data, path)
        short = obj.obj("shortTermData")
        long_ = obj.obj("longTermData")
        return cls(
            TimeAverageMessageData.from_json(short.data, short.path) if short else _short_window(),
            TimeAverageMessageData.from_json(long_.data, long_.path) if long_ else _long_window(),
            obj.count("topics"),
        )


_DEFAULT_SHORT = TimeAverageMessageData.with_defaults(NUM_SHORT_SAMPLES, NamespaceBundleStats.new_default())
_DEFAULT_LONG = TimeAverageMessageData.with_defaults(NUM_LONG_SAMPLES, NamespaceBundleStats.new_default())

_QUOTA_FIELDS = (
    ("msg_rate_in", "msgRateIn"),
    ("msg_rate_out", "msgRateOut"),
    ("bandwidth_in", "bandwidthIn"),
    ("bandwidth_out", "bandwidthOut"),
    ("memory", "memory"),
)


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    """Pulsar's legacy per-bundle ``ResourceQuota`` (Simple load manager era).

    JSON ``{"msgRateIn", "msgRateOut", "bandwidthIn", "bandwidthOut", "memory", "dynamic"}``;
    bandwidths in bytes/s, memory in MB. Values must be finite and ``>= 0``.
    """

    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    bandwidth_in: float = 0.0
    bandwidth_out: float = 0.0
    memory: float = 0.0
    dynamic: bool = True

    def __post_init__(self) -> None:
        for attr, key in _QUOTA_FIELDS:
            object.__setattr__(self, attr, check_non_negative(getattr(self, attr), key))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {key: getattr(self, attr) for attr, key in _QUOTA_FIELDS}
        out["dynamic"] = self.dynamic
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> ResourceQuota:
        obj = JsonObject(data, path)
        values: dict[str, Any] = {attr: obj.rate(key) for attr, key in _QUOTA_FIELDS}
        return cls(**values, dynamic=obj.flag("dynamic", True))
