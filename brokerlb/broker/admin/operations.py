"""What an operator reaches on a broker beyond lookups and bundles, wired from the broker's parts.

:class:`BrokerOperations` builds, starts and stops (one hook each in
:class:`~brokerlb.broker.service.BrokerService`):

* cluster metadata at start: the cluster's ClusterData and the tenants ``public`` and ``pulsar``
  where missing (:func:`~brokerlb.coordination.tenants.ensure_cluster_metadata`);
* tenants (:class:`~brokerlb.coordination.tenants.Tenants`), namespace policies and deletion
  (:class:`~brokerlb.broker.admin.namespace_admin.NamespaceAdmin`), topics
  (:class:`~brokerlb.broker.admin.topic_admin.TopicAdmin`);
* dynamic configuration (:class:`~brokerlb.broker.admin.dynamic_config.DynamicConfiguration`);
* what watches the leader -- the leader feed (:class:`~brokerlb.broker.leader.leader_feed.LeaderFeed`, the
  one adapter to the leader's announcements), metrics (:mod:`brokerlb.broker.observe.metrics`: load
  balancing, placements, lookups, bundles, topics, balance) and the balancer's status
  (:class:`~brokerlb.broker.leader.balancer_status.BalancerStatus`).

It is given the broker's parts it reads, by name (no service to reach through); each route
module gets only the part it uses (:mod:`brokerlb.broker.http.operations_routes`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from brokerlb.broker.admin.dynamic_config import DynamicConfiguration
from brokerlb.broker.admin.namespace_admin import NamespaceAdmin
from brokerlb.broker.admin.topic_admin import TopicAdmin
from brokerlb.broker.data.served_topics import ServedTopics
from brokerlb.broker.leader.balancer_status import BalancerStatus
from brokerlb.broker.leader.leader_feed import LeaderFeed
from brokerlb.broker.observe.dashboard import Dashboard
from brokerlb.broker.observe.metrics import (
    AssignmentMetrics,
    BrokerMetrics,
    LoadBalancingCounters,
    LookupMetrics,
)
from brokerlb.broker.ownership.ownership_channel import OwnershipChannel
from brokerlb.broker.ownership.ownership_log import OwnershipLog
from brokerlb.coordination.records import ClusterData
from brokerlb.coordination.tenants import Tenants, ensure_cluster_metadata
from brokerlb.coordination.topic_metadata import PersistentTopics
from brokerlb.loadbalance.balance_score import load_stats
from brokerlb.model import LocalBrokerData

if TYPE_CHECKING:
    from brokerlb.admin.client import AsyncAdminClient
    from brokerlb.broker.admin.partitioned_topics import PartitionedTopics
    from brokerlb.broker.data.data_path import DataPath
    from brokerlb.broker.data.topics import TopicRegistry
    from brokerlb.broker.identity import BrokerIdentity
    from brokerlb.broker.leader.leader import LeaderTasks
    from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
    from brokerlb.broker.ownership.lookup import LookupService
    from brokerlb.broker.report.reporter import LoadReporter
    from brokerlb.clock import Clock
    from brokerlb.config import ServiceConfig
    from brokerlb.coordination import (
        BrokerRegistry,
        BundleMetadata,
        LeaderElection,
        LeadershipChange,
        MetadataStore,
    )

__all__ = ["BrokerOperations"]

logger = logging.getLogger(__name__)


class BrokerOperations:
    """Operator-facing parts of one broker (module docstring)."""

    def __init__(
        self,
        *,
        identity: BrokerIdentity,
        conf: ServiceConfig,
        clock: Clock,
        store: MetadataStore,
        registry: BrokerRegistry,
        election: LeaderElection,
        bundles: NamespaceBundlesCache,
        channel: OwnershipChannel,
        metadata: BundleMetadata,
        lookup: LookupService,
        topics: TopicRegistry,
        data_path: DataPath | None,
        partitioned_topics: PartitionedTopics,
        admin: AsyncAdminClient,
        reporter: LoadReporter,
        leader_tasks: LeaderTasks,
        assignments: AssignmentMetrics,
    ) -> None:
        ident = identity
        self.cluster = ident.cluster
        self.broker_id = ident.broker_id
        self.store = store
        self.cluster_data = ClusterData(
            service_url=ident.web_service_url,
            service_url_tls=ident.web_service_url_tls,
            broker_service_url=ident.pulsar_service_url,
            broker_service_url_tls=ident.pulsar_service_url_tls,
        )

        def broker_urls() -> dict[str, str]:
            urls: dict[str, str] = {}
            for broker in registry.available_brokers():
                registered = registry.broker(broker)
                if registered is not None and registered.web_service_url:
                    urls[broker] = registered.web_service_url
            urls.setdefault(ident.broker_id, ident.web_service_url or "")
            return urls

        self.broker_urls = broker_urls
        self.tenants = Tenants(store)
        self.persistent = PersistentTopics(store)
        self.served = ServedTopics(topics, data_path, ident.broker_id)
        self.topics = TopicAdmin(
            broker_id=ident.broker_id,
            bundles=bundles,
            channel=channel,
            lookup=lookup,
            is_leader=lambda: election.is_leader,
            persistent=self.persistent,
            partitioned=partitioned_topics,
            served=self.served,
            brokers=broker_urls,
            admin=admin,
        )
        self.namespaces = NamespaceAdmin(
            conf=conf,
            cluster=ident.cluster,
            store=store,
            metadata=metadata,
            tenants=self.tenants,
            topics=self.topics,
            persistent=self.persistent,
            partitioned=partitioned_topics,
            self_url=lambda: ident.web_service_url or "",
            admin=admin,
        )
        self.dynamic = DynamicConfiguration(conf, store)

        def cluster_reports() -> dict[str, LocalBrokerData]:
            """Each active broker's report as the registry holds it (unreadable ones left out)."""
            reports = {b: registry.report(b) for b in registry.available_brokers()}
            return {b: r for b, r in reports.items() if r is not None}

        def cluster_loads() -> dict[str, float]:
            """Each active broker's reported max resource usage, in percent."""
            return {b: r.max_resource_usage() * 100.0 for b, r in cluster_reports().items()}

        self.cluster_reports = cluster_reports

        self.cluster_loads = cluster_loads
        self.lb_counters = LoadBalancingCounters()
        self.assignments = assignments
        self.lookups = LookupMetrics(clock.monotonic)
        self.metrics = BrokerMetrics(
            cluster=ident.cluster,
            broker_id=ident.broker_id,
            conf=conf,
            local_report=lambda: reporter.local_data,
            cluster_reports=cluster_reports,
            served=self.served,
            counters=self.lb_counters,
            assignments=self.assignments,
            lookups=self.lookups,
        )
        self._conf = conf
        self._clock = clock
        self._election = election
        self._owners = channel
        self._bundles = bundles
        self._reporter = reporter
        self._leader_tasks = leader_tasks
        self._registry = registry
        self._leading_since: int | None = None
        self.feed: LeaderFeed | None = None
        self.status: BalancerStatus | None = None
        self.dashboard: Dashboard | None = None
        self._removers: list[Callable[[], None]] = []

    async def start(self) -> None:
        written = await ensure_cluster_metadata(self.store, self.cluster, self.cluster_data)
        if written:
            logger.info("Broker %s wrote the cluster metadata %s", self.broker_id, ", ".join(written))
        await self.dynamic.start()
        clock, election = self._clock, self._election
        self.feed = LeaderFeed(self._leader_tasks, self.broker_id)
        self.feed.add_listener(lambda cycle: self.lb_counters.record(cycle, self._load_avg_std))
        self._reporter.add_write_listener(lambda report: self.metrics.report_written(report, clock.now_ms()))
        self._removers.append(election.add_listener(self._on_leadership))
        self.status = BalancerStatus(
            conf=self._conf,
            feed=self.feed,
            leader_id=lambda: election.leader.broker_id if election.leader is not None else None,
            leading_since_ms=lambda: self._leading_since,
            owners=self._owners,
            cluster_loads=self.cluster_loads,
            now_ms=clock.now_ms,
            grace_ends=self._grace_ends,
        )
        registry = self._registry
        log = OwnershipLog(
            self._owners, clock.now_ms, registered=lambda broker: broker in registry.available_brokers()
        )
        self._removers.append(log.close)
        self.dashboard = Dashboard(
            cluster=self.cluster,
            broker_id=self.broker_id,
            leader_id=lambda: election.leader.broker_id if election.leader is not None else None,
            status=self.status,
            feed=self.feed,
            log=log,
            reports=self.cluster_reports,
            bundles=self._bundles,
            owners=self._owners,
            now_ms=clock.now_ms,
            started=lambda: list(self._leader_tasks.actions.started),
        )

    def close(self) -> None:
        self.dynamic.close()
        for remove in self._removers:
            remove()
        self._removers.clear()

    def _grace_ends(self, broker: str) -> list[int]:
        """When the grace periods holding ``broker``'s bundles end (epoch ms): bundles the leader
        moved within ``loadBalancerSheddingGracePeriodMinutes``, the broker's own cool-down
        (TransferShedder), operators' actions the balancer holds back for."""
        report = self.cluster_reports().get(broker)
        if report is None:
            return []
        bundles = set(report.last_stats) | set(report.bundles)
        leader = self._leader_tasks.leader
        grace_ms = int(self._conf.duration_seconds("loadBalancerSheddingGracePeriodMinutes") * 1000)
        recently = leader.load_state.load_data.recently_unloaded_bundles
        ends = [at + grace_ms for bundle, at in recently.items() if bundle in bundles]
        if broker in leader.recently_unloaded_brokers:
            ends.append(leader.recently_unloaded_brokers[broker] + grace_ms)
        last = self.feed.last("shedding") if self.feed is not None else None
        held = last.stats.get("operatorActions") if last is not None else None
        if isinstance(held, dict):
            for bundle, action in held.items():
                until = action.get("untilMs") if isinstance(action, dict) else None
                if bundle in bundles and isinstance(until, int):
                    ends.append(until)
        return ends

    def _on_leadership(self, change: LeadershipChange) -> None:
        self._leading_since = self._clock.now_ms() if change.leading else None

    def _load_avg_std(self) -> tuple[float, float]:
        """The brokers' load average and spread as fractions (for strategies that report none)."""
        return load_stats([v / 100.0 for v in self.cluster_loads().values()])
