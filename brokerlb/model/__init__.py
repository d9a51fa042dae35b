"""The load-data model: Pulsar's load reports and histories as validated Python objects.

Pure: no I/O, no clock reads (times are passed in), no asyncio. Every class reads and
writes Pulsar's JSON (camelCase names) with ``to_json()`` / ``from_json(dict)``.

Modular load manager (``ModularLoadManagerImpl``):

* :class:`ResourceUsage`, :class:`SystemResourceUsage` -- host resources (float32 percentages);
* :class:`NamespaceBundleStats` -- one bundle's traffic sample, with Pulsar's ordering;
* :class:`LocalBrokerData` -- a broker's load report (``/loadbalance/brokers/{id}``); its
  ``lastStats`` may be held as :class:`BundleStatsColumns` (arrays the leader's fold reads);
* :class:`TimeAverageMessageData`, :class:`BundleData` -- capped running averages per bundle;
* :class:`TimeAverageBrokerData`, :class:`BrokerData`, :class:`LoadData` -- the leader's snapshot;
* :func:`need_broker_data_update` -- when a broker rewrites its report.

Extensible load manager (PIP-192): :class:`BrokerLoadData`, :class:`TopBundlesLoadData`,
:func:`top_k_bundles`.

Bad values (NaN, infinities, negative rates, wrong types, broken JSON) raise
:class:`~brokerlb.errors.InvalidLoadDataError` naming the field and the value; nothing
half-built is returned, so no strategy ever sees them.
"""

from brokerlb.model.broker_data import LOAD_REPORT_TYPE, AdvertisedListener, LocalBrokerData
from brokerlb.model.bundle_data import NUM_LONG_SAMPLES, NUM_SHORT_SAMPLES, BundleData, ResourceQuota
from brokerlb.model.bundle_stats import (
    DEFAULT_MESSAGE_RATE,
    DEFAULT_MESSAGE_THROUGHPUT,
    NamespaceBundleStats,
    bundle_namespace,
    compare_with_thresholds,
)
from brokerlb.model.extensible import (
    DEFAULT_HISTORY_RESOURCE_PERCENTAGE,
    BrokerLoadData,
    BundleLoadData,
    TopBundlesLoadData,
    top_k_bundles,
)
from brokerlb.model.load_data import BrokerData, LoadData
from brokerlb.model.report_update import ReportUpdateDecision, need_broker_data_update, percent_change
from brokerlb.model.resources import ResourceUsage, ResourceWeights, SystemResourceUsage
from brokerlb.model.stats_columns import BundleStatsColumns
from brokerlb.model.time_average import TimeAverageBrokerData, TimeAverageMessageData

__all__ = [
    "BundleStatsColumns",
    "AdvertisedListener",
    "BrokerData",
    "BrokerLoadData",
    "BundleData",
    "BundleLoadData",
    "DEFAULT_HISTORY_RESOURCE_PERCENTAGE",
    "DEFAULT_MESSAGE_RATE",
    "DEFAULT_MESSAGE_THROUGHPUT",
    "LOAD_REPORT_TYPE",
    "LoadData",
    "LocalBrokerData",
    "NUM_LONG_SAMPLES",
    "NUM_SHORT_SAMPLES",
    "NamespaceBundleStats",
    "ReportUpdateDecision",
    "ResourceQuota",
    "ResourceUsage",
    "ResourceWeights",
    "SystemResourceUsage",
    "TimeAverageBrokerData",
    "TimeAverageMessageData",
    "TopBundlesLoadData",
    "bundle_namespace",
    "compare_with_thresholds",
    "need_broker_data_update",
    "percent_change",
    "top_k_bundles",
]
