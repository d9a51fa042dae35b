"""Topic lookup: Pulsar's ``NamespaceService.findBrokerServiceUrl`` and HTTP lookup v2 answers.

``lookup(topic, authoritative)``:

1. the topic's bundle, from the namespace bundle cache (404 if the namespace does
   not exist);
2. the bundle has an owner (ownership cache: a memory read) → **200** with the
   owner's ``LookupData``, from any broker; an owner that is unloading the bundle
   (``disabled``) → **503** "is being unloaded" (clients retry);
3. no owner → a candidate broker:

   * heartbeat namespaces → the broker they name; SLA-monitor namespaces → the broker they
     name while it is active (Pulsar's ``getHeartbeatOrSLAMonitorBrokerId``,
     :func:`~brokerlb.loadbalance.placement.pipeline.named_broker`); a named broker with no
     registration cannot be redirected to: 503;
   * ``authoritative=true`` (the leader already decided) → this broker;
   * this broker is the leader, or no leader is known → placement (:data:`Place`: the
     leader's :meth:`~brokerlb.loadbalance.leader.Leader.place`); 503 when no broker fits;
   * otherwise → **307** to the leader with ``authoritative=false``;

4. candidate = this broker → take the bundle through this broker's ownership machine
   (:meth:`~brokerlb.broker.owner_actions.OwnerActions.acquire`: ``Assign``, then the ownership
   node) → **200** with our
   URLs (or with the winner's, if another broker took the bundle first); another
   candidate → **307** to it with ``authoritative=true``.

Concurrent lookups of one bundle share one resolution (separately for
authoritative and not, as in Pulsar), so a burst of lookups assigns a bundle once.
At most ``maxConcurrentLookupRequest`` lookups run at once; beyond that the answer
is an immediate 503. Before taking a bundle, its range is checked against the
store (a bundle cache behind a split must not make us own a dead range).

:meth:`LookupService.lookup_cached` is the allocation-free hot path for owned bundles
(no await): the HTTP layer tries it first. Both answer from the ownership cache only while this
broker knows its metadata session is alive
(:meth:`~brokerlb.coordination.MetadataStore.session_known_alive`): a process that resumes after
a freeze past its session reads the owner from the store instead (503 until that succeeds).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import quote

from brokerlb.broker.bundles_cache import NamespaceBundlesCache
from brokerlb.broker.identity import BrokerIdentity, lookup_data
from brokerlb.broker.singleflight import SingleFlight
from brokerlb.coordination import (
    AcquireResult,
    BrokerRegistry,
    LeaderElection,
    NamespaceEphemeralData,
    OwnerInfo,
    OwnershipCache,
    OwnershipManager,
)
from brokerlb.errors import (
    BrokerLBError,
    BundleUnloadingError,
    NoBrokerAvailableError,
    NotFoundError,
    OperationTimeoutError,
    OwnershipLostError,
    ServiceUnavailableError,
    StaleBundleError,
    TooManyRequestsError,
)
from brokerlb.loadbalance.placement.pipeline import named_broker
from brokerlb.naming import TopicName
from brokerlb.ring import NamespaceBundle

__all__ = ["Acquire", "LookupAnswer", "LookupService", "Place", "Resolution"]

logger = logging.getLogger(__name__)

#: Seconds a lookup waits for this broker to re-confirm a lapsed leadership before answering 503.
LEADERSHIP_WAIT = 1.0


#: ``place(bundle) -> broker id``: the leader's placement of an unowned bundle;
#: :class:`NoBrokerAvailableError` when none fits.
Place = Callable[[NamespaceBundle], Awaitable[str]]
#: ``acquire(bundle) -> AcquireResult``: take the bundle here (through this broker's ownership
#: machine); the answer names the owner -- this broker, or the one that won the race.
Acquire = Callable[[NamespaceBundle], Awaitable[AcquireResult]]


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where a bundle lives: an owner's data, or a broker to redirect to."""

    owner: NamespaceEphemeralData | None = None
    redirect_url: str | None = None
    authoritative: bool = False


@dataclass(frozen=True, slots=True)
class LookupAnswer:
    """An HTTP answer: 200 with ``body`` (LookupData JSON) or 307 to ``location``."""

    status: int
    body: bytes = b""
    location: str | None = None


class LookupService:
    """Answers topic lookups for one broker."""

    def __init__(
        self,
        identity: BrokerIdentity,
        *,
        bundles: NamespaceBundlesCache,
        owners: OwnershipCache,
        ownership: OwnershipManager,
        registry: BrokerRegistry,
        election: LeaderElection,
        place: Place,
        max_concurrent: int | Callable[[], int] = 50_000,
        acquire: Acquire,
        can_own: Callable[[], bool] = lambda: True,
    ) -> None:
        self.identity = identity
        self.bundles = bundles
        self.owners = owners
        self.ownership = ownership
        self.registry = registry
        self.election = election
        self._place = place
        self._max = max_concurrent if callable(max_concurrent) else (lambda: max_concurrent)
        self._acquire = acquire
        self._can_own = can_own
        self._running = 0
        self._flights: SingleFlight[tuple[str, bool], Resolution] = SingleFlight()
        #: bundle -> LookupData bytes of its enabled owner, kept by the ownership cache's listener
        self._answers: dict[NamespaceBundle, bytes] = {}
        for name, info in owners.owners().items():
            self._on_owner(name, info)
        self._remove_listener = owners.add_listener(self._on_owner)
        #: Counters by answer: ``broker`` (200), ``redirect`` (307), ``failure``.
        self.stats = {"broker": 0, "redirect": 0, "failure": 0}

    def close(self) -> None:
        self._remove_listener()
        self._answers.clear()

    def _on_owner(self, name: str, info: OwnerInfo | None) -> None:
        try:
            bundle = NamespaceBundle.parse(name)
        except BrokerLBError:
            return
        if info is None or info.data.disabled:
            self._answers.pop(bundle, None)
        else:
            self._answers[bundle] = _encode(info.data, None)

    # ------------------------------------------------------------------ the hot path
    def lookup_cached(self, topic: TopicName) -> bytes | None:
        """LookupData bytes when the topic's bundle has an enabled owner in memory, else ``None``.

        Only while this broker knows its metadata session is alive: a process frozen past its
        session (a GC pause, SIGSTOP) wakes up with a cache that may still name it as the owner of
        bundles others took meanwhile; it must not answer from it before it has heard the store.
        """
        bundles = self.bundles.cached(topic.namespace)
        if bundles is None or not self.ownership.session_confirmed():
            return None
        answer = self._answers.get(bundles.find_bundle(topic))
        if answer is not None:
            self.stats["broker"] += 1
        return answer

    # ------------------------------------------------------------------ the full path
    async def lookup(
        self, topic: TopicName, *, authoritative: bool = False, listener: str | None = None
    ) -> LookupAnswer:
        """Resolve ``topic`` (rules in the module docstring)."""
        if self._running >= self._max():
            self.stats["failure"] += 1
            raise TooManyRequestsError("Failed due to too many pending lookup requests")
        self._running += 1
        try:
            answer = await self._lookup(topic, authoritative, listener)
        except Exception:
            self.stats["failure"] += 1
            raise
        finally:
            self._running -= 1
        self.stats["broker" if answer.status == 200 else "redirect"] += 1
        return answer

    async def bundle_of(self, topic: TopicName) -> NamespaceBundle:
        """The bundle the topic belongs to now (404 for an unknown namespace)."""
        return (await self.bundles.get(topic.namespace)).find_bundle(topic)

    async def _lookup(self, topic: TopicName, authoritative: bool, listener: str | None) -> LookupAnswer:
        for attempt in range(3):
            try:
                resolution = await self.resolve(await self.bundle_of(topic), authoritative=authoritative)
                break
            except StaleBundleError:
                if attempt == 2:
                    raise
        if resolution.owner is not None:
            return LookupAnswer(200, _encode(resolution.owner, listener))
        location = (
            f"{resolution.redirect_url}/lookup/v2/topic/{topic.lookup_name}"
            f"?authoritative={'true' if resolution.authoritative else 'false'}"
        )
        if listener:
            location += f"&listenerName={quote(listener, safe='')}"
        return LookupAnswer(307, location=location)

    async def resolve(self, bundle: NamespaceBundle, *, authoritative: bool = False) -> Resolution:
        """Owner or redirect for ``bundle``; concurrent calls for one bundle share the work."""
        return await self._flights.run(
            (str(bundle), authoritative), lambda: self._resolve(bundle, authoritative)
        )

    async def _resolve(self, bundle: NamespaceBundle, authoritative: bool) -> Resolution:
        info = await self.owners.lookup_owner(bundle)
        if info is not None and not self.ownership.session_confirmed():
            # the cache may be stale (a resumed process): ask the store, which fails (retriable)
            # until the session is settled one way or the other
            info = await self.owners.read_owner(bundle)
        if (
            info is not None
            and authoritative
            and (info.disabled or info.broker_id != self.identity.broker_id)
        ):
            # sent here to take the bundle (a transfer's destination, a leader's decision): the
            # previous owner may have released it a notification ago
            info = await self.owners.read_owner(bundle)
        if info is not None:
            if info.data.disabled:
                raise BundleUnloadingError(f"Namespace bundle {bundle} is being unloaded")
            return Resolution(owner=info.data)
        candidate, auth_redirect = await self._candidate(bundle, authoritative)
        if isinstance(candidate, Resolution):
            return candidate
        if candidate != self.identity.broker_id:
            return Resolution(redirect_url=self._web_url(candidate), authoritative=auth_redirect)
        if bundle not in await self.bundles.current(bundle.namespace):
            raise StaleBundleError(f"Bundle {bundle} was split or merged meanwhile; look the topic up again")
        return Resolution(owner=await self._own(bundle))

    async def _candidate(self, bundle: NamespaceBundle, authoritative: bool) -> tuple[str | Resolution, bool]:
        named = named_broker(str(bundle.namespace), self.registry.available_brokers())
        if named is not None:
            return named, True
        if authoritative:
            return self.identity.broker_id, True
        leader = self.election.leader
        if leader is not None and leader.broker_id == self.identity.broker_id and not self.election.is_leader:
            # we hold the leader node but not a valid lease: give the election a moment to re-confirm
            try:
                await self.election.wait_for_leadership(timeout=LEADERSHIP_WAIT)
            except OperationTimeoutError:
                raise NoBrokerAvailableError("This broker's leadership is in doubt; try again") from None
        if self.election.is_leader or leader is None:
            return await self._place(bundle), True
        return Resolution(redirect_url=leader.service_url.rstrip("/"), authoritative=False), False

    async def _own(self, bundle: NamespaceBundle) -> NamespaceEphemeralData:
        if not self._can_own():
            raise ServiceUnavailableError(
                f"Broker {self.identity.broker_id} is shutting down; not taking {bundle}"
            )
        if not self.ownership.store.connected:
            raise OwnershipLostError(f"Cannot take {bundle}: the metadata session is not connected")
        return (await self._acquire(bundle)).owner

    def _web_url(self, broker_id: str) -> str:
        report = self.registry.broker_json(broker_id)
        url = report.get("webServiceUrl") if isinstance(report, dict) else None
        if not url:
            raise NoBrokerAvailableError(f"Broker {broker_id} is not active (no registration)")
        return str(url).rstrip("/")


def _encode(data: NamespaceEphemeralData, listener: str | None) -> bytes:
    if listener is None:
        body = lookup_data(data.native_url, data.native_url_tls, data.http_url, data.http_url_tls)
    else:
        urls = data.advertised_listeners.get(listener)
        if urls is None:
            raise NotFoundError(f"The broker {data.broker_id} does not have the listener '{listener}'")
        body = lookup_data(
            urls.broker_service_url, urls.broker_service_url_tls, data.http_url, data.http_url_tls
        )
    return json.dumps(body, separators=(",", ":")).encode()
