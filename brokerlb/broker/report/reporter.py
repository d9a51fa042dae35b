"""The load reporter: a broker's ``LocalBrokerData``, refreshed often and written when it matters.

Pulsar's ``ModularLoadManagerImpl.writeBrokerDataOnZooKeeper``:

* every ``loadBalancerReportUpdateMinIntervalMillis`` (5 s) the broker refreshes its
  report: the latest host usage (sampled every
  ``loadBalancerHostUsageCheckIntervalMinutes``; at every refresh when it is modelled from the
  broker's traffic, ``brokerlbHostUsage=traffic``) and the per-bundle stats of its topics
  (:meth:`LocalBrokerData.update`: totals, gains, losses);
* it writes the report to its registration node ``/loadbalance/brokers/{brokerId}``
  only when :func:`~brokerlb.model.need_broker_data_update` says so (max interval
  ``loadBalancerReportUpdateMaxIntervalMinutes``, change over
  ``loadBalancerReportUpdateThresholdPercentage``) or when forced (a bundle was
  gained, lost or split: :meth:`LoadReporter.force_update`);
* only while the metadata session is connected; after a write ``lastUpdate = now``,
  the deltas are cleaned and the "last written" copy follows.

Deviation (option ``brokerlbReportOwnedIdleBundles``, default on): every bundle this
broker owns appears in ``lastStats`` and ``bundles``, idle or not. Pulsar lists only
bundles with loaded topics, so a leader elected later cannot see idle bundles and
places new ones on the broker that already holds most of them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol

from brokerlb import __version__
from brokerlb.broker.data.topics import TopicRegistry
from brokerlb.broker.identity import BrokerIdentity
from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.config import ServiceConfig
from brokerlb.errors import MetadataStoreError
from brokerlb.model import (
    AdvertisedListener,
    LocalBrokerData,
    NamespaceBundleStats,
    ReportUpdateDecision,
    SystemResourceUsage,
    need_broker_data_update,
)

__all__ = ["LoadReporter", "HostUsageSource", "initial_local_data"]

logger = logging.getLogger(__name__)

#: A forced write waits this long so that a burst of changes (many bundles taken at once) makes one.
FORCE_COALESCE_S = 0.02


class HostUsageSource(Protocol):
    def sample(self) -> SystemResourceUsage: ...


def initial_local_data(identity: BrokerIdentity, conf: ServiceConfig, start_ms: int) -> LocalBrokerData:
    """The report a broker registers with: its URLs, flags, version and start time."""
    return LocalBrokerData(
        web_service_url=identity.web_service_url,
        web_service_url_tls=identity.web_service_url_tls,
        pulsar_service_url=identity.pulsar_service_url,
        pulsar_service_url_tls=identity.pulsar_service_url_tls,
        persistent_topics_enabled=conf.enablePersistentTopics,
        non_persistent_topics_enabled=conf.enableNonPersistentTopics,
        broker_version_string=__version__,
        load_manager_class_name=conf.loadManagerClassName,
        advertised_listeners={
            name: AdvertisedListener(u.broker_service_url, u.broker_service_url_tls)
            for name, u in identity.advertised_listeners.items()
        },
        start_timestamp=start_ms,
        last_update=start_ms,
    )


class LoadReporter:
    """Keeps ``local_data`` fresh and publishes it by the report-update rule."""

    def __init__(
        self,
        identity: BrokerIdentity,
        conf: ServiceConfig,
        *,
        host_usage: HostUsageSource,
        topics: TopicRegistry,
        owned_bundles: Callable[[], Iterable[str]],
        publish: Callable[[LocalBrokerData], Awaitable[None]],
        connected: Callable[[], bool],
        clock: Clock = SYSTEM_CLOCK,
        usage_from_traffic: bool = False,
    ) -> None:
        self.conf = conf
        self._host_usage = host_usage
        #: host usage modelled from this report's own traffic: sampled at every refresh (it costs a
        #: sum), so the first report after start already shows the traffic flowing
        self._usage_from_traffic = usage_from_traffic
        self._topics = topics
        self._owned_bundles = owned_bundles
        self._publish = publish
        self._connected = connected
        self._clock = clock
        now = clock.now_ms()
        #: The report as refreshed now.
        self.local_data = initial_local_data(identity, conf, now)
        #: The report as last written.
        self.last_data = self.local_data.copy()
        self._usage = SystemResourceUsage()
        self._usage_at = -float("inf")
        self._force = False
        self._wake = asyncio.Event()
        self.writes = 0
        self._written: list[Callable[[LocalBrokerData], None]] = []

    def add_write_listener(self, listener: Callable[[LocalBrokerData], None]) -> None:
        """``listener(report)`` after each write of the report (metrics sample the extensible EMA there)."""
        self._written.append(listener)

    # ------------------------------------------------------------------ refresh and write
    def refresh(self) -> LocalBrokerData:
        """Take the latest host usage (at most every host-usage interval) and the bundle stats."""
        now = self._clock.monotonic()
        interval = self.conf.duration_seconds("loadBalancerHostUsageCheckIntervalMinutes")
        if self._usage_from_traffic or now - self._usage_at >= interval:
            self._usage = self._host_usage.sample()
            self._usage_at = now
        owned = list(self._owned_bundles()) if self.conf.brokerlbReportOwnedIdleBundles else []
        self.local_data.update(self._usage, self._topics.bundle_stats(owned))
        return self.local_data

    def local_data_totals(self) -> NamespaceBundleStats:
        """This broker's traffic now: the sum of its topics' stats (for modelled host usage)."""
        stats = self._topics.bundle_stats()
        return NamespaceBundleStats(
            msg_rate_in=sum(s.msg_rate_in for s in stats.values()),
            msg_throughput_in=sum(s.msg_throughput_in for s in stats.values()),
            msg_rate_out=sum(s.msg_rate_out for s in stats.values()),
            msg_throughput_out=sum(s.msg_throughput_out for s in stats.values()),
            topics=sum(s.topics for s in stats.values()),
        )

    def decide(self, force: bool = False) -> ReportUpdateDecision:
        return need_broker_data_update(
            self.last_data,
            self.local_data,
            self._clock.now_ms(),
            max_interval_minutes=self.conf.loadBalancerReportUpdateMaxIntervalMinutes,
            threshold_percentage=self.conf.loadBalancerReportUpdateThresholdPercentage,
            force=force,
        )

    async def publish_now(self) -> None:
        """Publish the report as it is, at once (a stopping broker's: its registration says draining)."""
        await self._publish(self.local_data)

    async def write_if_needed(self, force: bool = False) -> ReportUpdateDecision:
        """Refresh, then write if the rule (or ``force``) says so and the session is connected."""
        self.refresh()
        force = force or self._force
        decision = self.decide(force)
        if not decision.write or not self._connected():
            return decision
        self.local_data.last_update = self._clock.now_ms()
        await self._publish(self.local_data)
        self._force = False
        self.writes += 1
        for listener in list(self._written):
            try:
                listener(self.local_data)
            except Exception:
                logger.exception("Load report write listener failed")
        self.last_data.update_from(self.local_data)
        self.last_data.last_update = self.local_data.last_update
        self.local_data.clean_deltas()
        logger.debug("Wrote load report (%s, change %.1f%%)", decision.reason, decision.max_change)
        return decision

    def force_update(self) -> None:
        """Write at the next cycle, whatever changed (a bundle was gained, lost or split)."""
        self._force = True
        self._wake.set()

    # ------------------------------------------------------------------ loop
    async def run(self) -> None:
        """Report every ``loadBalancerReportUpdateMinIntervalMillis`` (woken early by :meth:`force_update`).

        Both waits -- the interval and the coalescing pause after a forced update -- are on the clock.
        """
        while True:
            try:
                await self.write_if_needed()
            except MetadataStoreError as exc:
                logger.warning("Could not write the load report: %s", exc)
            except Exception:
                logger.exception("Load report cycle failed")
            self._wake.clear()
            interval = self.conf.duration_seconds("loadBalancerReportUpdateMinIntervalMillis")
            try:
                await self._clock.wait_for(self._wake.wait(), interval)
                await self._clock.sleep(FORCE_COALESCE_S)  # a burst of ownership changes makes one write
            except TimeoutError:
                pass
