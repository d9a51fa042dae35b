"""Coordinator-style group protocol: one elected member computes, the others follow.

The shape of Kafka's broker-coordinated protocol (a group leader runs the
assignor for everyone) on the same ZooKeeper layout as Kafka 0.8, so the two can
be compared on one store:

* every member registers ``/consumers/{group}/ids/{id}`` and joins an election
  (ephemeral sequential ``/consumers/{group}/coordinator/member-``); the lowest
  sequence number is the coordinator;
* the coordinator watches membership and topic partitions; on a change it reads
  the subscriptions *and the current owner nodes*, runs the assignor (so sticky
  and load-aware assignors see who owns what) and writes the target to
  ``/consumers/{group}/assignment`` with a new generation (compare-and-set);
* each member watches the assignment. Incremental (default): it stops fetching
  and releases only the partitions it loses, keeps fetching the others, and
  claims each partition it gains as soon as the previous owner has deleted the
  owner node (watching it) -- KIP-429's two rounds collapse into "wait for the
  release". Eager (``incremental=False``): release everything, then claim.

Safety comes from the ephemeral owner nodes: a member fetches a partition only
after creating its node, so two members never own one partition.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from brokerlb.coordination import MetadataStore, SessionEvent, SessionState, WatchEvent, join_path
from brokerlb.errors import (
    BadVersionError,
    InvalidInputError,
    MetadataStoreError,
    NodeExistsError,
    NoNodeError,
)
from brokerlb.kafka.assignors import PartitionAssignor, TopicPartition, get_assignor
from brokerlb.kafka.assignors.snapshot import by_topic
from brokerlb.kafka.group.common import (
    RebalanceListener,
    read_snapshot,
    register_consumer,
    release_partitions,
)
from brokerlb.kafka.group.layout import GroupPaths, decode_json, thread_id, topic_path
from brokerlb.kafka.group.tracker import FetchTracker, RebalanceRecord

__all__ = ["CoordinatedGroupConsumer", "encode_assignment", "decode_assignment"]

logger = logging.getLogger(__name__)


def encode_assignment(generation: int, assignment: dict[str, list[TopicPartition]]) -> bytes:
    doc = {
        "generation": generation,
        "assignment": {m: by_topic(tps) for m, tps in sorted(assignment.items())},
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def decode_assignment(data: bytes, where: str) -> tuple[int, dict[str, frozenset[TopicPartition]]]:
    doc = decode_json(data, where)
    try:
        generation = int(doc["generation"])
        assignment = {
            m: frozenset(TopicPartition(t, int(p)) for t, ps in by_topic.items() for p in ps)
            for m, by_topic in doc["assignment"].items()
        }
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidInputError(f"bad assignment at {where}: {exc}") from exc
    return generation, assignment


class CoordinatedGroupConsumer:
    """One member of a coordinator-style group on a :class:`MetadataStore`."""

    def __init__(
        self,
        store: MetadataStore,
        group: str,
        consumer_id: str,
        topics: Sequence[str],
        *,
        assignor: str | PartitionAssignor = "cooperative-sticky",
        incremental: bool = True,
        listener: RebalanceListener | None = None,
        tracker: FetchTracker | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.paths = GroupPaths(group)
        self.consumer_id = consumer_id
        self.topics = tuple(sorted(set(topics)))
        self.assignor = get_assignor(assignor) if isinstance(assignor, str) else assignor
        self.incremental = incremental
        self.style = "coordinator" if incremental else "coordinator-eager"
        self.listener = listener
        self.tracker = tracker if tracker is not None else FetchTracker(clock)
        self._clock = clock
        self.owned: frozenset[TopicPartition] = frozenset()
        self.history: list[RebalanceRecord] = []
        self.generation_applied = -1
        self.is_coordinator = False
        self._election_node: str | None = None
        self._closed = False
        self._watches: list = []
        self._leader_watches: list = []
        self._leader_wake = asyncio.Event()
        self._leader_task: asyncio.Task[None] | None = None
        self._leader_busy = False
        self._apply_task: asyncio.Task[None] | None = None
        self._pending: tuple[int, frozenset[TopicPartition]] | None = None
        self._triggered_at: float | None = None
        self._remove_session_listener: Callable[[], None] | None = None
        self._background: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ life cycle

    @property
    def idle(self) -> bool:
        applying = self._apply_task is not None and not self._apply_task.done()
        leading = self.is_coordinator and (self._leader_busy or self._leader_wake.is_set())
        return not applying and not leading and self._pending is None

    async def start(self) -> CoordinatedGroupConsumer:
        for path in (self.paths.ids, self.paths.owners, self.paths.coordinator):
            await self.store.ensure_path(path)
        self._remove_session_listener = self.store.add_session_listener(self._on_session)
        await self._register()
        self._watches.append(await self.store.watch_data(self.paths.assignment, self._on_assignment).start())
        self._watches.append(
            await self.store.watch_children(self.paths.coordinator, self._on_election).start()
        )
        return self

    async def _register(self) -> None:
        await register_consumer(self.store, self.paths, self.consumer_id, self.topics)
        self._election_node = await self.store.create(
            join_path(self.paths.coordinator, "member-"),
            self.consumer_id.encode(),
            ephemeral=True,
            sequential=True,
        )

    def _on_session(self, event: SessionEvent) -> None:
        if event.state is SessionState.LOST:
            self.tracker.stopped(self.consumer_id, self.owned)
            self.owned = frozenset()  # our owner nodes are gone with the session
            self.generation_applied = -1
        if event.new_session and not self._closed:
            task = asyncio.get_running_loop().create_task(self._register())
            self._background.add(task)  # keep a reference until it is done
            task.add_done_callback(self._background.discard)

    async def stop(self) -> None:
        self._closed = True
        for watch in self._watches + self._leader_watches:
            watch.cancel()
        if self._remove_session_listener is not None:
            self._remove_session_listener()
        for task in (self._leader_task, self._apply_task):
            if task is not None:
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, MetadataStoreError):
                    pass
        self.tracker.stopped(self.consumer_id, self.owned)
        try:
            await release_partitions(self.store, self.paths, self.consumer_id, self.owned)
            if self._election_node is not None:
                await self.store.delete(self._election_node)
            await self.store.delete(self.paths.consumer(self.consumer_id))
        except MetadataStoreError as exc:
            logger.info("%s: leaving without a clean release (%s)", self.consumer_id, exc)
        self.owned = frozenset()

    # ------------------------------------------------------------------ coordinator

    def _on_election(self, children: list[str] | None) -> None:
        if self._closed or not children or self._election_node is None:
            return
        leader = sorted(children)[0] == self._election_node.rsplit("/", 1)[1]
        if leader and not self.is_coordinator:
            self.is_coordinator = True
            self._leader_task = asyncio.get_running_loop().create_task(
                self._lead(), name=f"lead {self.consumer_id}"
            )
        elif not leader and self.is_coordinator:
            self._resign()

    def _resign(self) -> None:
        self.is_coordinator = False
        for watch in self._leader_watches:
            watch.cancel()
        self._leader_watches = []
        if self._leader_task is not None:
            self._leader_task.cancel()

    def _leader_trigger(self, *_: Any) -> None:
        if not self._leader_wake.is_set():
            self._triggered_at = self._clock()
        self._leader_wake.set()

    async def _lead(self) -> None:
        watched_topics: set[str] = set()
        self._leader_watches.append(
            await self.store.watch_children(self.paths.ids, self._leader_trigger).start()
        )
        self._leader_trigger()
        while self.is_coordinator and not self._closed:
            await self._leader_wake.wait()
            self._leader_busy = True
            self._leader_wake.clear()
            try:
                topics = await self._assign_once()
                for topic in topics - watched_topics:  # ZKTopicPartitionChangeListener for new topics
                    watch = self.store.watch_data(topic_path(topic), self._leader_trigger)
                    self._leader_watches.append(await watch.start())
                    watched_topics.add(topic)
            except MetadataStoreError as exc:
                logger.info("%s: coordinator could not assign (%s); retrying", self.consumer_id, exc)
                await asyncio.sleep(0.05)
                self._leader_wake.set()
            finally:
                self._leader_busy = False

    async def _assign_once(self) -> set[str]:
        snapshot = await read_snapshot(self.store, self.paths, with_owners=True)
        target = self.assignor.assign(snapshot).target()
        node = await self.store.get_or_none(self.paths.assignment)
        if node is None:
            generation, current, version = 0, None, None
        else:
            generation, current = decode_assignment(node.data, self.paths.assignment)
            version = node.stat.version
        wanted = {m: frozenset(tps) for m, tps in target.items()}
        if current != wanted:
            data = encode_assignment(generation + 1, target)
            try:
                if version is None:
                    await self.store.create(self.paths.assignment, data)
                else:
                    await self.store.set(self.paths.assignment, data, version=version)
            except (BadVersionError, NodeExistsError):
                self._leader_wake.set()  # someone else wrote: read again
        return {t for m in snapshot.members.values() for t in m.topics}

    # ------------------------------------------------------------------ member

    def _on_assignment(self, node: Any) -> None:
        if node is None or self._closed:
            return
        generation, assignment = decode_assignment(node.data, self.paths.assignment)
        if generation <= self.generation_applied:
            return
        self._pending = (generation, assignment.get(self.consumer_id, frozenset()))
        if self._apply_task is None or self._apply_task.done():
            self._apply_task = asyncio.get_running_loop().create_task(self._apply_loop())

    async def _apply_loop(self) -> None:
        while self._pending is not None and not self._closed:
            generation, mine = self._pending
            self._pending = None
            record = RebalanceRecord(
                self.consumer_id, self.style, self._triggered_at or self._clock(), started_at=self._clock()
            )
            try:
                await self._apply(mine, record)
                self.generation_applied = generation
                record.succeeded = True
            except MetadataStoreError as exc:
                logger.info("%s: applying generation %d failed: %s", self.consumer_id, generation, exc)
                if self._pending is None:
                    self._pending = (generation, mine)
                    await asyncio.sleep(0.05)
            record.finished_at = self._clock()
            self.history.append(record)

    async def _apply(self, mine: frozenset[TopicPartition], record: RebalanceRecord) -> None:
        lose = self.owned - mine if self.incremental else self.owned
        if lose:
            record.stopped_fetching_at = self._clock()
            if self.listener is not None:
                by_topic: dict[str, set[int]] = {}
                for tp in lose:
                    by_topic.setdefault(tp.topic, set()).add(tp.partition)
                self.listener.before_releasing_partitions(by_topic)
            self.tracker.stopped(self.consumer_id, lose)
            self.owned = self.owned - lose
            record.released = len(lose)
            await release_partitions(self.store, self.paths, self.consumer_id, lose)
        gain = sorted(mine - self.owned)
        for tp in gain:
            if self._pending is not None:
                return  # a newer generation arrived: apply that instead
            await self._claim(tp)
            self.owned = self.owned | {tp}
            self.tracker.started(self.consumer_id, [tp])
            record.acquired += 1
        if gain or lose:
            record.resumed_fetching_at = self._clock()
            if self.listener is not None:
                self.listener.before_starting_fetchers(
                    self.consumer_id, {self.consumer_id: sorted(self.owned)}
                )

    async def _claim(self, tp: TopicPartition) -> None:
        """Create the owner node, waiting for the previous owner to delete it."""
        mine = thread_id(self.consumer_id).encode()
        while True:
            try:
                await self.store.create(self.paths.owner(tp), mine, ephemeral=True, make_parents=True)
                return
            except NodeExistsError:
                released = asyncio.Event()

                def on_event(event: WatchEvent, released: asyncio.Event = released) -> None:
                    released.set()

                try:
                    stat = await self.store.exists(self.paths.owner(tp), watch=on_event)
                except NoNodeError:
                    stat = None
                if stat is None:
                    continue
                node = await self.store.get_or_none(self.paths.owner(tp))
                if node is not None and node.data == mine and self.store.owns(node.stat):
                    return
                await released.wait()
