"""The one wiring function of a broker: :func:`build_broker` makes every part, in start order, and hands
each the parts it uses, by name.

Nothing is set on a part after it is made and no part is bound late: a part that needs one made
after it is given a callable over the wiring's local name (the reporter's host usage modelled from
its own totals, the bundle stories' leader records), and the ownership channel is given its
executor when it starts. The result is a :class:`~brokerlb.broker.service.BrokerService` with every
part (a frozen record) and its sockets bound; :meth:`~brokerlb.broker.service.BrokerService.start`
serves and joins the cluster. What changes while a broker runs is :class:`BrokerLife`.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from brokerlb.admin.client import AsyncAdminClient
from brokerlb.broker.admin.namespace_service import NamespaceService
from brokerlb.broker.admin.operations import BrokerOperations
from brokerlb.broker.admin.partitioned_topics import PartitionedTopics
from brokerlb.broker.binary import wiring as binary_wiring
from brokerlb.broker.data.served_topics import ServedTopics
from brokerlb.broker.data.topics import TopicRegistry
from brokerlb.broker.http.app import create_app
from brokerlb.broker.http.server import WebServers
from brokerlb.broker.identity import BrokerIdentity
from brokerlb.broker.leader.leader import BrokerActions, LeaderTasks
from brokerlb.broker.leader.leader_fence import LeaderFence
from brokerlb.broker.leader.leader_inputs import LeaderInputs
from brokerlb.broker.leader.load_manager import LoadManager
from brokerlb.broker.leader.policies_cache import ClusterPoliciesCache
from brokerlb.broker.observe.history_sink import BrokerHistory, attach_broker_history
from brokerlb.broker.observe.metrics.counters import AssignmentMetrics
from brokerlb.broker.ownership.bundle_story import BundleStories
from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
from brokerlb.broker.ownership.lookup import LookupService
from brokerlb.broker.ownership.owner_actions import OwnerActions, TopicsServing
from brokerlb.broker.ownership.ownership_channel import OwnershipChannel
from brokerlb.broker.ownership.ownership_history import OwnershipHistory, attach_ownership_history
from brokerlb.broker.report.reporter import HostUsageSource, LoadReporter
from brokerlb.broker.report.traffic_usage import TrafficHostUsage
from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.config import ServiceConfig
from brokerlb.coordination import (
    DRAINING_KEY,
    BrokerRegistry,
    BundleMetadata,
    ClusterPolicies,
    LeaderBroker,
    LeaderElection,
    LoadDataStore,
    MetadataStore,
    RegistryEvent,
    RegistryEventKind,
    SessionEvent,
    SessionState,
    open_store,
)
from brokerlb.coordination.ownership_table import OwnershipTable
from brokerlb.errors import NamespaceNotFoundError
from brokerlb.loadbalance.leader import Leader
from brokerlb.model import LocalBrokerData
from brokerlb.naming import TopicName
from brokerlb.ownership.machine import OwnershipMachine
from brokerlb.security.client_auth import broker_client_token

if TYPE_CHECKING:
    from brokerlb.broker.data.data_path import DataPath
    from brokerlb.broker.service import BrokerService
    from brokerlb.storage.managed_ledger import ManagedLedgerFactory

__all__ = ["BrokerLife", "BrokerParts", "build_broker"]

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class BrokerLife:
    """What changes while a broker runs: its life-cycle flags, its background tasks and listeners."""

    #: the broker is stopping: it takes no bundle, its reports say it is draining
    closing: bool = False
    started: bool = False
    #: registered, elected (leader or follower) and serving
    ready: bool = False
    #: what a stopping broker is doing (named when the shutdown bound cuts it)
    stop_step: str = ""
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    #: removers of the listeners the broker added
    listeners: list[Callable[[], None]] = field(default_factory=list)


@dataclass(frozen=True, eq=False, repr=False)
class BrokerParts:
    """Every part of one broker, made once by :func:`build_broker` (the HTTP app reads them)."""

    conf: ServiceConfig
    clock: Clock
    store: MetadataStore
    #: the broker opened its store (and closes it); ``False``: the caller's
    owns_store: bool
    identity: BrokerIdentity
    life: BrokerLife
    metadata: BundleMetadata
    bundles: NamespaceBundlesCache
    registry: BrokerRegistry
    table: OwnershipTable
    channel: OwnershipChannel
    election: LeaderElection
    cluster_policies: ClusterPolicies
    load_data_store: LoadDataStore
    partitioned_topics: PartitionedTopics
    topics: TopicRegistry
    ownership_history: OwnershipHistory | None
    leader_fence: LeaderFence
    #: the storage tier's client (``brokerlbStorageUrl``), when the broker serves topics
    storage: ManagedLedgerFactory | None
    data_path: DataPath | None
    admin: AsyncAdminClient
    reporter: LoadReporter
    policies_cache: ClusterPoliciesCache
    #: the one leader (decides while this broker leads)
    leader: Leader
    assignments: AssignmentMetrics
    load_manager: LoadManager
    actions: OwnerActions
    lookup: LookupService
    stories: BundleStories
    namespaces: NamespaceService
    history: BrokerHistory | None
    leader_tasks: LeaderTasks
    operations: BrokerOperations

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identity.broker_id})"

    @property
    def started(self) -> bool:
        return self.life.started

    @property
    def ready(self) -> bool:
        return self.life.ready


async def build_broker(
    conf: ServiceConfig,
    *,
    store: MetadataStore | None = None,
    clock: Clock = SYSTEM_CLOCK,
    host_usage: HostUsageSource | None = None,
    rng: random.Random | None = None,
    fast_lookup: bool = True,
) -> BrokerService:
    """One broker, wired (module docstring): the metadata store opened (``metadataStoreUrl``, unless
    ``store`` is given), the web and binary ports bound (the broker id is ``advertisedAddress:port``),
    the caches mirroring the store, every part made. ``rng``: the leader's random source (tie-breaks,
    random strategies); seed it for reproducible runs. Serve with
    :meth:`~brokerlb.broker.service.BrokerService.start`."""
    from brokerlb.broker.service import BrokerService

    conf.check_complete()
    owns_store = store is None
    the_store = store or open_store(
        conf.metadataStoreUrl,
        session_timeout=conf.duration_seconds("metadataStoreSessionTimeoutMillis"),
        operation_timeout=conf.duration_seconds("metadataStoreOperationTimeoutSeconds"),
    )
    if the_store.session_state is SessionState.CLOSED:
        await the_store.start()
    web = WebServers.bind(conf)  # webServicePort, and webServicePortTls beside it when set
    binary_socks = None
    try:
        binary_socks = binary_wiring.bind_for(conf)  # brokerServicePort and brokerServicePortTls
        identity = BrokerIdentity.from_config(
            conf,
            web_port=web.port,
            web_tls_port=web.tls_port,
            broker_port=binary_socks.port if binary_socks is not None else None,
            broker_tls_port=binary_socks.tls_port if binary_socks is not None else None,
        )
        parts = await _parts(
            conf,
            the_store,
            identity,
            owns_store=owns_store,
            clock=clock,
            host_usage=host_usage,
            rng=rng if rng is not None else random.Random(),
        )
        if parts.storage is not None:
            await parts.storage.start()
        http = web.serving(create_app(parts, fast_lookup=fast_lookup))
        binary = None
        if binary_socks is not None:
            assert parts.data_path is not None
            binary = binary_wiring.binary_server(
                binary_socks,
                conf=conf,
                identity=identity,
                data_path=parts.data_path,
                lookup=parts.lookup,
                bundles=parts.bundles,
                registry=parts.registry,
                partitioned_topics=parts.partitioned_topics,
                store=the_store,
                clock=clock,
            )
    except BaseException:
        web.close()
        if binary_socks is not None:
            binary_socks.close()
        raise
    return BrokerService(**{f.name: getattr(parts, f.name) for f in fields(parts)}, http=http, binary=binary)


async def _parts(
    conf: ServiceConfig,
    store: MetadataStore,
    ident: BrokerIdentity,
    *,
    owns_store: bool,
    clock: Clock,
    host_usage: HostUsageSource | None,
    rng: random.Random,
) -> BrokerParts:
    life = BrokerLife()
    metadata = BundleMetadata(store, default_num_bundles=conf.defaultNumberOfNamespaceBundles)
    bundles = NamespaceBundlesCache(store, metadata)
    registry = await BrokerRegistry(store).start()
    table = await OwnershipTable(store).start()
    channel = OwnershipChannel(
        ident.broker_id,
        OwnershipMachine.from_config(conf, me=ident.broker_id),
        table=table,
        store=store,
        registry=registry,
        clock=clock,
    )
    election = LeaderElection(store, LeaderBroker(ident.broker_id, ident.web_service_url or ""), clock=clock)
    cluster_policies = ClusterPolicies(store, ident.cluster)
    load_data_store = LoadDataStore(store)
    partitioned_topics = PartitionedTopics(store)

    def bundle_of(topic: TopicName) -> str:
        cached = bundles.cached(topic.namespace)
        if cached is None:
            raise NamespaceNotFoundError(f"Namespace {topic.namespace} is not loaded on this broker")
        return str(cached.find_bundle(topic))

    topics = TopicRegistry(bundle_of, clock=clock)
    ownership_history = attach_ownership_history(
        conf, ident.broker_id, store=store, channel=channel, election=election
    )
    leader_fence = LeaderFence(
        store, election, ownership_history.leader_action if ownership_history is not None else None
    )
    serves_topics = conf.webSocketServiceEnabled or conf.brokerServicePort is not None
    storage: ManagedLedgerFactory | None = None
    data_path: DataPath | None = None
    if serves_topics:
        storage, data_path = _data_path(conf, ident, channel, topics, bundles, registry, bundle_of, clock)
    admin = AsyncAdminClient(ident.web_service_url or "", token=broker_client_token(conf))

    async def publish_report(data: LocalBrokerData) -> None:
        if registry.is_registered:
            report = data.to_json()
            if life.closing:
                report[DRAINING_KEY] = True
            await registry.update(report)

    usage = host_usage if host_usage is not None else _default_host_usage(conf, ident, lambda: reporter)
    reporter = LoadReporter(
        ident,
        conf,
        host_usage=usage,
        topics=topics,
        owned_bundles=channel.served,
        publish=publish_report,
        connected=lambda: store.connected,
        clock=clock,
        usage_from_traffic=isinstance(usage, TrafficHostUsage),
    )
    policies_cache = await ClusterPoliciesCache(store, ident.cluster).start()
    leader = Leader(ident.broker_id, conf, rng=rng)
    assignments = AssignmentMetrics(clock.monotonic)
    load_manager = LoadManager(
        leader,
        LeaderInputs(registry, bundles, policies_cache, owner_of=lambda bundle: channel.owner(bundle).broker),
        bundles=bundles,
        load_data_store=load_data_store,
        clock=clock,
        metrics=assignments,
    )
    actions = OwnerActions(
        conf,
        channel=channel,
        metadata=metadata,
        bundles=bundles,
        topics=topics,
        registry=registry,
        serving=TopicsServing(topics, conf.namespaceBundleUnloadingTimeoutMs / 1000, data_path),
        place=load_manager.place,
        fence=leader_fence,
        report_changed=reporter.force_update,
        closing=lambda: life.closing,
    )
    lookup = LookupService(
        ident,
        bundles=bundles,
        channel=channel,
        registry=registry,
        election=election,
        fence=leader_fence,
        place=load_manager.place,
        max_concurrent=lambda: conf.maxConcurrentLookupRequest,
        can_own=lambda: not life.closing,
    )
    stories = BundleStories(
        channel, registry=registry, admin=admin, leader_records=lambda: leader_tasks.records
    )
    namespaces = NamespaceService(
        ident,
        conf,
        metadata=metadata,
        bundles=bundles,
        channel=channel,
        lookup=lookup,
        actions=actions,
        registry=registry,
        election=election,
        placement=load_manager,
        topics=topics,
        load_data=load_data_store,
        admin=admin,
        leader_fence=leader_fence,
    )
    history = attach_broker_history(
        conf,
        ident.broker_id,
        clock=clock,
        registry=registry,
        bundles=bundles,
        metadata=metadata,
        served=ServedTopics(topics, data_path, ident.broker_id),
        topics=topics,
    )
    leader_tasks = LeaderTasks(
        load_manager,
        BrokerActions(
            conf,
            broker_id=ident.broker_id,
            clock=clock,
            channel=channel,
            actions=actions,
            admin=admin,
            registry=registry,
            load_data_store=load_data_store,
            merge_bundles=namespaces.merge_parts,
            fence=leader_fence,
        ),
        conf=conf,
        registry=registry,
        load_data_store=load_data_store,
        clock=clock,
        history=history,
    )
    operations = BrokerOperations(
        identity=ident,
        conf=conf,
        clock=clock,
        store=store,
        registry=registry,
        election=election,
        bundles=bundles,
        channel=channel,
        metadata=metadata,
        lookup=lookup,
        topics=topics,
        data_path=data_path,
        partitioned_topics=partitioned_topics,
        admin=admin,
        reporter=reporter,
        leader_tasks=leader_tasks,
        assignments=assignments,
    )
    await channel.start(election, actions)

    def on_registry(event: RegistryEvent) -> None:
        if event.kind in (RegistryEventKind.REREGISTERED, RegistryEventKind.REGISTERED):
            reporter.force_update()
        elif event.kind is RegistryEventKind.REGISTRATION_LOST:
            logger.error(
                "Broker %s lost its registration to another session: %s", ident.broker_id, event.reason
            )

    def on_session(event: SessionEvent) -> None:
        if event.new_session and life.started:
            reporter.force_update()

    life.listeners += [registry.add_listener(on_registry), store.add_session_listener(on_session)]
    return BrokerParts(
        conf=conf,
        clock=clock,
        store=store,
        owns_store=owns_store,
        identity=ident,
        life=life,
        metadata=metadata,
        bundles=bundles,
        registry=registry,
        table=table,
        channel=channel,
        election=election,
        cluster_policies=cluster_policies,
        load_data_store=load_data_store,
        partitioned_topics=partitioned_topics,
        topics=topics,
        ownership_history=ownership_history,
        leader_fence=leader_fence,
        storage=storage,
        data_path=data_path,
        admin=admin,
        reporter=reporter,
        policies_cache=policies_cache,
        leader=leader,
        assignments=assignments,
        load_manager=load_manager,
        actions=actions,
        lookup=lookup,
        stories=stories,
        namespaces=namespaces,
        history=history,
        leader_tasks=leader_tasks,
        operations=operations,
    )


def _data_path(
    conf: ServiceConfig,
    ident: BrokerIdentity,
    channel: OwnershipChannel,
    topics: TopicRegistry,
    bundles: NamespaceBundlesCache,
    registry: BrokerRegistry,
    bundle_of: Callable[[TopicName], str],
    clock: Clock,
) -> tuple[ManagedLedgerFactory, DataPath]:
    """The topics served here (binary protocol and WebSocket) on the storage tier named by
    ``brokerlbStorageUrl``; rates over ``statsUpdateFrequencyInSecs``."""
    from brokerlb.broker.data.data_path import DataPath, TopicPolicies
    from brokerlb.mledger import ManagedLedgerConfig
    from brokerlb.storage import open_storage
    from brokerlb.storage.managed_ledger import ManagedLedgerFactory

    url = conf.brokerlbStorageUrl.strip()
    if url == "memory:":  # brokers of one process sharing a metadata store share its storage
        url = f"memory:{conf.metadataStoreUrl}"
    storage = ManagedLedgerFactory(
        open_storage(url),
        ManagedLedgerConfig.from_config(conf),
        cache_bytes=conf.managedLedgerCacheSizeMB * 1024 * 1024,
        cache_watermark=conf.managedLedgerCacheEvictionWatermark,
        cursor_flush_seconds=min(
            conf.managedLedgerCursorPositionFlushSeconds,
            1 / conf.managedLedgerDefaultMarkDeleteRateLimit
            if conf.managedLedgerDefaultMarkDeleteRateLimit > 0
            else conf.managedLedgerCursorPositionFlushSeconds,
        ),
        clock=clock,
        owner=ident.broker_id,
        close_timeout=conf.namespaceBundleUnloadingTimeoutMs / 1000,
    )

    def broker_urls(broker_id: str) -> tuple[str | None, str | None]:
        """``(webServiceUrl, pulsarServiceUrl)`` of an active broker, from its registration."""
        registered = registry.broker(broker_id)
        if registered is None:
            return None, None
        return registered.web_service_url, registered.pulsar_service_url

    return storage, DataPath(
        registry=topics,
        ownership=channel,
        bundle_of=bundle_of,
        ring_version=lambda: bundles.version,
        broker_urls=broker_urls,
        stats_window=conf.statsUpdateFrequencyInSecs,
        clock=clock,
        policies=TopicPolicies.from_config(conf),
        storage=storage,
    )


def _default_host_usage(
    conf: ServiceConfig, ident: BrokerIdentity, reporter: Callable[[], LoadReporter]
) -> HostUsageSource:
    if conf.brokerlbHostUsage == "traffic":
        logger.info(
            "Broker %s reports host usage modelled from its traffic (brokerlbHostUsage=traffic)",
            ident.broker_id,
        )
        return TrafficHostUsage(
            lambda: reporter().local_data_totals(),
            cores=conf.brokerlbModelCores,
            msg_rate_per_core=conf.brokerlbModelMsgRatePerCore,
            nic_speed_gbps=conf.loadBalancerOverrideBrokerNicSpeedGbps,
        )
    from brokerlb.broker.report.host_usage import HostUsageCollector

    return HostUsageCollector(override_nic_speed_gbps=conf.loadBalancerOverrideBrokerNicSpeedGbps)
