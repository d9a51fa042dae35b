"""The topics a broker serves over WebSocket, their sessions, and their stats in the load report.

:class:`DataPath` is the broker side of the data path (``webSocketServiceEnabled``):

* :meth:`DataPath.open` gives the :class:`ServedTopic` of a topic whose bundle this broker
  owns, creating it on first use and attaching it to the broker's
  :class:`~brokerlb.broker.topics.TopicRegistry` with a close and a fence callback; a
  topic of a bundle it does not own (or is giving up) is refused with
  :class:`~brokerlb.errors.BundleUnloadingError` -- the WebSocket shell closes the session
  with :meth:`DataPath.refusal`: the owner's URL when another broker owns the bundle (the
  client followed a stale lookup answer), else "look the topic up again";
* when the registry closes a bundle (unload, transfer, loss), every session of its topics
  is closed with the matching :class:`~brokerlb.messaging.CloseReason`; a transfer's
  reason names the new owner's URLs (PIP-307), taken from its registration;
* every ``STATS_PERIOD`` seconds it pushes each topic's sliding-window rates
  (``statsUpdateFrequencyInSecs`` long, :mod:`brokerlb.messaging.stats`) into the
  registry, so the reporter's ``NamespaceBundleStats`` and ``broker-stats/topics`` come
  from real traffic; a topic without sessions is forgotten once its window has emptied
  (Pulsar deletes inactive non-persistent topics the same way, later).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from brokerlb.broker.topics import CloseCause, TopicRegistry, TopicStats
from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.errors import BrokerLBError, BundleUnloadingError
from brokerlb.messaging import CloseReason, Topic
from brokerlb.naming import TopicName

__all__ = ["DataPath", "ServedTopic", "Session", "STATS_PERIOD"]

logger = logging.getLogger(__name__)

#: Seconds between two pushes of the topics' rates into the topic registry.
STATS_PERIOD = 1.0


class Session(Protocol):
    """A producer or consumer connection of a topic (the WebSocket shell's sessions)."""

    async def close(self, reason: CloseReason) -> None: ...


class Ownership(Protocol):
    def is_owned(self, bundle: Any) -> bool: ...


class ServedTopic:
    """A topic served here: the in-memory topic and its open sessions."""

    def __init__(self, topic: Topic, now: float) -> None:
        self.topic = topic
        self.sessions: set[Session] = set()
        self.closed = False
        #: Since when it has had no session (``None`` while it has some).
        self.idle_since: float | None = now

    @property
    def name(self) -> str:
        return str(self.topic.name)

    def fence(self) -> None:
        """PIP-307: keep the connections, ignore publishes until the close."""
        self.topic.fenced = True

    async def close(self, reason: CloseReason) -> None:
        self.closed = True
        self.topic.fenced = True
        sessions = list(self.sessions)
        self.sessions.clear()
        await asyncio.gather(*(s.close(reason) for s in sessions), return_exceptions=True)


class DataPath:
    """The broker's served topics (module docstring)."""

    def __init__(
        self,
        *,
        registry: TopicRegistry,
        ownership: Ownership,
        bundle_of: Callable[[TopicName], str],
        broker_urls: Callable[[str], tuple[str | None, str | None]],
        stats_window: int,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.registry = registry
        self.ownership = ownership
        self._bundle_of = bundle_of
        self._broker_urls = broker_urls
        self.stats_window = max(1, int(stats_window))
        self.clock = clock
        self.topics: dict[str, ServedTopic] = {}
        # message ids: a fresh "ledger" per topic incarnation, unique across brokers and restarts
        self._ledgers = itertools.count(clock.now_ms() * 1000)
        #: Closes by reason, for tests and operators: ``TopicUnloaded``, ``TopicTransferred``, ...
        self.closes: dict[str, int] = {}

    # ------------------------------------------------------------------ sessions
    def open(self, topic: TopicName) -> ServedTopic:
        """The served topic for a new session; :class:`BundleUnloadingError` unless we own its bundle.

        Synchronous on purpose: the ownership check and the registry attach happen with no
        await in between, so an unload that starts later always sees (and closes) the topic.
        """
        bundle = self._bundle_of(topic)
        if not self.ownership.is_owned(bundle):
            raise BundleUnloadingError(
                f"Namespace bundle {bundle} is not served by this broker "
                f"(not owned, or being unloaded); look {topic} up again"
            )
        name = str(topic)
        served = self.topics.get(name)
        if served is None or served.closed:
            served = ServedTopic(
                Topic(
                    topic,
                    ledger_id=next(self._ledgers),
                    window=self.stats_window,
                    now=self.clock.monotonic,
                    now_ms=self.clock.now_ms,
                ),
                self.clock.monotonic(),
            )
            self.topics[name] = served
            self.registry.attach(topic, close=self._closer(served), stats=TopicStats(), fence=served.fence)
        return served

    def add_session(self, served: ServedTopic, session: Session) -> None:
        served.sessions.add(session)
        served.idle_since = None

    def remove_session(self, served: ServedTopic, session: Session) -> None:
        served.sessions.discard(session)
        if not served.sessions:
            served.idle_since = self.clock.monotonic()

    def _closer(self, served: ServedTopic) -> Callable[[CloseCause], Awaitable[None]]:
        async def close(cause: CloseCause) -> None:
            if self.topics.get(served.name) is served:
                del self.topics[served.name]
            reason = self.close_reason(cause)
            self.closes[reason.reason] = self.closes.get(reason.reason, 0) + len(served.sessions)
            await served.close(reason)

        return close

    def refusal(self, topic: TopicName, owner_of: Callable[[str], str | None]) -> CloseReason:
        """Why a new session of ``topic`` is refused here: "go to its owner" when the bundle has an
        enabled owner elsewhere (``owner_of(bundle)``: its broker id), else "look it up again"."""
        bundle = self._bundle_of(topic)
        owner = owner_of(bundle)
        if owner is not None:
            http_url, broker_url = self._broker_urls(owner)
            if http_url:
                return CloseReason.redirected(http_url, broker_url)
        return CloseReason.not_ready("bundle not owned here")

    def close_reason(self, cause: CloseCause) -> CloseReason:
        """The close frame for a bundle leaving: the new owner's URLs for a transfer, else "look up"."""
        if cause.kind == "transfer" and cause.destination:
            http_url, broker_url = self._broker_urls(cause.destination)
            if http_url:
                return CloseReason.transferred(http_url, broker_url)
        return CloseReason.unloaded("bundle lost" if cause.kind == "lost" else "")

    # ------------------------------------------------------------------ stats
    def push_stats(self) -> None:
        """Put every topic's current rates into the registry; forget topics idle for a whole window."""
        now = self.clock.monotonic()
        for name, served in list(self.topics.items()):
            if served.closed or name not in self.registry:
                continue
            if served.idle_since is not None and now - served.idle_since > self.stats_window:
                del self.topics[name]
                self.registry.detach(name)
                continue
            load = served.topic.load()
            try:
                self.registry.update_stats(
                    name,
                    TopicStats(
                        msg_rate_in=load.msg_rate_in,
                        msg_throughput_in=load.msg_throughput_in,
                        msg_rate_out=load.msg_rate_out,
                        msg_throughput_out=load.msg_throughput_out,
                        producer_count=load.producer_count,
                        consumer_count=load.consumer_count,
                    ),
                )
            except BrokerLBError as exc:
                logger.warning("Could not update the stats of %s: %s", name, exc)

    async def run(self) -> None:
        """Push stats every :data:`STATS_PERIOD` seconds on the clock (cancelled when the broker stops)."""
        while True:
            await self.clock.sleep(STATS_PERIOD)
            try:
                self.push_stats()
            except Exception:
                logger.exception("Topic stats push failed")

    async def close_all(self, reason: CloseReason | None = None) -> None:
        """Close every session (the broker stops without unloading, e.g. when killed in a test)."""
        reason = reason or CloseReason.unloaded("broker stopping")
        served = list(self.topics.values())
        self.topics.clear()
        await asyncio.gather(*(s.close(reason) for s in served), return_exceptions=True)
