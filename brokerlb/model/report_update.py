"""When a broker rewrites its load report: Pulsar's ``needBrokerDataUpdate``.

A broker samples its load every few seconds but writes the report only when it
matters. With ``last`` the data as last written and ``current`` the fresh data:

1. write if ``now - last_write > loadBalancerReportUpdateMaxIntervalMinutes`` (15 min);
2. else write if the largest of

   * ``100 * |last.maxResourceUsage - current.maxResourceUsage|``,
   * ``percent_change(last msgRateIn+Out, current msgRateIn+Out)``,
   * ``percent_change(last msgThroughputIn+Out, current msgThroughputIn+Out)``,
   * ``percent_change(last numBundles, current numBundles)``

   is ``> loadBalancerReportUpdateThresholdPercentage`` (10);
3. else write if forced.

``percent_change(old, new)`` is ``100 * |(old - new) / old|``, except that ``old == 0``
gives 0 when ``new == 0`` and ``+inf`` otherwise (so a first message always counts).

The same rule serves both load managers: for :class:`LocalBrokerData` the last write
time is ``current.last_update`` (Pulsar sets it only when writing) and the bundle count
is ``num_bundles``; for :class:`BrokerLoadData` it is ``last.reported_at`` and
``bundle_count`` (inferred: the newest ``BrokerLoadDataReporter`` was not read; the
reporter sets ``reportedAt`` when it publishes). Pass ``last_write_ms`` to override.

>>> percent_change(0, 0), percent_change(0, 5), percent_change(200, 150)
(0.0, inf, 25.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from brokerlb.model._validate import check_count, check_finite, invalid
from brokerlb.model.broker_data import LocalBrokerData
from brokerlb.model.extensible import BrokerLoadData

__all__ = [
    "ReportUpdateDecision",
    "need_broker_data_update",
    "percent_change",
    "DEFAULT_REPORT_UPDATE_MAX_INTERVAL_MINUTES",
    "DEFAULT_REPORT_UPDATE_THRESHOLD_PERCENTAGE",
]

#: ``loadBalancerReportUpdateMaxIntervalMinutes`` default.
DEFAULT_REPORT_UPDATE_MAX_INTERVAL_MINUTES = 15
#: ``loadBalancerReportUpdateThresholdPercentage`` default.
DEFAULT_REPORT_UPDATE_THRESHOLD_PERCENTAGE = 10

Reason = Literal["max-interval", "threshold", "forced", "unchanged"]


def percent_change(old: float, new: float) -> float:
    """Relative change in percent; ``old == 0`` -> 0 if ``new == 0`` else ``+inf``."""
    if old == 0:
        return 0.0 if new == 0 else math.inf
    return 100 * abs((old - new) / old)


@dataclass(frozen=True, slots=True)
class ReportUpdateDecision:
    """Whether to write, why, and the numbers behind it. Truthy when ``write``."""

    write: bool
    reason: Reason
    max_change: float
    since_last_write_ms: int

    def __bool__(self) -> bool:
        return self.write


def need_broker_data_update(
    last: LocalBrokerData | BrokerLoadData,
    current: LocalBrokerData | BrokerLoadData,
    now_ms: int,
    *,
    max_interval_minutes: float = DEFAULT_REPORT_UPDATE_MAX_INTERVAL_MINUTES,
    threshold_percentage: float = DEFAULT_REPORT_UPDATE_THRESHOLD_PERCENTAGE,
    force: bool = False,
    last_write_ms: int | None = None,
    include_memory_in_max: bool = False,
) -> ReportUpdateDecision:
    """Decide whether the broker writes ``current`` (rules in the module docstring).

    ``max_interval_minutes`` / ``threshold_percentage`` are
    ``loadBalancerReportUpdateMaxIntervalMinutes`` / ``loadBalancerReportUpdateThresholdPercentage``.
    ``include_memory_in_max`` selects the 2.x ``maxResourceUsage`` for :class:`LocalBrokerData`.
    The change is computed even when the interval alone decides, so it can be logged.
    """
    if type(last) is not type(current) or not isinstance(current, LocalBrokerData | BrokerLoadData):
        raise invalid(
            "current",
            type(current).__name__,
            "last and current must both be LocalBrokerData or BrokerLoadData",
        )
    now_ms = check_count(now_ms, "now_ms")
    interval_ms = check_finite(max_interval_minutes, "loadBalancerReportUpdateMaxIntervalMinutes") * 60_000
    threshold = check_finite(threshold_percentage, "loadBalancerReportUpdateThresholdPercentage")
    if last_write_ms is None:
        last_write_ms = current.last_update if isinstance(current, LocalBrokerData) else last.reported_at  # type: ignore[union-attr]
    since = now_ms - check_count(last_write_ms, "last_write_ms")

    change = _max_change(last, current, include_memory_in_max)
    if since > interval_ms:
        return ReportUpdateDecision(True, "max-interval", change, since)
    if change > threshold:
        return ReportUpdateDecision(True, "threshold", change, since)
    if force:
        return ReportUpdateDecision(True, "forced", change, since)
    return ReportUpdateDecision(False, "unchanged", change, since)


def _max_change(
    last: LocalBrokerData | BrokerLoadData, current: LocalBrokerData | BrokerLoadData, include_memory: bool
) -> float:
    if isinstance(last, LocalBrokerData) and isinstance(current, LocalBrokerData):
        usage_change = 100.0 * abs(
            last.max_resource_usage(include_memory=include_memory)
            - current.max_resource_usage(include_memory=include_memory)
        )
        bundles = percent_change(last.num_bundles, current.num_bundles)
    else:
        assert isinstance(last, BrokerLoadData) and isinstance(current, BrokerLoadData)
        usage_change = 100.0 * abs(last.max_resource_usage - current.max_resource_usage)
        bundles = percent_change(last.bundle_count, current.bundle_count)
    return max(
        usage_change,
        percent_change(last.total_msg_rate(), current.total_msg_rate()),
        percent_change(last.total_msg_throughput(), current.total_msg_throughput()),
        bundles,
    )
