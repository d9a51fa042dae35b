"""Time-averaged traffic: Pulsar's ``TimeAverageMessageData`` and ``TimeAverageBrokerData``.

:class:`TimeAverageMessageData` keeps a capped running average of a bundle's
four traffic values. On every sample::

    num_samples = min(num_samples + 1, max_samples)
    avg = ((num_samples - 1) * avg + sample) / num_samples      # for each value

so the first sample replaces whatever the window started with (e.g. the 50 msg/s
default), the first ``max_samples`` samples give the plain mean, and afterwards
it is an exponential moving average with weight ``1 / max_samples``.

>>> w = TimeAverageMessageData(max_samples=2, msg_rate_in=50.0)
>>> for rate in (10.0, 20.0, 40.0):
...     w.update_values(0.0, 0.0, rate, 0.0)
...     print(w.num_samples, w.msg_rate_in)
1 10.0
2 15.0
2 27.5

:class:`TimeAverageBrokerData` sums the short- and long-term windows of every bundle a
broker owns (the leader's per-broker aggregate).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brokerlb.model._validate import JsonObject, check_count, check_non_negative, invalid
from brokerlb.model.bundle_stats import MSG_RATE_RESOLUTION, THROUGHPUT_RESOLUTION, NamespaceBundleStats

if TYPE_CHECKING:
    from brokerlb.model.bundle_data import BundleData

__all__ = ["TimeAverageMessageData", "TimeAverageBrokerData", "java_long_cast"]

_VALUE_FIELDS = (
    ("msg_throughput_in", "msgThroughputIn"),
    ("msg_throughput_out", "msgThroughputOut"),
    ("msg_rate_in", "msgRateIn"),
    ("msg_rate_out", "msgRateOut"),
)


def java_long_cast(value: float) -> int:
    """Java's ``(long) value`` for a finite double: truncation toward zero."""
    return math.trunc(value)


@dataclass(slots=True)
class TimeAverageMessageData:
    """A capped running average of throughput in/out (bytes/s) and message rate in/out (msg/s).

    JSON: ``{"maxSamples", "numSamples", "msgThroughputIn", "msgThroughputOut", "msgRateIn",
    "msgRateOut"}``.

    Validation: ``max_samples >= 1`` (Pulsar would divide by zero and store NaN with 0),
    ``num_samples >= 0``, averages finite and ``>= 0``. Samples go through
    :class:`NamespaceBundleStats` validation, so a NaN can never enter an average.
    ``num_samples`` may exceed ``max_samples``, as Pulsar's data allows (its setter and its own
    tests build such windows): the window is then full, and the next sample caps the count at
    ``max_samples`` (``min(num_samples + 1, max_samples)``); a snapshot warns about it.
    """

    max_samples: int
    num_samples: int = 0
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0

    def __post_init__(self) -> None:
        self.max_samples = check_count(self.max_samples, "maxSamples")
        if self.max_samples < 1:
            raise invalid("maxSamples", self.max_samples, "must be at least 1")
        self.num_samples = check_count(self.num_samples, "numSamples")
        for attr, key in _VALUE_FIELDS:
            setattr(self, attr, check_non_negative(getattr(self, attr), key))

    @classmethod
    def with_defaults(cls, max_samples: int, default_stats: NamespaceBundleStats) -> TimeAverageMessageData:
        """Pulsar's ``TimeAverageMessageData(maxSamples, defaultStats)``: starts at the defaults,
        ``num_samples`` 0, so the first sample overwrites them."""
        return cls(
            max_samples=max_samples,
            msg_throughput_in=default_stats.msg_throughput_in,
            msg_throughput_out=default_stats.msg_throughput_out,
            msg_rate_in=default_stats.msg_rate_in,
            msg_rate_out=default_stats.msg_rate_out,
        )

    def update(self, sample: NamespaceBundleStats) -> None:
        """Fold one bundle sample into the average."""
        self._fold(
            sample.msg_throughput_in, sample.msg_throughput_out, sample.msg_rate_in, sample.msg_rate_out
        )

    def update_values(
        self, msg_throughput_in: float, msg_throughput_out: float, msg_rate_in: float, msg_rate_out: float
    ) -> None:
        """Fold one sample given as four numbers (validated: finite, ``>= 0``)."""
        self._fold(
            check_non_negative(msg_throughput_in, "msgThroughputIn"),
            check_non_negative(msg_throughput_out, "msgThroughputOut"),
            check_non_negative(msg_rate_in, "msgRateIn"),
            check_non_negative(msg_rate_out, "msgRateOut"),
        )

    def _fold(self, throughput_in: float, throughput_out: float, rate_in: float, rate_out: float) -> None:
        n = self.num_samples = min(self.num_samples + 1, self.max_samples)
        self.msg_throughput_in = ((n - 1) * self.msg_throughput_in + throughput_in) / n
        self.msg_throughput_out = ((n - 1) * self.msg_throughput_out + throughput_out) / n
        self.msg_rate_in = ((n - 1) * self.msg_rate_in + rate_in) / n
        self.msg_rate_out = ((n - 1) * self.msg_rate_out + rate_out) / n

    def total_msg_rate(self) -> float:
        return self.msg_rate_in + self.msg_rate_out

    def total_msg_throughput(self) -> float:
        return self.msg_throughput_in + self.msg_throughput_out

    def sort_key(self) -> tuple[int, int, int]:
        """Pulsar 4.x ``compareTo`` as a key (``CompareUtil.compareDoubleWithResolution``:
        ``(long)(v / resolution)``): throughput in, throughput out (1e5), total msg rate (100)."""
        return (
            java_long_cast(self.msg_throughput_in / THROUGHPUT_RESOLUTION),
            java_long_cast(self.msg_throughput_out / THROUGHPUT_RESOLUTION),
            java_long_cast(self.total_msg_rate() / MSG_RATE_RESOLUTION),
        )

    def compare_to(self, other: TimeAverageMessageData) -> int:
        a, b = self.sort_key(), other.sort_key()
        return (a > b) - (a < b)

    def copy(self) -> TimeAverageMessageData:
        """A plain copy (of a column view too), not validated again: these values were."""
        clone: TimeAverageMessageData = _new(TimeAverageMessageData)
        _set_max(clone, self.max_samples)
        _set_num(clone, self.num_samples)
        _set_tin(clone, self.msg_throughput_in)
        _set_tout(clone, self.msg_throughput_out)
        _set_rin(clone, self.msg_rate_in)
        _set_rout(clone, self.msg_rate_out)
        return clone

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"maxSamples": self.max_samples, "numSamples": self.num_samples}
        out.update({key: getattr(self, attr) for attr, key in _VALUE_FIELDS})
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> TimeAverageMessageData:
        obj = JsonObject(data, path)
        max_samples = obj.count("maxSamples")
        if max_samples < 1:
            raise invalid(obj.field("maxSamples"), obj.raw("maxSamples"), "must be at least 1")
        num_samples = obj.count("numSamples")
        values = {attr: obj.rate(key) for attr, key in _VALUE_FIELDS}
        return cls(max_samples=max_samples, num_samples=num_samples, **values)


_BROKER_FIELDS = (
    ("short_term_msg_throughput_in", "shortTermMsgThroughputIn"),
    ("short_term_msg_throughput_out", "shortTermMsgThroughputOut"),
    ("short_term_msg_rate_in", "shortTermMsgRateIn"),
    ("short_term_msg_rate_out", "shortTermMsgRateOut"),
    ("long_term_msg_throughput_in", "longTermMsgThroughputIn"),
    ("long_term_msg_throughput_out", "longTermMsgThroughputOut"),
    ("long_term_msg_rate_in", "longTermMsgRateIn"),
    ("long_term_msg_rate_out", "longTermMsgRateOut"),
)


_new = object.__new__
_set_max, _set_num, _set_tin, _set_tout, _set_rin, _set_rout = (
    getattr(TimeAverageMessageData, name).__set__
    for name in (
        "max_samples",
        "num_samples",
        "msg_throughput_in",
        "msg_throughput_out",
        "msg_rate_in",
        "msg_rate_out",
    )
)


@dataclass(slots=True)
class TimeAverageBrokerData:
    """Short- and long-term traffic of all of a broker's bundles, summed (8 values, all ``>= 0``)."""

    short_term_msg_throughput_in: float = 0.0
    short_term_msg_throughput_out: float = 0.0
    short_term_msg_rate_in: float = 0.0
    short_term_msg_rate_out: float = 0.0
    long_term_msg_throughput_in: float = 0.0
    long_term_msg_throughput_out: float = 0.0
    long_term_msg_rate_in: float = 0.0
    long_term_msg_rate_out: float = 0.0

    def __post_init__(self) -> None:
        for attr, key in _BROKER_FIELDS:
            setattr(self, attr, check_non_negative(getattr(self, attr), key))

    @classmethod
    def of(
        cls,
        bundles: Iterable[str],
        bundle_data: Mapping[str, BundleData],
        default_stats: NamespaceBundleStats,
    ) -> TimeAverageBrokerData:
        """Pulsar's ``TimeAverageBrokerData(bundles, data, defaultStats)``."""
        data = cls()
        data.reset(bundles, bundle_data, default_stats)
        return data

    def reset(
        self,
        bundles: Iterable[str],
        bundle_data: Mapping[str, BundleData],
        default_stats: NamespaceBundleStats,
    ) -> None:
        """Zero all eight sums, then add each bundle's short- and long-term window.

        A bundle missing from ``bundle_data`` counts as ``default_stats`` in **both** the
        short- and the long-term sums (Pulsar passes 50 msg/s and 50 000 B/s, in and out).
        ``bundles`` is the broker's bundle list (the leader passes the keys of its ``lastStats``).
        """
        sums = [0.0] * 8
        for bundle in bundles:
            data = bundle_data.get(bundle)
            if data is None:
                default = (
                    default_stats.msg_throughput_in,
                    default_stats.msg_throughput_out,
                    default_stats.msg_rate_in,
                    default_stats.msg_rate_out,
                )
                values = default + default
            else:
                short, long_ = data.short_term_data, data.long_term_data
                values = (
                    short.msg_throughput_in,
                    short.msg_throughput_out,
                    short.msg_rate_in,
                    short.msg_rate_out,
                    long_.msg_throughput_in,
                    long_.msg_throughput_out,
                    long_.msg_rate_in,
                    long_.msg_rate_out,
                )
            for i, value in enumerate(values):
                sums[i] += value
        for (attr, _), total in zip(_BROKER_FIELDS, sums, strict=True):
            setattr(self, attr, total)

    def to_json(self) -> dict[str, Any]:
        return {key: getattr(self, attr) for attr, key in _BROKER_FIELDS}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> TimeAverageBrokerData:
        obj = JsonObject(data, path)
        return cls(**{attr: obj.rate(key) for attr, key in _BROKER_FIELDS})
