"""The topics a broker serves (binary protocol and WebSocket), their sessions, storage and stats.

:class:`DataPath` is the broker side of the data path; both shells -- the binary protocol on
``brokerServicePort`` (:mod:`brokerlb.broker.binary`) and the WebSocket API
(:mod:`brokerlb.broker.websocket`) -- serve their sessions on the same topics:

* :meth:`DataPath.open` gives the :class:`ServedTopic` of a topic whose bundle this broker
  serves, loading it on first use and attaching it to the broker's
  :class:`~brokerlb.broker.data.topics.TopicRegistry` (before anything is awaited, so an unload that
  starts while it loads sees it and stops it) with a close and a fence callback; a topic of a
  bundle it does not own (or is giving up) is refused with
  :class:`~brokerlb.errors.BundleUnloadingError` -- the shells then tell the client to look
  the topic up again (:meth:`DataPath.refusal` names the owner when this broker's ownership
  table knows another one);
* **a persistent topic is a managed ledger on the storage tier**
  (:class:`~brokerlb.storage.managed_ledger.ManagedLedgerFactory`, ``brokerlbStorageUrl``):
  loading it opens its ledgers and cursors from storage with the **epoch** of its bundle's hash
  range -- taken by :meth:`DataPath.start_serving` when this broker starts serving the bundle
  (the ownership's one start-serving place, before any client is served: the storage engine
  fences the range, the former owner's open ledgers there are closed at their last committed entry
  and it can write nothing more). A range split
  by this broker keeps its epoch for the children; an epoch the storage refuses (another broker
  took the range meanwhile) is replaced by a new fence while this broker still serves the
  bundle. A publish is acknowledged once committed; a topic whose ledger is fenced or whose
  storage fails is closed (its clients look it up again and re-send what was not acknowledged);
* when the registry closes a bundle (unload, transfer, loss), every topic of it stops taking
  publishes, commits what it had, persists its cursors and closes its ledger, then every
  session is closed with the matching :class:`~brokerlb.messaging.CloseReason`; a transfer's
  reason names the new owner's URLs (PIP-307), taken from its registration. The next owner
  opens the topics from storage: **a move carries no data**;
* every ``STATS_PERIOD`` seconds it pushes each topic's sliding-window rates
  (``statsUpdateFrequencyInSecs`` long) into the registry; a topic with no session left is
  closed once its window has emptied (it is opened again from storage when a client comes
  back; a topic on the in-memory log is kept while it has anything to keep).

Without a storage tier (``storage=None``: unit tests) persistent topics live in memory
(:class:`~brokerlb.messaging.log.MemoryLog`). Non-persistent topics always do (Pulsar's semantics).
Topic policies come from the broker's config: retention (``defaultRetentionTimeInMinutes``,
``defaultRetentionSizeInMB``) and backlog quota (``backlogQuotaDefaultLimitBytes``,
``backlogQuotaDefaultRetentionPolicy``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from brokerlb.broker.data.topics import CloseCause, TopicRegistry, TopicStats
from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.errors import BrokerLBError, BundleUnloadingError, LedgerFencedError
from brokerlb.messaging import BacklogQuota, CloseReason, Retention, Topic
from brokerlb.naming import TopicName
from brokerlb.ring import NamespaceBundle, topic_hash

if TYPE_CHECKING:
    from brokerlb.storage.managed_ledger import ManagedLedger, ManagedLedgerFactory

__all__ = ["DataPath", "ServedTopic", "Session", "TopicPolicies", "STATS_PERIOD"]

logger = logging.getLogger(__name__)

#: Seconds between two pushes of the topics' rates into the topic registry.
STATS_PERIOD = 1.0


class Session(Protocol):
    """A producer or consumer of a topic (a WebSocket session, or one on a binary connection)."""

    async def close(self, reason: CloseReason) -> None: ...


class Ownership(Protocol):
    """Whether this broker serves a bundle now (the ownership channel): asked before a topic opens
    and before every publish."""

    def serving(self, bundle: str) -> bool: ...

    async def serving_soon(self, bundle: str) -> bool:
        """:meth:`serving`, waiting (bounded) while the record already gives the bundle to this
        broker and its start is in progress (a client told to connect here by a lookup may arrive
        before the storage fence is done)."""
        ...


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
    """A topic served here: the engine's topic, its managed ledger (persistent topics on the
    storage tier) and its open sessions."""

    def __init__(
        self,
        topic: Topic,
        now: float,
        now_ms: Callable[[], int] = lambda: 0,
        ledger: ManagedLedger | None = None,
    ) -> None:
        self.topic = topic
        self.ledger = ledger
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

    async def close(self, reason: CloseReason, *, idle: bool = False) -> None:
        """Stop taking publishes, commit what is pending and persist the cursors (so what was
        acknowledged is in storage before any client reaches the next owner), then close the
        sessions. ``idle``: closed for having no session (the next owner's fence leaves it closed)."""
        if self.closed:
            return
        self.closed = True
        self.topic.fenced = True
        if self.ledger is not None:
            await self.ledger.close(idle=idle)
        sessions = list(self.sessions)
        self.sessions.clear()
        await asyncio.gather(*(s.close(reason) for s in sessions), return_exceptions=True)


class _Loading:
    """A topic being opened from storage (its registry entry exists; a close marks it aborted)."""

    __slots__ = ("future", "aborted")

    def __init__(self) -> None:
        self.future: asyncio.Future[ServedTopic] = asyncio.get_running_loop().create_future()
        self.aborted: CloseCause | None = None


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
        storage: ManagedLedgerFactory | None = None,
    ) -> None:
        self.registry = registry
        self.ownership = ownership
        self._bundle_of = bundle_of
        self._broker_urls = broker_urls
        self.stats_window = max(1, int(stats_window))
        self.clock = clock
        self.policies = policies
        self.storage = storage
        #: changes whenever a topic's bundle may have (the bundles cache's version); ``None``: the
        #: bundle is computed for every publish
        self._ring_version = ring_version
        self.topics: dict[str, ServedTopic] = {}
        self._loading: dict[str, _Loading] = {}
        # message ids of in-memory topics: a fresh "ledger" per topic incarnation
        self._ledgers = itertools.count(clock.now_ms() * 1000)
        #: the epochs this broker took: (namespace, lo, hi) -> epoch (the storage fence of the range)
        self.epochs: dict[tuple[str, int, int], int] = {}
        self._fencing: dict[tuple[str, int, int], asyncio.Future[int]] = {}
        #: Closes by reason, for tests and operators: ``TopicUnloaded``, ``TopicTransferred``, ...
        self.closes: dict[str, int] = {}
        #: topics closed because their ledger was fenced by another owner or storage failed
        self.ledger_failures = 0
        registry.add_stop_listener(self._bundle_stopped)

    # ------------------------------------------------------------------ serving bundles
    async def start_serving(self, bundle: str) -> int | None:
        """This broker starts serving ``bundle`` (the ownership's one start-serving place): the epoch
        of its hash range -- one this broker holds for a range containing it (the children of a split
        here keep their parent's: their open topics go on), else a new fence of the range in storage
        (before any client is served); ``None`` without a storage tier."""
        if self.storage is None:
            return None
        parsed = NamespaceBundle.parse(bundle)
        ns, (lo, hi) = str(parsed.namespace), _half_open(parsed)
        held = [e for (n, low, high), e in self.epochs.items() if n == ns and low <= lo and hi <= high]
        if held:
            return max(held)
        key = (ns, lo, hi)
        pending = self._fencing.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._fencing[key] = future
        try:
            epoch = await self.storage.fence(*key)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters re-raise it
            raise
        finally:
            self._fencing.pop(key, None)
        self.epochs[key] = epoch
        future.set_result(epoch)
        logger.info("Fenced %s in storage (epoch %d)", bundle, epoch)
        return epoch

    def _bundle_stopped(self, bundle: str, why: str) -> None:
        """The registry closed (or fenced) ``bundle``: its epoch is no longer ours once it is closed."""
        if not why.startswith("closed"):
            return
        try:
            parsed = NamespaceBundle.parse(bundle)
        except BrokerLBError:
            return
        ns, (lo, hi) = str(parsed.namespace), _half_open(parsed)
        for key in [k for k in self.epochs if k[0] == ns and k[1] < hi and lo < k[2]]:
            del self.epochs[key]
        if self.storage is not None:
            self.storage.release(ns, lo, hi)

    async def _epoch_of(self, bundle: str) -> int:
        """The epoch to open a topic of ``bundle`` with (:meth:`start_serving`'s)."""
        epoch = await self.start_serving(bundle)
        assert epoch is not None
        return epoch

    # ------------------------------------------------------------------ topics
    async def open(self, topic: TopicName) -> ServedTopic:
        """The served topic for a new session; :class:`BundleUnloadingError` unless we serve its bundle.

        The ownership check and the registry attach happen with no await in between, so an unload
        that starts later always sees (and closes) the topic, even while it is being loaded.
        """
        bundle = self._bundle_of(topic)
        if not self.ownership.serving(bundle) and not await self.ownership.serving_soon(bundle):
            raise BundleUnloadingError(
                f"Namespace bundle {bundle} is not served by this broker "
                f"(not owned, or being unloaded); look {topic} up again"
            )
        name = str(topic)
        served = self.topics.get(name)
        if served is not None and not served.closed:
            return served
        loading = self._loading.get(name)
        if loading is not None:
            return await asyncio.shield(loading.future)
        loading = self._loading[name] = _Loading()
        self.registry.attach(
            topic, close=self._closer(name), stats=TopicStats(), fence=lambda: self._fence(name)
        )
        try:
            served = await self._load(topic, bundle, loading)
        except BaseException as exc:
            if self._loading.get(name) is loading:
                del self._loading[name]
                if loading.aborted is None:
                    self.registry.detach(name)
            loading.future.set_exception(exc)
            loading.future.exception()
            raise
        del self._loading[name]
        self.topics[name] = served
        loading.future.set_result(served)
        return served

    async def _load(self, topic: TopicName, bundle: str, loading: _Loading) -> ServedTopic:
        ledger = None
        options: dict[str, Any] = {
            "window": self.stats_window,
            "now": self.clock.monotonic,
            "now_ms": self.clock.now_ms,
            "backlog_quota": self.policies.backlog_quota,
        }
        storage = self.storage
        if storage is not None and topic.is_persistent:
            ledger = await self._open_ledger(topic, bundle, storage)
            engine = Topic(topic, log=ledger, **options)
            for info in ledger.stored_cursors.values():
                engine.restore_subscription(info.name, info.subscription_type, info.state(ledger.ledgers))
            ledger.cursor_source = _cursor_source(engine)
            logger.info(
                "Topic %s opened from storage (epoch %d, ledgers %s, entries %d..%d, %d cursors)",
                topic,
                ledger.epoch,
                [i.ledger_id for i in ledger.ledgers],
                ledger.first_seq,
                ledger.next_seq - 1,
                len(ledger.stored_cursors),
            )
        else:
            ledger_id = max(next(self._ledgers), self.clock.now_ms() * 1000)
            engine = Topic(topic, ledger_id=ledger_id, retention=self.policies.retention, **options)
            logger.info("Topic %s starts in memory (ledger %d)", topic, ledger_id)
        served = ServedTopic(engine, self.clock.monotonic(), self.clock.now_ms, ledger)
        if loading.aborted is not None:  # unloaded while it loaded: give the ledger back
            await served.close(self.close_reason(loading.aborted))
            raise BundleUnloadingError(f"Namespace bundle {bundle} was unloaded while {topic} was loading")
        # publishes are accepted only while this broker serves the topic's bundle *now* (its ownership
        # node is current and its session known alive): a process frozen past its session wakes up
        # refusing them, before any notification of the loss reaches it
        engine.accepting = self._accepting(topic)
        # a publish committed later carries its own receipt: ``token(ledger_id, entry_id)``
        engine.on_stored = lambda token, ledger_id, entry_id: token(ledger_id, entry_id)  # type: ignore[operator]
        engine.on_failed = lambda error: self._ledger_failed(served, error)
        return served

    async def _open_ledger(
        self, topic: TopicName, bundle: str, storage: ManagedLedgerFactory
    ) -> ManagedLedger:
        namespace = str(topic.namespace)
        for attempt in range(2):
            epoch = await self._epoch_of(bundle)
            try:
                ledger = await storage.open(topic.persistence_name, namespace, topic_hash(str(topic)), epoch)
            except LedgerFencedError as exc:
                # another broker fenced the range after we took it: take it again while we serve it
                if attempt or not self.ownership.serving(bundle):
                    raise BundleUnloadingError(f"{topic}: {exc}; look it up again") from exc
                logger.warning("Opening %s: %s; fencing %s again", topic, exc, bundle)
                self._bundle_stopped(bundle, "closed: fenced")
                continue
            assert ledger is not None
            return ledger
        raise AssertionError("unreachable")

    def _ledger_failed(self, served: ServedTopic, error: BrokerLBError) -> None:
        """The topic's ledger was fenced by another owner or its storage failed: close it; the
        clients look the topic up again (and re-send what was not acknowledged)."""
        self.ledger_failures += 1
        name = served.name
        if self.topics.get(name) is served:
            del self.topics[name]
            self.registry.detach(name)
        reason = CloseReason.unloaded(f"storage: {error}")
        self.closes[reason.reason] = self.closes.get(reason.reason, 0) + len(served.sessions)
        task = asyncio.ensure_future(served.close(reason))
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    def _fence(self, name: str) -> None:
        served = self.topics.get(name)
        if served is not None:
            served.fence()

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

    def _closer(self, name: str) -> Callable[[CloseCause], Awaitable[None]]:
        async def close(cause: CloseCause) -> None:
            loading = self._loading.get(name)
            if loading is not None:
                loading.aborted = cause
                with contextlib.suppress(BrokerLBError):
                    await asyncio.shield(loading.future)
                return
            served = self.topics.pop(name, None)
            if served is None:
                return
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
        """Put every topic's current rates into the registry; close topics with nothing to keep."""
        now = self.clock.monotonic()
        for name, served in list(self.topics.items()):
            if served.closed or name not in self.registry:
                continue
            if (
                served.idle_since is not None
                and now - served.idle_since > self.stats_window
                and (
                    served.ledger is not None
                    and not served.topic.producers
                    and not served.topic.held
                    or served.topic.idle
                )
            ):
                del self.topics[name]
                self.registry.detach(name)
                task = asyncio.ensure_future(served.close(CloseReason.unloaded("idle"), idle=True))
                task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)
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


def _half_open(bundle: NamespaceBundle) -> tuple[int, int]:
    """A bundle's hashes as ``[lo, hi)`` (the last bundle also holds 0xffffffff)."""
    return bundle.lower, bundle.upper + 1 if bundle.upper == 0xFFFFFFFF else bundle.upper


def _cursor_source(engine: Topic) -> Callable[[str], Any]:
    def source(name: str) -> Any:
        sub = engine.subscriptions.get(name)
        if sub is None or not sub.durable:
            return None
        return sub.type, sub.cursor()

    return source
