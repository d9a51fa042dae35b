"""Column names shared by the pipeline's tables (pure: importable without pyspark)."""

from __future__ import annotations

__all__ = ["BUNDLE_STATE_FIELDS", "BROKER_AVERAGE_FIELDS"]

#: Columns of a bundle's state (``BundleData``) in the load-data tables, in the model's order.
BUNDLE_STATE_FIELDS = (
    "shortTermMsgThroughputIn",
    "shortTermMsgThroughputOut",
    "shortTermMsgRateIn",
    "shortTermMsgRateOut",
    "shortTermSamples",
    "longTermMsgThroughputIn",
    "longTermMsgThroughputOut",
    "longTermMsgRateIn",
    "longTermMsgRateOut",
    "longTermSamples",
    "topics",
)
#: ``TimeAverageBrokerData`` JSON keys (Pulsar's names), in the model's order.
BROKER_AVERAGE_FIELDS = (
    "shortTermMsgThroughputIn",
    "shortTermMsgThroughputOut",
    "shortTermMsgRateIn",
    "shortTermMsgRateOut",
    "longTermMsgThroughputIn",
    "longTermMsgThroughputOut",
    "longTermMsgRateIn",
    "longTermMsgRateOut",
)
