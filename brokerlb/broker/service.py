"""``BrokerService``: one broker, wired from its parts (no logic of its own lives here).

Start order (:meth:`BrokerService.start`):

1. open the metadata store named by ``metadataStoreUrl`` (``memory:`` or ``zk:...``);
2. bind the web port (``webServicePort``; 0 = a free one) -- the broker id is
   ``advertisedAddress:port``;
3. mirror the broker registry, ownership and namespace bundles (watch-fed caches);
4. serve HTTP (lookup v2, admin v2, OpenAPI);
5. register ``/loadbalance/brokers/{brokerId}`` with the first load report, join the
   leader election (leader work: :class:`~brokerlb.broker.leader.leader.LeaderTasks` via
   ``run_while_leader``), own the heartbeat namespaces, start the reporter.

Stop order (:meth:`BrokerService.stop`, graceful): stop taking bundles, leave the
election (the leader node is deleted, another broker takes over at once), say in the
registration that the broker is draining -- as Pulsar's ``disableBroker``, so the leader never
places a bundle (or hands a topic's state) to a broker that is stopping (a stopping Pulsar broker
was given new bundles and ran into its shutdown timeout) -- unload every bundle it serves (each
one transition of its record; the last broker of the cluster leaves them to its session's end:
nobody could take them, the leader reassigns them when a broker comes), deregister, stop HTTP,
close the store. The whole is bounded by ``brokerShutdownTimeoutMs`` (Pulsar's key and
default, 60 s) whatever the metadata store does: past it, the broker closes as after a crash
(one warning says which step was cut). :meth:`BrokerService.kill` is the crash variant for
tests: everything stops without touching the store, so the session expires and the leader
reassigns the bundles.

Session loss: the records name the session that holds them. A broker whose session is not known
alive serves nothing (its clients are closed); a new session serves nothing the old one held --
the leader reassigns those bundles (perhaps to it); leader work stops the moment the lease ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from brokerlb.admin.client import AsyncAdminClient
from brokerlb.backoff import Backoff
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
from brokerlb.broker.observe.health import heartbeat_bundles
from brokerlb.broker.observe.history_sink import attach_broker_history
from brokerlb.broker.observe.metrics.counters import AssignmentMetrics
from brokerlb.broker.ownership.bundle_story import BundleStories
from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
from brokerlb.broker.ownership.lookup import LookupService
from brokerlb.broker.ownership.owner_actions import OwnerActions, TopicsServing
from brokerlb.broker.ownership.ownership_channel import OwnershipChannel
from brokerlb.broker.ownership.ownership_history import attach_ownership_history
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
from brokerlb.errors import BrokerLBError, NamespaceNotFoundError
from brokerlb.loadbalance.leader import Leader
from brokerlb.model import LocalBrokerData
from brokerlb.naming import TopicName
from brokerlb.ownership.machine import OwnershipMachine
from brokerlb.ring import NamespaceBundle
from brokerlb.security.client_auth import broker_client_token

if TYPE_CHECKING:
    from brokerlb.broker.binary import BinaryServer
    from brokerlb.broker.data.data_path import DataPath
    from brokerlb.storage.managed_ledger import ManagedLedgerFactory

__all__ = ["BrokerService"]

logger = logging.getLogger(__name__)

#: back-off of the heartbeat namespaces' take when it failed at start (seconds)
HEARTBEAT_RETRY_FIRST_S = 0.2
HEARTBEAT_RETRY_MAX_S = 5.0

#: seconds each closing step after the graceful part may take (servers; the metadata store)
CLOSE_WAIT = 5.0


class BrokerService:
    """One broker process's service (see the module docstring for the life cycle)."""

    def __init__(
        self,
        conf: ServiceConfig,
        *,
        store: MetadataStore | None = None,
        clock: Clock = SYSTEM_CLOCK,
        host_usage: HostUsageSource | None = None,
        rng: random.Random | None = None,
        fast_lookup: bool = True,
    ) -> None:
        conf.check_complete()
        self.conf = conf
        self.clock = clock
        self._store = store
        self._host_usage = host_usage
        #: the leader's random source (tie-breaks, random strategies); seed it for reproducible runs
        self._rng = rng if rng is not None else random.Random()
        self._fast_lookup = fast_lookup
        self._tasks: set[asyncio.Task[Any]] = set()
        self._listeners: list[Callable[[], None]] = []
        self._closing = False
        #: what a stopping broker is doing (named when the shutdown bound cuts it)
        self._stop_step = ""
        self.binary: BinaryServer | None = None
        #: the storage tier's client (``brokerlbStorageUrl``), when the broker serves topics
        self.storage: ManagedLedgerFactory | None = None
        self.started = False
        #: Registered, elected (leader or follower) and serving.
        self.ready = False

    # ------------------------------------------------------------------ start
    async def start(self) -> BrokerService:
        conf = self.conf
        self.store = self._store or open_store(
            conf.metadataStoreUrl,
            session_timeout=conf.duration_seconds("metadataStoreSessionTimeoutMillis"),
            operation_timeout=conf.duration_seconds("metadataStoreOperationTimeoutSeconds"),
        )
        if self.store.session_state is SessionState.CLOSED:
            await self.store.start()
        web = WebServers.bind(conf)  # webServicePort, and webServicePortTls beside it when set
        binary_socks = None
        try:
            binary_socks = binary_wiring.bind_for(conf)  # brokerServicePort and brokerServicePortTls
            self.identity = BrokerIdentity.from_config(
                conf,
                web_port=web.port,
                web_tls_port=web.tls_port,
                broker_port=binary_socks.port if binary_socks is not None else None,
                broker_tls_port=binary_socks.tls_port if binary_socks is not None else None,
            )
            await self._wire()
            if self.storage is not None:
                await self.storage.start()
            self.http = web.serving(create_app(self, fast_lookup=self._fast_lookup))
            self.binary = self._binary_server(binary_socks) if binary_socks is not None else None
        except BaseException:
            web.close()
            if binary_socks is not None:
                binary_socks.close()
            raise
        await self.http.start()
        if self.binary is not None:
            await self.binary.start()
        await self._join()
        self.started = True
        self.ready = True
        logger.info(
            "Broker %s started (web %s, cluster %s, store %s)",
            self.identity.broker_id,
            self.identity.web_service_url,
            self.identity.cluster,
            self.store.url,
        )
        return self

    async def _wire(self) -> None:
        conf, store, ident = self.conf, self.store, self.identity
        self.metadata = BundleMetadata(store, default_num_bundles=conf.defaultNumberOfNamespaceBundles)
        self.bundles = NamespaceBundlesCache(store, self.metadata)
        self.registry = await BrokerRegistry(store).start()
        self.table = await OwnershipTable(store).start()
        self.channel = OwnershipChannel(
            ident.broker_id,
            OwnershipMachine.from_config(conf, me=ident.broker_id),
            table=self.table,
            store=store,
            registry=self.registry,
            clock=self.clock,
        )
        self.election = LeaderElection(
            store, LeaderBroker(ident.broker_id, ident.web_service_url or ""), clock=self.clock
        )
        self.cluster_policies = ClusterPolicies(store, ident.cluster)
        self.load_data_store = LoadDataStore(store)
        self.partitioned_topics = PartitionedTopics(store)
        self.topics = TopicRegistry(self._bundle_of, clock=self.clock)
        self.ownership_history = attach_ownership_history(
            conf,
            ident.broker_id,
            store=store,
            channel=self.channel,
            election=self.election,
        )
        self.leader_fence = LeaderFence(
            store,
            self.election,
            self.ownership_history.leader_action if self.ownership_history is not None else None,
        )
        serves_topics = conf.webSocketServiceEnabled or conf.brokerServicePort is not None
        self.data_path = self._data_path() if serves_topics else None
        self.admin = AsyncAdminClient(ident.web_service_url or "", token=broker_client_token(conf))
        if self._host_usage is None:
            self._host_usage = self._default_host_usage()
        self.reporter = LoadReporter(
            ident,
            conf,
            host_usage=self._host_usage,
            topics=self.topics,
            owned_bundles=self.channel.served,
            publish=self._publish_report,
            connected=lambda: store.connected,
            clock=self.clock,
            usage_from_traffic=isinstance(self._host_usage, TrafficHostUsage),
        )
        self.policies_cache = await ClusterPoliciesCache(store, ident.cluster).start()
        self.leader = Leader(ident.broker_id, conf, rng=self._rng)
        self.assignments = AssignmentMetrics(self.clock.monotonic)
        self.load_manager = LoadManager(
            self.leader,
            LeaderInputs(self.registry, self.bundles, self.policies_cache, owner_of=self._owner_of),
            bundles=self.bundles,
            load_data_store=self.load_data_store,
            clock=self.clock,
            metrics=self.assignments,
        )
        self.actions = OwnerActions(
            conf,
            channel=self.channel,
            metadata=self.metadata,
            bundles=self.bundles,
            topics=self.topics,
            registry=self.registry,
            serving=TopicsServing(self.topics, conf.namespaceBundleUnloadingTimeoutMs / 1000, self.data_path),
            place=self.load_manager.place,
            fence=self.leader_fence,
            report_changed=self.reporter.force_update,
            closing=lambda: self._closing,
        )
        self.lookup = LookupService(
            ident,
            bundles=self.bundles,
            channel=self.channel,
            registry=self.registry,
            election=self.election,
            fence=self.leader_fence,
            place=self.load_manager.place,
            max_concurrent=lambda: self.conf.maxConcurrentLookupRequest,
            can_own=lambda: not self._closing,
        )
        self.stories = BundleStories(
            self.channel,
            registry=self.registry,
            admin=self.admin,
            leader_records=lambda: self.leader_tasks.records,
        )
        self.namespaces = NamespaceService(
            ident,
            conf,
            metadata=self.metadata,
            bundles=self.bundles,
            channel=self.channel,
            lookup=self.lookup,
            actions=self.actions,
            registry=self.registry,
            election=self.election,
            placement=self.load_manager,
            topics=self.topics,
            load_data=self.load_data_store,
            admin=self.admin,
            leader_fence=self.leader_fence,
        )
        self.history = attach_broker_history(
            conf,
            ident.broker_id,
            clock=self.clock,
            registry=self.registry,
            bundles=self.bundles,
            metadata=self.metadata,
            served=ServedTopics(self.topics, self.data_path, ident.broker_id),
            topics=self.topics,
        )
        self.leader_tasks = LeaderTasks(
            self.load_manager,
            BrokerActions(
                conf,
                broker_id=ident.broker_id,
                clock=self.clock,
                channel=self.channel,
                actions=self.actions,
                admin=self.admin,
                registry=self.registry,
                load_data_store=self.load_data_store,
                merge_bundles=self.namespaces.merge_parts,
                fence=self.leader_fence,
            ),
            conf=conf,
            registry=self.registry,
            load_data_store=self.load_data_store,
            clock=self.clock,
            history=self.history,
        )
        self.operations = BrokerOperations(
            identity=ident,
            conf=conf,
            clock=self.clock,
            store=store,
            registry=self.registry,
            election=self.election,
            bundles=self.bundles,
            channel=self.channel,
            metadata=self.metadata,
            lookup=self.lookup,
            topics=self.topics,
            data_path=self.data_path,
            partitioned_topics=self.partitioned_topics,
            admin=self.admin,
            reporter=self.reporter,
            leader_tasks=self.leader_tasks,
            assignments=self.assignments,
        )
        await self.channel.start(self.election)
        self._listeners += [
            self.registry.add_listener(self._on_registry),
            self.store.add_session_listener(self._on_session),
        ]

    def _binary_server(self, sockets: binary_wiring.BinarySockets) -> BinaryServer:
        """The binary listener on ``sockets`` (bound only when the broker serves topics)."""
        assert self.data_path is not None
        return binary_wiring.binary_server(
            sockets,
            conf=self.conf,
            identity=self.identity,
            data_path=self.data_path,
            lookup=self.lookup,
            bundles=self.bundles,
            registry=self.registry,
            partitioned_topics=self.partitioned_topics,
            store=self.store,
            clock=self.clock,
        )

    def _data_path(self) -> DataPath:
        """The topics served here (binary protocol and WebSocket) on the storage tier named by
        ``brokerlbStorageUrl``; rates over ``statsUpdateFrequencyInSecs``."""
        from brokerlb.broker.data.data_path import DataPath, TopicPolicies
        from brokerlb.mledger import ManagedLedgerConfig
        from brokerlb.storage import open_storage
        from brokerlb.storage.managed_ledger import ManagedLedgerFactory

        conf = self.conf
        url = conf.brokerlbStorageUrl.strip()
        if url == "memory:":  # brokers of one process sharing a metadata store share its storage
            url = f"memory:{conf.metadataStoreUrl}"
        self.storage = ManagedLedgerFactory(
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
            clock=self.clock,
            owner=self.identity.broker_id,
            close_timeout=conf.namespaceBundleUnloadingTimeoutMs / 1000,
        )
        return DataPath(
            registry=self.topics,
            ownership=self.channel,
            bundle_of=self._bundle_of,
            ring_version=lambda: self.bundles.version,
            broker_urls=self._broker_urls,
            stats_window=self.conf.statsUpdateFrequencyInSecs,
            clock=self.clock,
            policies=TopicPolicies.from_config(self.conf),
            storage=self.storage,
        )

    def _broker_urls(self, broker_id: str) -> tuple[str | None, str | None]:
        """``(webServiceUrl, pulsarServiceUrl)`` of an active broker, from its registration."""
        registered = self.registry.broker(broker_id)
        if registered is None:
            return None, None
        return registered.web_service_url, registered.pulsar_service_url

    def _default_host_usage(self) -> HostUsageSource:
        conf = self.conf
        if conf.brokerlbHostUsage == "traffic":
            logger.info(
                "Broker %s reports host usage modelled from its traffic (brokerlbHostUsage=traffic)",
                self.identity.broker_id,
            )
            return TrafficHostUsage(
                lambda: self.reporter.local_data_totals(),
                cores=conf.brokerlbModelCores,
                msg_rate_per_core=conf.brokerlbModelMsgRatePerCore,
                nic_speed_gbps=conf.loadBalancerOverrideBrokerNicSpeedGbps,
            )
        from brokerlb.broker.report.host_usage import HostUsageCollector

        return HostUsageCollector(override_nic_speed_gbps=conf.loadBalancerOverrideBrokerNicSpeedGbps)

    async def _join(self) -> None:
        await self.operations.start()
        await self.registry.register(
            self.identity.broker_id,
            self.reporter.local_data.to_json(),
            wait_for_stale=self.store.session_timeout,
        )
        self._listeners.append(self.election.run_while_leader(self.leader_tasks.run, "leader tasks"))
        await self.election.start()
        await self._own_heartbeat_namespaces()
        self._spawn(self.reporter.run(), "load reporter")
        self._spawn(self.channel.run_monitor(), "ownership monitor")
        if self.data_path is not None:
            self._spawn(self.data_path.run(), "topic stats")
        if self.history is not None:
            self._listeners.append(self.election.run_while_leader(self.history.lead, "load history"))
            self._spawn(self.history.run(), "load history")

    async def _own_heartbeat_namespaces(self) -> None:
        """Own ``pulsar/{cluster}/{brokerId}`` and ``pulsar/{brokerId}`` (full bundles), as Pulsar does.

        A take that fails while the cluster's view settles (this broker's registration not yet seen
        by its own registry, a leader change, a slow store) is tried again in the background until
        it holds or the broker stops: a broker without its heartbeat bundles is unhealthy."""
        failed = [b for b in heartbeat_bundles(self.identity) if not await self._own_heartbeat(b)]
        if failed:
            self._spawn(self._retry_heartbeats(failed), "heartbeat namespaces")

    async def _own_heartbeat(self, bundle: str) -> bool:
        try:
            await self.lookup.resolve(NamespaceBundle.parse(bundle), authoritative=True)
        except BrokerLBError as exc:
            logger.warning("Could not own heartbeat bundle %s yet (trying again): %s", bundle, exc)
            return False
        return True

    async def _retry_heartbeats(self, bundles: list[str]) -> None:
        backoff = Backoff(HEARTBEAT_RETRY_FIRST_S, HEARTBEAT_RETRY_MAX_S)
        while bundles and not self._closing:
            await self.clock.sleep(backoff.next())
            bundles = [b for b in bundles if not self._closing and not await self._own_heartbeat(b)]

    # ------------------------------------------------------------------ callbacks
    def _owner_of(self, bundle: str) -> str | None:
        """Who owns ``bundle`` now, as this broker's ownership table has it (the leader's check)."""
        return self.channel.owner(bundle).broker

    def _bundle_of(self, topic: TopicName) -> str:
        bundles = self.bundles.cached(topic.namespace)
        if bundles is None:
            raise NamespaceNotFoundError(f"Namespace {topic.namespace} is not loaded on this broker")
        return str(bundles.find_bundle(topic))

    async def _publish_report(self, data: LocalBrokerData) -> None:
        if self.registry.is_registered:
            report = data.to_json()
            if self._closing:
                report[DRAINING_KEY] = True
            await self.registry.update(report)

    def _on_registry(self, event: RegistryEvent) -> None:
        if event.kind in (RegistryEventKind.REREGISTERED, RegistryEventKind.REGISTERED):
            self.reporter.force_update()
        elif event.kind is RegistryEventKind.REGISTRATION_LOST:
            logger.error(
                "Broker %s lost its registration to another session: %s",
                self.identity.broker_id,
                event.reason,
            )

    def _on_session(self, event: SessionEvent) -> None:
        if event.new_session and self.started:
            self.reporter.force_update()

    def _spawn(self, coro: Any, name: str) -> None:
        task = asyncio.create_task(coro, name=f"{name} [{self.identity.broker_id}]")
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("Task %s failed", task.get_name(), exc_info=task.exception())

    # ------------------------------------------------------------------ views
    @property
    def url(self) -> str:
        return self.identity.web_service_url or ""

    @property
    def broker_id(self) -> str:
        return self.identity.broker_id

    @property
    def is_leader(self) -> bool:
        return self.election.is_leader

    # ------------------------------------------------------------------ stop
    async def stop(self, timeout: float | None = None) -> bool:
        """Graceful shutdown (module docstring), bounded by ``timeout`` seconds (default:
        ``brokerShutdownTimeoutMs``, Pulsar's key and default, 60 s) whatever the metadata store
        does. Past the bound, what is left of leaving the cluster is abandoned (one warning names
        the step) and the broker closes as after a crash: its session ends its ownership and
        registration. Returns whether the graceful part finished."""
        if not self.started:
            return True
        self._closing = True
        self.ready = False
        started = self.clock.monotonic()
        if self.history is not None:  # its shutdown rule: nothing of the stop is load history
            self.history.stopping()
        bound = self.conf.brokerShutdownTimeoutMs / 1000 if timeout is None else max(0.0, timeout)
        released = 0
        try:
            async with asyncio.timeout(bound):
                released = await self._leave()
            graceful = True
        except TimeoutError:
            graceful = False
            logger.warning(
                "Broker %s: graceful shutdown did not finish within %.0f ms (brokerShutdownTimeoutMs; "
                "still %s); stopping without it",
                self.identity.broker_id,
                bound * 1000,
                self._stop_step,
            )
            self.election.abandon()
            await self._cancel_tasks()
            with contextlib.suppress(TimeoutError, BrokerLBError):
                async with asyncio.timeout(CLOSE_WAIT):
                    await self.channel.close()
        await self._close_bounded(graceful)
        logger.info(
            "Broker %s stopped in %.2f s (%d bundles released%s)",
            self.identity.broker_id,
            self.clock.monotonic() - started,
            released,
            "" if graceful else "; cut at brokerShutdownTimeoutMs",
        )
        return graceful

    async def _leave(self) -> int:
        """The graceful part of :meth:`stop`: leave the election, deregister, release the bundles
        (unless no other broker is registered to take them). Returns how many were released."""
        self._stop_step = "leaving the leader election"
        await self.election.close()
        self._stop_step = "saying it is draining"
        with contextlib.suppress(BrokerLBError):  # Pulsar's disableBroker: no placement picks us now
            await self._publish_report(self.reporter.local_data)
        served = self.channel.served()
        self._stop_step = "looking for brokers to take its bundles"
        others = [b for b in self.registry.available_brokers() if b != self.identity.broker_id]
        if served and not others:
            # the last broker: nobody could take the bundles; the leader reassigns them when a
            # broker comes (their records name this session, which ends)
            logger.info(
                "Broker %s is the last one: its %d bundles go with its session", self.broker_id, len(served)
            )
            served = []
        self._stop_step = f"releasing {len(served)} bundles"
        results = await asyncio.gather(
            *(self.actions.unload(NamespaceBundle.parse(b), reason="broker stopping") for b in served),
            return_exceptions=True,
        )
        for bundle, result in zip(served, results, strict=True):
            if isinstance(result, BaseException):
                logger.warning("Unloading %s at shutdown failed: %s", bundle, result)
        self._stop_step = "closing the owner actions"
        await self.actions.close()
        self._stop_step = "waiting for the ownership records to settle"
        await self.channel.drain()
        await self._cancel_tasks()
        self._stop_step = "closing the registration"
        with contextlib.suppress(BrokerLBError):
            await self.registry.close(unregister=True)
        return len(served)

    async def _close_bounded(self, graceful: bool) -> None:
        """Stop serving and close the store; each part bounded by :data:`CLOSE_WAIT` seconds (a
        store that does not answer is left behind: its session ends without it)."""
        try:
            async with asyncio.timeout(CLOSE_WAIT):
                await self._close_local()
        except TimeoutError:
            logger.warning(
                "Broker %s: closing its servers took over %.0f s; left behind", self.broker_id, CLOSE_WAIT
            )
        if self._store is not None:
            return
        try:
            async with asyncio.timeout(CLOSE_WAIT if graceful else 0.5):
                await self.store.close()
        except TimeoutError:
            logger.warning(
                "Broker %s: the metadata store did not close; its session ends without it", self.broker_id
            )

    async def kill(self) -> None:
        """Stop like a crashed process: nothing written; the session is abandoned."""
        if not self.started:
            return
        self._closing = True
        self.ready = False
        if self.history is not None:  # held-back records die with the process
            self.history.stopping()
        self.election.abandon()
        await self._cancel_tasks()
        await self.channel.close()
        if self.storage is not None:
            self.storage.abandon()  # like a crash: nothing more is written
        await self._close_local()
        crash = getattr(self.store, "crash", None)
        if crash is not None:
            crash()
        else:
            await self.store.close()

    async def _cancel_tasks(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _close_local(self) -> None:
        self.started = False
        if (
            self.data_path is not None
        ):  # after a graceful stop nothing is left; after a kill, clients reconnect
            await self.data_path.close_all()
        for remove in self._listeners:
            remove()
        self._listeners.clear()
        if self.binary is not None:
            await self.binary.stop()
        await self.http.stop()
        if self.data_path is not None:  # topics opened by clients that came during the stop
            await self.data_path.close_all()
        if self.storage is not None:  # no client is left to reach it
            await self.storage.close()
        self.operations.close()
        await self.admin.aclose()
        if self.leader_tasks.history is not None:
            self.leader_tasks.history.close()
        await self.channel.close()
        self.lookup.close()
        self.bundles.close()
        self.table.close()
        self.policies_cache.close()
        for _ in range(3):  # let the cancelled watch tasks finish
            await asyncio.sleep(0)

    async def __aenter__(self) -> BrokerService:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
