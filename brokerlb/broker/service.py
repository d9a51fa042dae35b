"""``BrokerService``: one broker, its parts and its life cycle (no logic of its own lives here).

Built by the one wiring function, :func:`brokerlb.broker.wiring.build_broker` (``await
build_broker(conf)``): it opens the metadata store named by ``metadataStoreUrl``, binds the web port
(``webServicePort``; 0 = a free one -- the broker id is ``advertisedAddress:port``) and the binary
port, mirrors the broker registry, ownership and namespace bundles (watch-fed caches) and makes
every part; a :class:`BrokerService` is that record of parts, nothing is set on it afterwards.

Start order (:meth:`BrokerService.start`):

1. serve HTTP (lookup v2, admin v2, OpenAPI) and the binary protocol;
2. register ``/loadbalance/brokers/{brokerId}`` with the first load report, join the
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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brokerlb.backoff import Backoff
from brokerlb.broker.http.server import WebServers
from brokerlb.broker.observe.health import heartbeat_bundles
from brokerlb.broker.wiring import BrokerParts
from brokerlb.errors import BrokerLBError
from brokerlb.ring import NamespaceBundle

if TYPE_CHECKING:
    from brokerlb.broker.binary import BinaryServer

__all__ = ["BrokerService"]

logger = logging.getLogger(__name__)

#: back-off of the heartbeat namespaces' take when it failed at start (seconds)
HEARTBEAT_RETRY_FIRST_S = 0.2
HEARTBEAT_RETRY_MAX_S = 5.0

#: seconds each closing step after the graceful part may take (servers; the metadata store)
CLOSE_WAIT = 5.0


@dataclass(frozen=True, eq=False, repr=False)
class BrokerService(BrokerParts):
    """One broker process's service (see the module docstring for the life cycle)."""

    http: WebServers
    binary: BinaryServer | None

    # ------------------------------------------------------------------ start
    async def start(self) -> BrokerService:
        await self.http.start()
        if self.binary is not None:
            await self.binary.start()
        await self._join()
        self.life.started = True
        self.life.ready = True
        logger.info(
            "Broker %s started (web %s, cluster %s, store %s)",
            self.identity.broker_id,
            self.identity.web_service_url,
            self.identity.cluster,
            self.store.url,
        )
        return self

    async def _join(self) -> None:
        await self.operations.start()
        await self.registry.register(
            self.identity.broker_id,
            self.reporter.local_data.to_json(),
            wait_for_stale=self.store.session_timeout,
        )
        self.life.listeners.append(self.election.run_while_leader(self.leader_tasks.run, "leader tasks"))
        await self.election.start()
        await self._own_heartbeat_namespaces()
        self._spawn(self.reporter.run(), "load reporter")
        self._spawn(self.channel.run_monitor(), "ownership monitor")
        if self.data_path is not None:
            self._spawn(self.data_path.run(), "topic stats")
        if self.history is not None:
            self.life.listeners.append(self.election.run_while_leader(self.history.lead, "load history"))
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
        while bundles and not self.life.closing:
            await self.clock.sleep(backoff.next())
            bundles = [b for b in bundles if not self.life.closing and not await self._own_heartbeat(b)]

    def _spawn(self, coro: Any, name: str) -> None:
        task = asyncio.create_task(coro, name=f"{name} [{self.identity.broker_id}]")
        self.life.tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.life.tasks.discard(task)
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
        self.life.closing = True
        self.life.ready = False
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
                self.life.stop_step,
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
        self.life.stop_step = "leaving the leader election"
        await self.election.close()
        self.life.stop_step = "saying it is draining"
        with contextlib.suppress(BrokerLBError):  # Pulsar's disableBroker: no placement picks us now
            await self.reporter.publish_now()
        served = self.channel.served()
        self.life.stop_step = "looking for brokers to take its bundles"
        others = [b for b in self.registry.available_brokers() if b != self.identity.broker_id]
        if served and not others:
            # the last broker: nobody could take the bundles; the leader reassigns them when a
            # broker comes (their records name this session, which ends)
            logger.info(
                "Broker %s is the last one: its %d bundles go with its session", self.broker_id, len(served)
            )
            served = []
        self.life.stop_step = f"releasing {len(served)} bundles"
        results = await asyncio.gather(
            *(self.actions.unload(NamespaceBundle.parse(b), reason="broker stopping") for b in served),
            return_exceptions=True,
        )
        for bundle, result in zip(served, results, strict=True):
            if isinstance(result, BaseException):
                logger.warning("Unloading %s at shutdown failed: %s", bundle, result)
        self.life.stop_step = "closing the owner actions"
        await self.actions.close()
        self.life.stop_step = "waiting for the ownership records to settle"
        await self.channel.drain()
        await self._cancel_tasks()
        self.life.stop_step = "closing the registration"
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
        if not self.owns_store:
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
        self.life.closing = True
        self.life.ready = False
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
        for task in list(self.life.tasks):
            task.cancel()
        await asyncio.gather(*self.life.tasks, return_exceptions=True)

    async def _close_local(self) -> None:
        self.life.started = False
        if (
            self.data_path is not None
        ):  # after a graceful stop nothing is left; after a kill, clients reconnect
            await self.data_path.close_all()
        for remove in self.life.listeners:
            remove()
        self.life.listeners.clear()
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
