"""The leader's view of the cluster: Pulsar's ``BrokerData`` and ``LoadData``.

``LoadData`` is the snapshot every modular-load-manager strategy receives:
``broker_data`` (broker id -> :class:`BrokerData`), ``bundle_data`` (bundle name ->
:class:`BundleData` history) and ``recently_unloaded_bundles`` (bundle name ->
unload time in ms, for the shedding grace period).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from brokerlb.model.broker_data import LocalBrokerData
from brokerlb.model.bundle_data import BundleData
from brokerlb.model.bundle_stats import bundle_namespace
from brokerlb.model.time_average import TimeAverageBrokerData
from brokerlb.naming import is_system_service_namespace

__all__ = ["BrokerData", "LoadData"]


@dataclass(slots=True)
class BrokerData:
    """One broker as the leader keeps it.

    * ``local_data`` -- its latest :class:`LocalBrokerData` report;
    * ``time_average_data`` -- short/long-term sums over its bundles;
    * ``preallocated_bundle_data`` -- bundles assigned to it that it does not report yet
      (bundle name -> :class:`BundleData`), counted by placement so two assignments in a
      row do not both pick the same "empty" broker.
    """

    local_data: LocalBrokerData
    time_average_data: TimeAverageBrokerData = field(default_factory=TimeAverageBrokerData)
    preallocated_bundle_data: dict[str, BundleData] = field(default_factory=dict)


@dataclass(slots=True)
class LoadData:
    """The leader's load snapshot: brokers, bundle histories, recently unloaded bundles."""

    broker_data: dict[str, BrokerData] = field(default_factory=dict)
    bundle_data: dict[str, BundleData] = field(default_factory=dict)
    recently_unloaded_bundles: dict[str, int] = field(default_factory=dict)

    def bundle_data_for_load_shedding(self) -> dict[str, BundleData]:
        """``bundle_data`` without system-service namespaces (``pulsar/system``, heartbeat, SLA)."""
        return {
            bundle: data
            for bundle, data in self.bundle_data.items()
            if not is_system_service_namespace(bundle_namespace(bundle))
        }
