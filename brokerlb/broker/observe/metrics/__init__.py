"""A broker's Prometheus metrics (``/metrics``): load balancing, lookups, bundles, topics, balance.

:class:`~brokerlb.broker.observe.metrics.exporter.BrokerMetrics` builds every series at each scrape;
:mod:`~brokerlb.broker.observe.metrics.counters` counts decisions, placements and lookups.
"""

from brokerlb.broker.observe.metrics.counters import AssignmentMetrics, LoadBalancingCounters, LookupMetrics
from brokerlb.broker.observe.metrics.exporter import CONTENT_TYPE_LATEST, BrokerMetrics
from brokerlb.broker.observe.metrics.quantiles import QuantileWindow

__all__ = [
    "AssignmentMetrics",
    "BrokerMetrics",
    "CONTENT_TYPE_LATEST",
    "LoadBalancingCounters",
    "LookupMetrics",
    "QuantileWindow",
]
