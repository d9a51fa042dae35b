"""The topics a broker serves (binary protocol and WebSocket), their sessions, hand-offs and stats.

:class:`DataPath` is the broker side of the data path; both shells -- the binary protocol on
``brokerServicePort`` (:mod:`brokerlb.broker.binary`) and the WebSocket API
(:mod:`brokerlb.broker.websocket`) -- serve their sessions on the same topics:

* :meth:`DataPath.open` gives the :class:`ServedTopic` of a topic whose bundle this broker
  owns, creating it on first use (from a handed-over state when one was parked here, see
  below) and attaching it to the broker's :class:`~brokerlb.broker.topics.TopicRegistry`
  with a close and a fence callback; a topic of a bundle it does not own (or is giving up) is
  refused with :class:`~brokerlb.errors.BundleUnloadingError` -- the shells then tell the
  client to look the topic up again (:meth:`DataPath.refusal` names the owner when this
  broker's ownership cache knows another one);
* when the registry closes a bundle (unload, transfer, loss), every session of its topics is
  closed with the matching :class:`~brokerlb.messaging.CloseReason`; a transfer's reason names
  the new owner's URLs (PIP-307), taken from its registration;
* **hand-off** (planned moves): :meth:`DataPath.export_bundle` fences the bundle's topics and
  returns their states (retained entries, durable cursors); the owner sends them to the next
  owner, whose :meth:`DataPath.import_states` parks them until the topic is opened there --
  before any client reconnects, because the old owner closes its sessions only after the
  hand-off. A parked state whose bundle this broker never comes to own is dropped after
  :data:`PARKED_STATE_TTL` seconds (with a warning: that topic's retained messages are lost);
* every ``STATS_PERIOD`` seconds it pushes each topic's sliding-window rates
  (``statsUpdateFrequencyInSecs`` long) into the registry; a topic with nothing to keep
  (no producer, consumer, durable subscription or retained entry) is forgotten once its
  window has emptied.

Topic policies come from the broker's config: retention (``defaultRetentionTimeInMinutes``,
``defaultRetentionSizeInMB``) and backlog quota (``backlogQuotaDefaultLimitBytes``,
``backlogQuotaDefaultRetentionPolicy``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from brokerlb.broker.topics import CloseCause, TopicRegistry, TopicStats
from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.errors import BrokerLBError, BundleUnloadingError
from brokerlb.messaging import BacklogQuota, CloseReason, Retention, Topic, TopicState
from brokerlb.naming import TopicName

__all__ = ["DataPath", "ServedTopic", "Session", "TopicPolicies", "STATS_PERIOD", "PARKED_STATE_TTL"]

logger = logging.getLogger(__name__)

#: Seconds between two pushes of the topics' rates into the topic registry.
STATS_PERIOD = 1.0
#: Seconds a handed-over topic state waits for its bundle to be owned here.
PARKED_STATE_TTL = 300.0


class Session(Protocol):
    """A producer or consumer of a topic (a WebSocket session, or one on a binary connection)."""

    async def close(self, reason: CloseReason) -> None: ...


class Ownership(Protocol):
    def is_owned(self, bundle: Any) -> bool: ...

    def serving(self, bundle: Any) -> bool: ...


@dataclass(frozen=True, slots=True)
class TopicPolicies:
    """Retention and backlog quota of the topics (from broker.conf)."""

    retention: Retention = Retention()
    backlog_quota: BacklogQuota = BacklogQuota()

    @classmethod
    def from_config(cls, conf: Any) -> TopicPolicies:
        minutes, megabytes = conf.defaultRetentionTimeInMinutes, conf.defaultRetentionSizeInMB
        return cls(
            Retention(
                minutes * 60_000 if minutes > 0 else minutes,
                megabytes * 1024 * 1024 if megabytes > 0 else megabytes,
            ),
            BacklogQuota(conf.backlogQuotaDefaultLimitBytes, conf.backlogQuotaDefaultRetentionPolicy),
        )


class ServedTopic:
    """A topic served here: the engine's topic and its open sessions."""

    def __init__(self, topic: Topic, now: float, now_ms: Callable[[], int] = lambda: 0) -> None:
        self.topic = topic
        #: wall-clock milliseconds (publish times of messages built by the broker)
        self.now_ms = now_ms
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
        policies: TopicPolicies = TopicPolicies(),
        ring_version: Callable[[], int] | None = None,
    ) -> None:
        self.registry = registry
        self.ownership = ownership
        self._bundle_of = bundle_of
        self._broker_urls = broker_urls
        self.stats_window = max(1, int(stats_window))
        self.clock = clock
        self.policies = policies
        #: changes whenever a topic's bundle may have (the bundles cache's version); ``None``: the
        #: bundle is computed for every publish
        self._ring_version = ring_version
        self.topics: dict[str, ServedTopic] = {}
        # message ids: a fresh "ledger" per topic incarnation, unique across brokers and restarts
        self._ledgers = itertools.count(clock.now_ms() * 1000)
        #: handed-over states waiting for their topic to be opened here: name -> (state, parked at)
        self.parked: dict[str, tuple[TopicState, float]] = {}
        #: Closes by reason, for tests and operators: ``TopicUnloaded``, ``TopicTransferred``, ...
        self.closes: dict[str, int] = {}
        #: Topic states handed to other brokers and received from them (counts of topics).
        self.handed_off = 0
        self.imported = 0

    # ------------------------------------------------------------------ topics
    def open(self, topic: TopicName) -> ServedTopic:
        """The served topic for a new session; :class:`BundleUnloadingError` unless we own its bundle.

        Synchronous on purpose: the ownership check and the registry attach happen with no
        await in between, so an unload that starts later always sees (and closes) the topic.
        """
        bundle = self._bundle_of(topic)
        if not self.ownership.serving(bundle):
            raise BundleUnloadingError(
                f"Namespace bundle {bundle} is not served by this broker "
                f"(not owned, or being unloaded); look {topic} up again"
            )
        name = str(topic)
        served = self.topics.get(name)
        if served is None or served.closed:
            served = ServedTopic(self._new_topic(topic), self.clock.monotonic(), self.clock.now_ms)
            self.topics[name] = served
            self.registry.attach(topic, close=self._closer(served), stats=TopicStats(), fence=served.fence)
        return served

    def _new_topic(self, topic: TopicName) -> Topic:
        parked = self.parked.pop(str(topic), None)
        options: dict[str, Any] = {
            "window": self.stats_window,
            "now": self.clock.monotonic,
            "now_ms": self.clock.now_ms,
            "retention": self.policies.retention,
            "backlog_quota": self.policies.backlog_quota,
        }
        if parked is not None:
            engine = Topic.from_state(parked[0], **options)
            logger.info(
                "Topic %s starts from a handed-over state (ledger %d, entries %d..%d)",
                topic,
                engine.ledger_id,
                engine.first_entry_id,
                engine.next_entry_id - 1,
            )
        else:
            ledger = max(next(self._ledgers), self.clock.now_ms() * 1000)
            engine = Topic(topic, ledger_id=ledger, **options)
            logger.info("Topic %s starts afresh (ledger %d)", topic, ledger)
        # publishes are accepted only while this broker serves the topic's bundle *now* (its ownership
        # node is current and its session known alive): a process frozen past its session wakes up
        # refusing them, before any notification of the loss reaches it
        engine.accepting = self._accepting(topic)
        # a publish held by the backlog quota carries its own receipt: ``token(topic, entry_id)``
        engine.on_released = lambda token, entry_id: token(engine, entry_id)  # type: ignore[operator]
        return engine

    def _accepting(self, topic: TopicName) -> Callable[[], bool]:
        """Whether this broker serves ``topic``'s bundle now -- asked before every publish. The
        bundle's name is computed again only when ``ring_version`` changes (a split or merge)."""
        serving, bundle_of, ring_version = self.ownership.serving, self._bundle_of, self._ring_version
        if ring_version is None:
            return lambda: serving(bundle_of(topic))
        seen: list[Any] = [None, ""]  # [ring version, bundle name]

        def accepting() -> bool:
            version = ring_version()
            if version != seen[0]:
                seen[1] = bundle_of(topic)
                seen[0] = version
            return serving(seen[1])

        return accepting

    def bundle_of(self, topic: TopicName) -> str:
        """The bundle ``topic`` hashes into now."""
        return self._bundle_of(topic)

    def served(self, topic: TopicName | str) -> ServedTopic | None:
        return self.topics.get(str(topic))

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

    # ------------------------------------------------------------------ hand-off
    def export_bundle(self, bundle: str) -> list[TopicState]:
        """Fence every topic of ``bundle`` and return the states the next owner needs (served topics
        and states parked here); nothing of them changes here afterwards."""
        states: list[TopicState] = []
        for served in list(self.topics.values()):
            if self._bundle_of(served.topic.name) != bundle:
                continue
            served.fence()
            topic = served.topic
            if topic.persistent and (topic.entries or any(s.durable for s in topic.subscriptions.values())):
                states.append(topic.export_state())
        for name, (state, _at) in list(self.parked.items()):
            if self._bundle_of(TopicName.parse(name)) == bundle:
                del self.parked[name]
                states.append(state)
        self.handed_off += len(states)
        return states

    def import_states(self, states: list[TopicState]) -> None:
        """Park handed-over states until their topics are opened here (module docstring)."""
        now = self.clock.monotonic()
        for state in states:
            served = self.topics.get(state.name)
            if served is not None and not served.closed and not served.topic.fenced:
                logger.warning(
                    "Topic %s is already served here; its handed-over state is dropped", state.name
                )
                continue
            # a fenced topic here is on its way out (this broker handed the bundle to itself): the
            # state is opened once the old topic is closed
            self.parked[state.name] = (state, now)
            logger.info(
                "Parked the handed-over state of %s (ledger %d, %d entries, next %d)",
                state.name,
                state.ledger_id,
                len(state.entries),
                state.next_entry_id,
            )
        self.imported += len(states)

    def _expire_parked(self, now: float) -> None:
        for name, (state, at) in list(self.parked.items()):
            if now - at > PARKED_STATE_TTL:
                del self.parked[name]
                logger.warning(
                    "Dropping the handed-over state of %s (%d retained entries): its bundle was not "
                    "owned here within %.0f s",
                    name,
                    len(state.entries),
                    PARKED_STATE_TTL,
                )

    # ------------------------------------------------------------------ stats
    def push_stats(self) -> None:
        """Put every topic's current rates into the registry; forget topics with nothing to keep."""
        now = self.clock.monotonic()
        self._expire_parked(now)
        for name, served in list(self.topics.items()):
            if served.closed or name not in self.registry:
                continue
            if (
                served.idle_since is not None
                and now - served.idle_since > self.stats_window
                and served.topic.idle
            ):
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
