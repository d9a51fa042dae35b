"""The ZooKeeper-era consumer-group protocol of Kafka 0.8 (``ZookeeperConsumerConnector``).

Every member rebalances on its own whenever the group's membership
(``/consumers/{group}/ids``) or a subscribed topic's partitions
(``/brokers/topics/{topic}``) change, or its session is renewed
(``ZKRebalancerListener``, ``ZKTopicPartitionChangeListener``,
``ZKSessionExpireListener``). One rebalance (``rebalance``):

1. stop fetching (``closeFetchers``);
2. ``beforeReleasingPartitions`` listener, then delete its owner nodes
   ``/consumers/{group}/owners/{topic}/{partition}`` (``releasePartitionOwnership``);
3. read the group (consumers sorted, their subscriptions, partitions per topic)
   and run the assignor (``AssignmentContext`` + ``RangeAssignor``);
4. create an ephemeral owner node for each partition it got; if one still exists
   (its previous owner has not released it yet), delete the ones it created and
   fail (``reflectPartitionOwnershipDecision``);
5. ``beforeStartingFetchers`` listener, start fetching (``updateFetcher``).

A failed attempt is retried after ``rebalance.backoff.ms`` (2000), up to
``rebalance.max.retries`` (4) times (``syncedRebalance``); triggers arriving
meanwhile are coalesced into one more rebalance (the watcher thread).

Only stateless assignors (``range``, ``roundrobin``) fit this protocol: every
member computes the whole assignment from what it reads, and ownership has
been released by then, so a sticky assignor would see nothing to stick to and
members reading at different moments would disagree.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from brokerlb.coordination import MetadataStore, SessionEvent, SessionState
from brokerlb.errors import InvalidConfigError, MetadataStoreError
from brokerlb.kafka.assignors import TopicPartition, get_assignor
from brokerlb.kafka.group.common import (
    RebalanceListener,
    claim_partitions,
    read_snapshot,
    register_consumer,
    release_partitions,
)
from brokerlb.kafka.group.layout import GroupPaths, topic_path
from brokerlb.kafka.group.tracker import FetchTracker, RebalanceRecord

__all__ = ["ZkRebalancingConsumer", "STATELESS_ASSIGNORS"]

logger = logging.getLogger(__name__)

STATELESS_ASSIGNORS = ("range", "roundrobin")


class ZkRebalancingConsumer:
    """One member of a consumer group running Kafka 0.8's ZooKeeper protocol on a :class:`MetadataStore`."""

    style = "zookeeper"

    def __init__(
        self,
        store: MetadataStore,
        group: str,
        consumer_id: str,
        topics: Sequence[str],
        *,
        assignor: str = "range",
        listener: RebalanceListener | None = None,
        tracker: FetchTracker | None = None,
        rebalance_max_retries: int = 4,
        rebalance_backoff_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if assignor not in STATELESS_ASSIGNORS:
            raise InvalidConfigError(
                "partition.assignment.strategy",
                assignor,
                "the ZooKeeper-era protocol computes on every member after releasing "
                f"ownership; use one of {', '.join(STATELESS_ASSIGNORS)}",
            )
        if rebalance_max_retries < 1:
            raise InvalidConfigError("rebalance.max.retries", rebalance_max_retries, "must be >= 1")
        self.store = store
        self.paths = GroupPaths(group)
        self.consumer_id = consumer_id
        self.topics = tuple(sorted(set(topics)))
        self.assignor = get_assignor(assignor)
        self.listener = listener
        self.tracker = tracker if tracker is not None else FetchTracker(clock)
        self.max_retries = rebalance_max_retries
        self.backoff_s = rebalance_backoff_s
        self._clock = clock
        #: partitions this member owns and fetches (``topicRegistry``)
        self.owned: frozenset[TopicPartition] = frozenset()
        self.history: list[RebalanceRecord] = []
        self.failed_rebalances = 0
        self._wake = asyncio.Event()
        self._triggered_at: float | None = None
        self._busy = False
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self._watches: list = []
        self._remove_session_listener: Callable[[], None] | None = None
        self._background: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ life cycle

    @property
    def idle(self) -> bool:
        """No rebalance running or pending."""
        return not self._busy and not self._wake.is_set()

    async def start(self) -> ZkRebalancingConsumer:
        await self.store.ensure_path(self.paths.ids)
        await self.store.ensure_path(self.paths.owners)
        await self._register()
        self._remove_session_listener = self.store.add_session_listener(self._on_session)
        self._task = asyncio.create_task(self._run(), name=f"rebalance {self.consumer_id}")
        ids_watch = self.store.watch_children(self.paths.ids, lambda _: self.trigger("consumers changed"))
        self._watches.append(await ids_watch.start())
        for topic in self.topics:
            watch = self.store.watch_data(topic_path(topic), lambda _: self.trigger("partitions changed"))
            self._watches.append(await watch.start())
        self.trigger("started")
        return self

    async def _register(self) -> None:
        await register_consumer(self.store, self.paths, self.consumer_id, self.topics)

    def _on_session(self, event: SessionEvent) -> None:
        if event.new_session and not self._closed:  # ZKSessionExpireListener: register again, rebalance
            task = asyncio.get_running_loop().create_task(self._reregister())
            self._background.add(task)  # keep a reference until it is done
            task.add_done_callback(self._background.discard)
        elif event.state is SessionState.LOST:
            self._stop_fetching("session lost")

    async def _reregister(self) -> None:
        try:
            await self._register()
        except MetadataStoreError as exc:
            logger.warning("%s could not re-register after a new session: %s", self.consumer_id, exc)
        self.trigger("new session")

    def trigger(self, reason: str) -> None:
        if self._closed:
            return
        if not self._wake.is_set():
            self._triggered_at = self._clock()
        logger.debug("%s: rebalance triggered (%s)", self.consumer_id, reason)
        self._wake.set()

    async def stop(self) -> None:
        """Leave the group: stop fetching, release ownership, deregister."""
        self._closed = True
        for watch in self._watches:
            watch.cancel()
        if self._remove_session_listener is not None:
            self._remove_session_listener()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self._stop_fetching("stopping")
        try:
            await release_partitions(self.store, self.paths, self.consumer_id, self.owned)
            await self.store.delete(self.paths.consumer(self.consumer_id))
        except MetadataStoreError as exc:
            logger.info(
                "%s: leaving without a clean release (%s); the session end cleans up", self.consumer_id, exc
            )
        self.owned = frozenset()

    # ------------------------------------------------------------------ the protocol

    async def _run(self) -> None:
        while not self._closed:
            await self._wake.wait()
            self._busy = True
            self._wake.clear()
            try:
                await self._synced_rebalance(self._triggered_at or self._clock())
            finally:
                self._busy = False

    async def _synced_rebalance(self, triggered_at: float) -> None:
        record = RebalanceRecord(self.consumer_id, self.style, triggered_at, started_at=self._clock())
        for attempt in range(1, self.max_retries + 1):
            record.attempts = attempt
            try:
                done = await self._rebalance(record)
            except MetadataStoreError as exc:
                logger.info("%s: rebalance attempt %d failed: %s", self.consumer_id, attempt, exc)
                done = False
            if done:
                record.succeeded = True
                break
            if attempt < self.max_retries:
                await asyncio.sleep(self.backoff_s)
        else:
            self.failed_rebalances += 1
            logger.warning("%s: rebalance failed after %d attempts", self.consumer_id, self.max_retries)
        record.finished_at = self._clock()
        self.history.append(record)

    def _stop_fetching(self, why: str) -> None:
        if self.owned:
            self.tracker.stopped(self.consumer_id, self.owned)

    async def _rebalance(self, record: RebalanceRecord) -> bool:
        # 1. closeFetchers
        if record.stopped_fetching_at is None:
            record.stopped_fetching_at = self._clock()
        self._stop_fetching("rebalance")
        # 2. beforeReleasingPartitions + releasePartitionOwnership
        if self.listener is not None:
            owned_by_topic: dict[str, set[int]] = {}
            for tp in self.owned:
                owned_by_topic.setdefault(tp.topic, set()).add(tp.partition)
            self.listener.before_releasing_partitions(owned_by_topic)
        record.released += len(self.owned)
        released, self.owned = self.owned, frozenset()
        await release_partitions(self.store, self.paths, self.consumer_id, released)
        # 3. AssignmentContext + assignor
        snapshot = await read_snapshot(self.store, self.paths, with_owners=False)
        if self.consumer_id not in snapshot.members:
            return False  # our registration is gone (session renewal pending)
        assignment = self.assignor.assign(snapshot).assignment
        mine = assignment.get(self.consumer_id, [])
        # 4. reflectPartitionOwnershipDecision
        claimed, conflict = await claim_partitions(self.store, self.paths, self.consumer_id, mine)
        if conflict is not None:
            logger.debug("%s: %s is still owned by another consumer; backing off", self.consumer_id, conflict)
            await release_partitions(self.store, self.paths, self.consumer_id, claimed)
            return False
        # 5. beforeStartingFetchers + updateFetcher
        if self.listener is not None:
            self.listener.before_starting_fetchers(self.consumer_id, assignment)
        self.owned = frozenset(claimed)
        record.acquired = len(claimed)
        self.tracker.started(self.consumer_id, self.owned)
        record.resumed_fetching_at = self._clock()
        return True

    def __repr__(self) -> str:
        return f"ZkRebalancingConsumer({self.consumer_id!r}, owned={len(self.owned)})"
