"""Topic lookup: Pulsar's ``NamespaceService.findBrokerServiceUrl`` over the ownership table.

``lookup(topic, authoritative) -> LookupResult`` -- a domain answer that the HTTP shell renders as
LookupData (200) or a 307, and the binary shell as a LOOKUP Connect or Redirect
(:mod:`brokerlb.broker.http.lookup_routes`, :mod:`brokerlb.broker.binary.connection`):

1. the topic's bundle, from the namespace-bundles cache -- the ring is read once (404 for an
   unknown namespace);
2. the bundle's record, from this broker's ownership machine (a memory read; from the store when
   this broker cannot confirm its session now -- a process resumed from a freeze): Owned (or a
   split's source) → the owner (:class:`LookupResult` ``redirect=False``), from any broker; a move
   in flight (Assigning, Releasing) → wait until it settles (the in-flight timeout at most: Pulsar's
   ``deferGetOwner``); Deleted → the bundle was split or merged: the ring is read again and the
   lookup starts over;
3. no owner (Init, Free) → a broker is chosen and the assignment written (one compare-and-set,
   conditional on the namespace's bundles this lookup found the bundle in, and on the leader's
   epoch when the leader decided), then the lookup waits for the broker to take it:

   * heartbeat namespaces → the broker they name; SLA-monitor namespaces → the broker they name
     while it is registered (Pulsar's ``getHeartbeatOrSLAMonitorBrokerId``);
   * ``authoritative=true`` → this broker;
   * this broker leads, or no leader is known → the leader's placement
     (:meth:`~brokerlb.broker.leader.load_manager.LoadManager.place`); 503 when no broker fits;
   * otherwise → a redirect to the leader (``redirect=True``, ``authoritative=false``).

An owner that is not registered (its session ended and the leader has not reassigned the bundle
yet) is waited for too, as Pulsar does. Concurrent lookups of one bundle share one resolution; at
most ``maxConcurrentLookupRequest`` run at once, beyond that the answer is an immediate 503.

:meth:`LookupService.lookup_cached` is the allocation-free hot path for owned bundles (no await):
the HTTP shell tries it first. It answers only while this broker knows its session is alive.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from brokerlb.broker.identity import BrokerIdentity, lookup_data
from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
from brokerlb.broker.ownership.ownership_channel import OwnershipChannel
from brokerlb.broker.ownership.singleflight import SingleFlight
from brokerlb.coordination import BrokerRegistry, Guard, LeaderElection, RegisteredBroker
from brokerlb.errors import (
    NoBrokerAvailableError,
    NotFoundError,
    OperationTimeoutError,
    RecordConflictError,
    ServiceUnavailableError,
    StaleBundleError,
    TooManyRequestsError,
)
from brokerlb.loadbalance.placement.pipeline import named_broker
from brokerlb.naming import TopicName
from brokerlb.ownership import BundleState
from brokerlb.ownership.machine import Owner, owner_of
from brokerlb.ring import NamespaceBundle

if TYPE_CHECKING:
    from brokerlb.broker.leader.leader_fence import LeaderFence

__all__ = ["LookupResult", "LookupService", "Place"]

logger = logging.getLogger(__name__)

#: Seconds a lookup waits for this broker to re-confirm a lapsed leadership before answering 503.
LEADERSHIP_WAIT = 1.0

#: ``place(bundle) -> broker id``: the leader's placement of an unowned bundle;
#: :class:`NoBrokerAvailableError` when none fits.
Place = Callable[[NamespaceBundle], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class LookupResult:
    """Where a topic lives: ``broker`` owns its bundle (connect there), or -- ``redirect`` -- is the
    broker to ask (the leader), with Pulsar's ``authoritative`` flag."""

    broker: str
    redirect: bool = False
    authoritative: bool = False


class LookupService:
    """Answers topic lookups for one broker (module docstring)."""

    def __init__(
        self,
        identity: BrokerIdentity,
        *,
        bundles: NamespaceBundlesCache,
        channel: OwnershipChannel,
        registry: BrokerRegistry,
        election: LeaderElection,
        fence: LeaderFence,
        place: Place,
        max_concurrent: int | Callable[[], int] = 50_000,
        can_own: Callable[[], bool] = lambda: True,
    ) -> None:
        self.identity = identity
        self.bundles = bundles
        self.channel = channel
        self.registry = registry
        self.election = election
        #: the seam of the leader's writes (an assignment the leader decided is conditional on its epoch)
        self.fence = fence
        self._place = place
        self._max = max_concurrent if callable(max_concurrent) else (lambda: max_concurrent)
        self._can_own = can_own
        self._running = 0
        self._flights: SingleFlight[tuple[str, bool], LookupResult] = SingleFlight()
        #: broker -> (its registration, the LookupData bytes of its default listener)
        self._encoded: dict[str, tuple[RegisteredBroker, bytes]] = {}
        #: Counters by answer: ``broker`` (the owner), ``redirect``, ``failure``.
        self.stats = {"broker": 0, "redirect": 0, "failure": 0}

    def close(self) -> None:
        self._encoded.clear()

    # ------------------------------------------------------------------ the hot path
    def owner_cached(self, topic: TopicName) -> str | None:
        """The broker that owns the topic's bundle when it is Owned, from memory; else ``None`` (the
        full path decides). Only while this broker knows its session is alive. Not counted."""
        bundles = self.bundles.cached(topic.namespace)
        if bundles is None or not self.channel.store.session_known_alive():
            return None
        record = self.channel.record(str(bundles.find_bundle(topic)))
        if record is None or record.state is not BundleState.OWNED:
            return None
        return record.dst  # owner_of: an Owned record's owner is its dst

    def lookup_cached(self, topic: TopicName) -> bytes | None:
        """LookupData bytes when the topic's bundle is Owned and its owner registered, from memory;
        else ``None`` (the full path decides). Only while this broker knows its session is alive."""
        broker = self.owner_cached(topic)
        if broker is None:
            return None
        try:
            body = self.lookup_data(broker, None)
        except (NoBrokerAvailableError, NotFoundError):
            return None
        self.stats["broker"] += 1
        return body

    def pulsar_urls_cached(
        self, topic: TopicName, listener: str | None
    ) -> tuple[str | None, str | None] | None:
        """:meth:`pulsar_urls` of the owner when the topic's bundle is Owned, from memory (as
        :meth:`lookup_cached`); ``None`` when the full path decides (or the owner has no such URL)."""
        broker = self.owner_cached(topic)
        if broker is None:
            return None
        try:
            urls = self.pulsar_urls(broker, listener)
        except (NoBrokerAvailableError, NotFoundError):
            return None
        if not urls[0] and not urls[1]:
            return None
        self.stats["broker"] += 1
        return urls

    # ------------------------------------------------------------------ the full path
    async def lookup(self, topic: TopicName, *, authoritative: bool = False) -> LookupResult:
        """Resolve ``topic`` (module docstring)."""
        if self._running >= self._max():
            self.stats["failure"] += 1
            raise TooManyRequestsError("Failed due to too many pending lookup requests")
        self._running += 1
        try:
            result = await self._lookup(topic, authoritative)
        except Exception:
            self.stats["failure"] += 1
            raise
        finally:
            self._running -= 1
        self.stats["redirect" if result.redirect else "broker"] += 1
        return result

    async def bundle_of(self, topic: TopicName) -> NamespaceBundle:
        """The bundle the topic belongs to now (404 for an unknown namespace)."""
        return (await self.bundles.get(topic.namespace)).find_bundle(topic)

    async def _lookup(self, topic: TopicName, authoritative: bool) -> LookupResult:
        for attempt in range(3):
            try:
                return await self.resolve(await self.bundle_of(topic), authoritative=authoritative)
            except StaleBundleError:
                if attempt == 2:
                    raise
                await self.bundles.refresh(topic.namespace)
        raise AssertionError("unreachable")

    async def resolve(self, bundle: NamespaceBundle, *, authoritative: bool = False) -> LookupResult:
        """Owner or redirect for ``bundle``; concurrent calls for one bundle share the work."""
        return await self._flights.run(
            (str(bundle), authoritative), lambda: self._resolve(bundle, authoritative)
        )

    async def _resolve(self, bundle: NamespaceBundle, authoritative: bool) -> LookupResult:
        name = str(bundle)
        for _round in range(4):
            view = await self._view(name)
            if view.deleted:
                raise StaleBundleError(
                    f"Bundle {name} was split or merged meanwhile; look the topic up again"
                )
            if view.in_flight:
                view = await self.channel.settled(name)
                continue
            if view.broker is not None:
                if self.registry.broker(view.broker) is not None:
                    return LookupResult(view.broker)
                # its session ended: the leader reassigns the bundle (Pulsar defers the lookup too)
                await self.channel.changed(name, self.channel.machine.in_flight_timeout_ms / 1000)
                continue
            candidate = await self._candidate(bundle, authoritative)
            if isinstance(candidate, LookupResult):
                return candidate
            await self._assign(bundle, candidate)
        raise ServiceUnavailableError(f"Bundle {name} keeps changing hands; try again")

    async def _view(self, name: str) -> Owner:
        if self.channel.store.session_known_alive():
            return self.channel.owner(name)
        # a process that cannot confirm its session may hold a stale table: read the record itself
        stored = await self.channel.table.read(name)
        return owner_of(None if stored is None else stored.record)

    async def _candidate(self, bundle: NamespaceBundle, authoritative: bool) -> str | LookupResult:
        named = named_broker(str(bundle.namespace), self.registry.available_brokers())
        if named is not None:
            return named
        if authoritative:
            return self.identity.broker_id
        leader = self.election.leader
        if leader is not None and leader.broker_id == self.identity.broker_id and not self.election.is_leader:
            # we hold the leader node but not a valid lease: give the election a moment to re-confirm
            try:
                await self.election.wait_for_leadership(timeout=LEADERSHIP_WAIT)
            except OperationTimeoutError:
                raise NoBrokerAvailableError("This broker's leadership is in doubt; try again") from None
        if self.election.is_leader or leader is None:
            return await self._place(bundle)
        return LookupResult(leader.broker_id, redirect=True, authoritative=False)

    async def _assign(self, bundle: NamespaceBundle, broker: str) -> None:
        """Write Assigning(``broker``) -- conditional on the ring this lookup found the bundle in and,
        when this broker leads, on its epoch -- and wait until the broker has taken it."""
        if broker == self.identity.broker_id and not self._can_own():
            raise ServiceUnavailableError(f"Broker {broker} is shutting down; not taking {bundle}")
        if self.registry.broker(broker) is None:
            raise NoBrokerAvailableError(f"Broker {broker} is not active (no registration)")
        guards: list[Guard] = []
        ring = await self.bundles.ring_guard(bundle)
        if ring is not None:
            guards.append(ring)
        if self.election.is_leader:
            guards += self.fence.current()
        try:
            written = await self.channel.assign(
                str(bundle), broker, by=self.identity.broker_id, reason="lookup", guards=guards
            )
        except RecordConflictError:
            await self.channel.changed(str(bundle), 1.0)  # another lookup assigned it first
            return
        await self.channel.seen(str(bundle), written.version)
        await self.channel.settled(bundle)

    # ------------------------------------------------------------------ rendering inputs
    def lookup_data(self, broker: str, listener: str | None) -> bytes:
        """The broker's LookupData JSON bytes (of ``listener`` when given); the HTTP shell's body."""
        registered = self.registry.broker(broker)
        if registered is None:
            raise NoBrokerAvailableError(f"Broker {broker} is not active (no registration)")
        if listener is None:
            cached = self._encoded.get(broker)
            if cached is not None and cached[0] is registered:
                return cached[1]
            body = _encode(registered, None, broker)
            self._encoded[broker] = (registered, body)
            return body
        return _encode(registered, listener, broker)

    def pulsar_urls(self, broker: str, listener: str | None) -> tuple[str | None, str | None]:
        """``(pulsar://, pulsar+ssl://)`` of the broker (of ``listener`` when given); the binary shell's."""
        registered = self.registry.broker(broker)
        if registered is None:
            raise NoBrokerAvailableError(f"Broker {broker} is not active (no registration)")
        if listener is None:
            return registered.pulsar_service_url, registered.pulsar_service_url_tls
        urls = registered.advertised_listeners.get(listener)
        if urls is None:
            raise NotFoundError(f"The broker {broker} does not have the listener '{listener}'")
        return urls.broker_service_url, urls.broker_service_url_tls

    def web_url(self, broker: str) -> str:
        """The broker's web service URL (a redirect's base)."""
        registered = self.registry.broker(broker)
        url = None if registered is None else (registered.web_service_url or registered.web_service_url_tls)
        if not url:
            raise NoBrokerAvailableError(f"Broker {broker} is not active (no registration)")
        return url.rstrip("/")


def _encode(registered: RegisteredBroker, listener: str | None, broker: str) -> bytes:
    if listener is None:
        body = lookup_data(
            registered.pulsar_service_url,
            registered.pulsar_service_url_tls,
            registered.web_service_url,
            registered.web_service_url_tls,
        )
    else:
        urls = registered.advertised_listeners.get(listener)
        if urls is None:
            raise NotFoundError(f"The broker {broker} does not have the listener '{listener}'")
        body = lookup_data(
            urls.broker_service_url,
            urls.broker_service_url_tls,
            registered.web_service_url,
            registered.web_service_url_tls,
        )
    return json.dumps(body, separators=(",", ":")).encode()
