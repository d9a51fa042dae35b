"""KIP-848 (``group.protocol=consumer``) on a metadata store: the coordinator service and its members.

The shell around :class:`~brokerlb.kafka.reconciliation.ConsumerGroupCoordinator`.
Heartbeats and their answers travel through the store, beside the ZooKeeper-era
layout of :mod:`brokerlb.kafka.group.layout`:

======================================================  ==========  ==========================================
path                                                    kind        data
======================================================  ==========  ==========================================
``/consumers/{group}/kip848/heartbeats/{memberId}``     ephemeral   the member's last heartbeat: ``{"seq",
                                                                    "memberEpoch", "subscription", "owned",
                                                                    "rebalanceTimeoutMs"}``
``/consumers/{group}/kip848/responses/{memberId}``      persistent  the answer: ``{"seq", "memberEpoch",
                                                                    "error", "assignment", "state",
                                                                    "heartbeatIntervalMs", "sessionTimeoutMs"}``
``/consumers/{group}/kip848/state``                     persistent  the coordinator's state (epochs, target,
                                                                    member records), read back on restart
======================================================  ==========  ==========================================

* :class:`GroupCoordinatorService` -- one per group (Kafka's group coordinator is
  one broker): watches the heartbeat nodes, answers each new heartbeat with the
  pure coordinator, fences on a timer, follows the subscribed topics' partition
  counts (``/brokers/topics/{topic}``) and persists its state after every change.
* :class:`ReconcilingConsumer` -- a member: heartbeats every
  ``heartbeat_interval_s`` (and at once after changing what it owns); revokes
  what the answer leaves out before taking what it adds; drops everything and
  rejoins with epoch 0 on ``FENCED_MEMBER_EPOCH`` / ``UNKNOWN_MEMBER_ID`` or when
  its lease (:class:`~brokerlb.kafka.reconciliation.MemberLease`) runs out;
  leaves with epoch -1.

``sessionTimeoutMs`` in the answer is ours (Kafka's clients do not need it): the
member's lease counts it. Time comes from an injected :class:`~brokerlb.clock.Clock`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.coordination import MetadataStore, Node, join_path
from brokerlb.errors import InvalidInputError, MetadataStoreError, NodeExistsError, NoNodeError
from brokerlb.kafka.assignors import PartitionAssignor, TopicPartition, get_assignor
from brokerlb.kafka.assignors.snapshot import by_topic
from brokerlb.kafka.group.common import RebalanceListener, read_partitions
from brokerlb.kafka.group.layout import GroupPaths, decode_json, topic_path
from brokerlb.kafka.group.tracker import FetchTracker, RebalanceRecord
from brokerlb.kafka.reconciliation import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    ConsumerGroupCoordinator,
    HeartbeatError,
    HeartbeatRequest,
    HeartbeatResponse,
    MemberLease,
    MemberRecord,
    MemberState,
)

__all__ = [
    "GroupCoordinatorService",
    "Kip848Paths",
    "ReconcilingConsumer",
    "read_coordinator_state",
    "reconciling_style",
]

logger = logging.getLogger(__name__)


class Kip848Paths:
    def __init__(self, group: str) -> None:
        self.group = GroupPaths(group)
        self.root = join_path(self.group.root, "kip848")
        self.heartbeats = join_path(self.root, "heartbeats")
        self.responses = join_path(self.root, "responses")
        self.state = join_path(self.root, "state")

    def heartbeat(self, member_id: str) -> str:
        return join_path(self.heartbeats, member_id)

    def response(self, member_id: str) -> str:
        return join_path(self.responses, member_id)


def _tps(doc: Mapping[str, Iterable[int]]) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(str(t), int(p)) for t, ps in doc.items() for p in ps)


def _dump(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()


# --------------------------------------------------------------------------- state node


def encode_state(c: ConsumerGroupCoordinator) -> bytes:
    members = {
        mid: {
            "memberEpoch": m.member_epoch,
            "previousMemberEpoch": m.previous_member_epoch,
            "state": m.state.value,
            "subscription": list(m.subscription),
            "assigned": by_topic(m.assigned),
            "pendingRevocation": by_topic(m.pending_revocation),
            "rebalanceTimeoutMs": int(m.rebalance_timeout_s * 1000),
        }
        for mid, m in sorted(c.members.items())
    }
    return _dump(
        {
            "groupEpoch": c.group_epoch,
            "targetEpoch": c.target_epoch,
            "target": {mid: by_topic(tps) for mid, tps in sorted(c.target.items())},
            "members": members,
            "partitions": dict(sorted(c.partitions.items())),
        }
    )


def read_coordinator_state(data: bytes, where: str) -> dict[str, Any]:
    """The state node as plain JSON (validated enough for :func:`restore_state`)."""
    doc = decode_json(data, where)
    if not isinstance(doc, dict) or not {"groupEpoch", "targetEpoch", "target", "members"} <= set(doc):
        raise InvalidInputError(f"bad KIP-848 coordinator state at {where}")
    return doc


def restore_state(c: ConsumerGroupCoordinator, doc: Mapping[str, Any], now: float) -> None:
    c.group_epoch = int(doc["groupEpoch"])
    c.target_epoch = int(doc["targetEpoch"])
    c.target = {mid: _tps(parts) for mid, parts in doc["target"].items()}
    c.partitions = {str(t): int(n) for t, n in doc.get("partitions", {}).items()}
    for mid, m in doc["members"].items():
        record = MemberRecord(
            mid,
            int(m["memberEpoch"]),
            int(m["previousMemberEpoch"]),
            MemberState(m["state"]),
            tuple(m["subscription"]),
            _tps(m["assigned"]),
            _tps(m["pendingRevocation"]),
            m["rebalanceTimeoutMs"] / 1000.0,
        )
        c.members[mid] = record
        c.last_seen[mid] = now  # a fresh session window: members' leases started no later
        if record.state is MemberState.UNREVOKED_PARTITIONS:
            c.revocation_deadline[mid] = now + record.rebalance_timeout_s
        for tp in record.holds():
            c.holder[tp] = mid


# --------------------------------------------------------------------------- coordinator


class GroupCoordinatorService:
    """The group coordinator of one consumer group, on a :class:`MetadataStore`."""

    def __init__(
        self,
        store: MetadataStore,
        group: str,
        *,
        assignor: str | PartitionAssignor = "uniform",
        session_timeout_s: float = 45.0,
        heartbeat_interval_s: float = 5.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.store = store
        self.paths = Kip848Paths(group)
        self.clock = clock
        chosen = get_assignor(assignor) if isinstance(assignor, str) else assignor
        self.coordinator = ConsumerGroupCoordinator(
            group, chosen, session_timeout_s=session_timeout_s, heartbeat_interval_s=heartbeat_interval_s
        )
        #: every fencing, for tests and measurement: (time, member, reason)
        self.fenced: list[tuple[float, str, str]] = []
        self._queue: asyncio.Queue[tuple[str, bytes | None]] = asyncio.Queue()
        self._member_watches: dict[str, Any] = {}
        self._topic_watches: dict[str, Any] = {}
        self._watches: list[Any] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._last_seq: dict[str, int] = {}
        self._saved: bytes | None = None
        self._state_version: int | None = None
        self._closed = False

    async def start(self) -> GroupCoordinatorService:
        for path in (self.paths.heartbeats, self.paths.responses):
            await self.store.ensure_path(path)
        node = await self.store.get_or_none(self.paths.state)
        if node is not None:
            restore_state(
                self.coordinator, read_coordinator_state(node.data, self.paths.state), self.clock.monotonic()
            )
            self._saved, self._state_version = node.data, node.stat.version
        self._tasks.append(asyncio.create_task(self._serve(), name=f"kip848 coordinator {self.paths.root}"))
        self._tasks.append(asyncio.create_task(self._fence_loop(), name=f"kip848 timeouts {self.paths.root}"))
        self._watches.append(await self.store.watch_children(self.paths.heartbeats, self._on_members).start())
        return self

    async def stop(self) -> None:
        self._closed = True
        for w in [*self._watches, *self._member_watches.values(), *self._topic_watches.values()]:
            w.cancel()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, MetadataStoreError):
                pass

    @property
    def idle(self) -> bool:
        return self._queue.empty()

    # ------------------------------------------------------------------ inputs

    def _on_members(self, children: list[str] | None) -> None:
        if self._closed:
            return
        for mid in children or []:
            if mid not in self._member_watches:
                watch = self.store.watch_data(
                    self.paths.heartbeat(mid), functools.partial(self._on_heartbeat, mid)
                )
                self._member_watches[mid] = watch
                task = asyncio.get_running_loop().create_task(watch.start())
                task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)
        for mid in set(self._member_watches) - set(children or []):
            self._member_watches.pop(mid).cancel()  # gone: a leave was sent, or the timeouts fence it

    def _on_heartbeat(self, mid: str, node: Node | None) -> None:
        if node is not None and not self._closed:
            self._queue.put_nowait((mid, node.data))

    def _on_topic(self, _: Node | None) -> None:
        if not self._closed:
            self._queue.put_nowait(("", None))  # re-read the partition counts

    # ------------------------------------------------------------------ the loop

    async def _serve(self) -> None:
        while not self._closed:
            mid, data = await self._queue.get()
            try:
                if data is None:
                    await self._refresh_partitions()
                else:
                    await self._handle(mid, data)
                await self._persist()
            except MetadataStoreError as exc:
                logger.info("kip848 coordinator: %s; the member's next heartbeat retries", exc)
            except InvalidInputError as exc:
                logger.warning("kip848 coordinator: ignoring a heartbeat of %s: %s", mid, exc)

    async def _fence_loop(self) -> None:
        tick = min(0.05, self.coordinator.heartbeat_interval_s / 2)
        while not self._closed:
            await self.clock.sleep(tick)
            now = self.clock.monotonic()
            fenced = self.coordinator.tick(now)
            for f in fenced:
                logger.info("kip848: fenced %s: %s", f.member_id, f.reason)
                self.fenced.append((now, f.member_id, f.reason))
            if fenced:
                try:
                    await self._persist()
                except MetadataStoreError as exc:
                    logger.info("kip848 coordinator could not save its state: %s", exc)

    async def _handle(self, mid: str, data: bytes) -> None:
        where = self.paths.heartbeat(mid)
        doc = decode_json(data, where)
        try:
            seq = int(doc["seq"])
            epoch = int(doc["memberEpoch"])
            subscription = tuple(doc["subscription"]) if doc.get("subscription") is not None else None
            owned = _tps(doc["owned"]) if doc.get("owned") is not None else None
            timeout_ms = doc.get("rebalanceTimeoutMs")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidInputError(f"bad heartbeat at {where}: {exc}") from exc
        if seq <= self._last_seq.get(mid, -1):
            return  # already answered
        self._last_seq[mid] = seq
        if subscription is not None:
            await self._follow_topics(subscription)
        request = HeartbeatRequest(
            mid, epoch, subscription, owned, timeout_ms / 1000.0 if timeout_ms is not None else None
        )
        response = self.coordinator.heartbeat(request, self.clock.monotonic())
        await self._answer(seq, response)

    async def _answer(self, seq: int, r: HeartbeatResponse) -> None:
        doc = {
            "seq": seq,
            "memberEpoch": r.member_epoch,
            "error": r.error.value if r.error is not None else None,
            "assignment": by_topic(r.assignment) if r.assignment is not None else None,
            "state": r.state.value if r.state is not None else None,
            "heartbeatIntervalMs": int(r.heartbeat_interval_s * 1000),
            "sessionTimeoutMs": int(self.coordinator.session_timeout_s * 1000),
        }
        path = self.paths.response(r.member_id)
        try:
            await self.store.set(path, _dump(doc))
        except NoNodeError:
            try:
                await self.store.create(path, _dump(doc), make_parents=True)
            except NodeExistsError:
                await self.store.set(path, _dump(doc))

    async def _follow_topics(self, topics: Sequence[str]) -> None:
        new = [t for t in topics if t not in self._topic_watches]
        for topic in new:
            self._topic_watches[topic] = await self.store.watch_data(
                topic_path(topic), self._on_topic
            ).start()
        if new:
            await self._refresh_partitions()

    async def _refresh_partitions(self) -> None:
        counts = await read_partitions(self.store, self._topic_watches)
        self.coordinator.set_partitions(counts)

    async def _persist(self) -> None:
        """Save the state node when it changed (compare-and-set on its version)."""
        data = encode_state(self.coordinator)
        if data == self._saved:
            return
        if self._state_version is None:
            try:
                await self.store.create(self.paths.state, data, make_parents=True)
                self._state_version = 0
            except NodeExistsError:  # left by an earlier coordinator: take it over
                node = await self.store.get(self.paths.state)
                self._state_version = node.stat.version
                self._state_version = (
                    await self.store.set(self.paths.state, data, version=node.stat.version)
                ).version
        else:
            self._state_version = (
                await self.store.set(self.paths.state, data, version=self._state_version)
            ).version
        self._saved = data


# --------------------------------------------------------------------------- member


class FetchRecorder(Protocol):
    """Where a member records when it starts and stops using partitions (:class:`FetchTracker`)."""

    def started(self, member: str, partitions: Iterable[TopicPartition]) -> None: ...

    def stopped(self, member: str, partitions: Iterable[TopicPartition], at: float | None = None) -> None: ...


class ReconcilingConsumer:
    """One member of a KIP-848 consumer group on a :class:`MetadataStore`."""

    style = "kip-848"

    def __init__(
        self,
        store: MetadataStore,
        group: str,
        consumer_id: str,
        topics: Sequence[str],
        *,
        rebalance_timeout_s: float = 300.0,
        session_timeout_s: float = 45.0,
        heartbeat_interval_s: float = 5.0,
        listener: RebalanceListener | None = None,
        tracker: FetchRecorder | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.store = store
        self.paths = Kip848Paths(group)
        self.consumer_id = consumer_id
        self.topics = tuple(sorted(set(topics)))
        self.rebalance_timeout_s = rebalance_timeout_s
        self.heartbeat_interval_s = heartbeat_interval_s
        self.leave_timeout_s = max(1.0, 10 * heartbeat_interval_s)
        self.listener = listener
        self.clock = clock
        self.tracker: FetchRecorder = tracker if tracker is not None else FetchTracker(clock.monotonic)
        self.lease = MemberLease(session_timeout_s, rebalance_timeout_s)
        self.owned: frozenset[TopicPartition] = frozenset()
        self.member_epoch = JOIN_EPOCH
        self.state: MemberState | None = None
        self.history: list[RebalanceRecord] = []
        self.rejoins = 0
        self._seq = 0
        self._send_subscription = True
        self._answered_seq = 0
        self._wake = asyncio.Event()
        self._answer: dict[str, Any] | None = None
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self._watch: Any = None
        self._change_started: float | None = None

    @property
    def idle(self) -> bool:
        """Fully reconciled as far as this member knows (STABLE, nothing unanswered)."""
        return self.state is MemberState.STABLE and self._answered_seq == self._seq and self._answer is None

    async def start(self) -> ReconcilingConsumer:
        await self.store.ensure_path(self.paths.heartbeats)
        self._watch = await self.store.watch_data(
            self.paths.response(self.consumer_id), self._on_answer
        ).start()
        self._task = asyncio.create_task(self._run(), name=f"kip848 member {self.consumer_id}")
        return self

    async def stop(self) -> None:
        """Leave the group: stop using everything, send a leave heartbeat (epoch -1), deregister.

        Waits (up to ``leave_timeout_s``) for the coordinator to answer the leave before
        deleting the heartbeat node, so the leave is seen; without an answer the session
        timeout removes the member.
        """
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, MetadataStoreError):
                pass
        self._drop(self.owned, "leaving")
        try:
            await self._send(LEAVE_EPOCH)
            leave_seq = self._seq
            deadline = self.clock.monotonic() + self.leave_timeout_s
            while self._answered_seq < leave_seq and self.clock.monotonic() < deadline:
                self._wake.clear()
                try:
                    await self.clock.wait_for(self._wake.wait(), max(0.0, deadline - self.clock.monotonic()))
                except TimeoutError:
                    break
            await self.store.delete(self.paths.heartbeat(self.consumer_id))
        except MetadataStoreError as exc:
            logger.info("%s: leaving without a clean leave heartbeat (%s)", self.consumer_id, exc)
        finally:
            if self._watch is not None:
                self._watch.cancel()

    # ------------------------------------------------------------------ heartbeats

    def _on_answer(self, node: Node | None) -> None:
        if node is None:
            return
        try:
            doc = decode_json(node.data, self.paths.response(self.consumer_id))
            if self._closed:  # leaving: only the answer's arrival matters
                self._answered_seq = max(self._answered_seq, int(doc["seq"]))
                self._wake.set()
            elif int(doc["seq"]) > self._answered_seq:
                self._answer = doc
                self._wake.set()
        except (InvalidInputError, KeyError, TypeError, ValueError) as exc:
            logger.warning("%s: ignoring a bad answer: %s", self.consumer_id, exc)

    async def _run(self) -> None:
        next_beat = self.clock.monotonic()
        while not self._closed:
            now = self.clock.monotonic()
            self._check_lease(now)
            if self._answer is not None:
                answer, self._answer = self._answer, None
                if self._apply(answer):
                    next_beat = now  # tell the coordinator at once what we own now
            if self.clock.monotonic() >= next_beat:
                try:
                    await self._send(self.member_epoch)
                except MetadataStoreError as exc:
                    logger.info("%s: heartbeat failed: %s", self.consumer_id, exc)
                next_beat = self.clock.monotonic() + self.heartbeat_interval_s
            lease_end = self.lease.deadline() if self.owned else float("inf")
            wait = min(next_beat, lease_end) - self.clock.monotonic()
            self._wake.clear()
            if self._answer is None and wait > 0:
                try:
                    await self.clock.wait_for(self._wake.wait(), wait)
                except TimeoutError:
                    pass

    async def _send(self, epoch: int) -> None:
        self._seq += 1
        doc: dict[str, Any] = {
            "seq": self._seq,
            "memberEpoch": epoch,
            "owned": by_topic(self.owned),
            "subscription": list(self.topics) if (self._send_subscription or epoch == JOIN_EPOCH) else None,
            "rebalanceTimeoutMs": int(self.rebalance_timeout_s * 1000),
        }
        if epoch != LEAVE_EPOCH:
            self.lease.sending(self._seq, self.clock.monotonic(), self.owned)
        path = self.paths.heartbeat(self.consumer_id)
        try:
            await self.store.set(path, _dump(doc))
        except NoNodeError:
            await self.store.create(path, _dump(doc), ephemeral=True)
        self._send_subscription = False

    # ------------------------------------------------------------------ reconciliation

    def _apply(self, doc: Mapping[str, Any]) -> bool:
        """Act on an answer; True when what we own changed."""
        seq = int(doc["seq"])
        self._answered_seq = max(self._answered_seq, seq)
        error = doc.get("error")
        if error is not None:
            logger.info("%s: %s; dropping everything and rejoining", self.consumer_id, error)
            self._rejoin(HeartbeatError(error).value)
            return True
        self.lease.session_timeout_s = (
            doc.get("sessionTimeoutMs", self.lease.session_timeout_s * 1000) / 1000.0
        )
        assignment = _tps(doc.get("assignment") or {})
        self.lease.answered(seq, assignment)
        self.member_epoch = int(doc["memberEpoch"])
        self.state = MemberState(doc["state"]) if doc.get("state") else None
        lose = self.owned - assignment
        gain = assignment - self.owned
        if not lose and not gain:
            return False
        record = RebalanceRecord(
            self.consumer_id,
            self.style,
            self._change_started or self.clock.monotonic(),
            self.clock.monotonic(),
        )
        self._drop(lose, "revoked")
        if self.owned and self.lease.expired(self.clock.monotonic()):  # the revocation hook took too long
            self._rejoin("lease ended while revoking")
            return True
        if gain:
            self.owned = self.owned | gain
            self.tracker.started(self.consumer_id, gain)
            if self.listener is not None:
                self.listener.before_starting_fetchers(
                    self.consumer_id, {self.consumer_id: sorted(self.owned)}
                )
        record.released, record.acquired, record.attempts, record.succeeded = len(lose), len(gain), 1, True
        record.finished_at = self.clock.monotonic()
        self.history.append(record)
        return True

    def _drop(self, partitions: Iterable[TopicPartition], why: str) -> None:
        """Stop using ``partitions``: now, or when the lease ended if that was earlier (a stalled process)."""
        lose = frozenset(partitions) & self.owned
        if not lose:
            return
        if self.listener is not None:
            by: dict[str, set[int]] = {}
            for tp in lose:
                by.setdefault(tp.topic, set()).add(tp.partition)
            self.listener.before_releasing_partitions(by)
        now = self.clock.monotonic()
        deadline = self.lease.deadline()
        self.tracker.stopped(self.consumer_id, lose, at=deadline if deadline < now else None)
        self.owned = self.owned - lose
        logger.debug("%s: dropped %d partitions (%s)", self.consumer_id, len(lose), why)

    def _check_lease(self, now: float) -> None:
        if self.owned and self.lease.expired(now):
            logger.info(
                "%s: lease ended; dropping %d partitions, rejoining", self.consumer_id, len(self.owned)
            )
            self._rejoin("lease ended")

    def _rejoin(self, why: str) -> None:
        self._drop(self.owned, why)
        self.member_epoch = JOIN_EPOCH
        self.state = None
        self.lease.reset()
        self._send_subscription = True
        self.rejoins += 1

    def __repr__(self) -> str:
        return (
            f"ReconcilingConsumer({self.consumer_id!r}, epoch={self.member_epoch}, owned={len(self.owned)})"
        )


def reconciling_style(
    topics: Sequence[str],
    *,
    rebalance_timeout_s: float = 5.0,
    session_timeout_s: float = 10.0,
    heartbeat_interval_s: float = 0.1,
    clock: Clock = SYSTEM_CLOCK,
) -> Callable[[MetadataStore, str, str, FetchTracker], ReconcilingConsumer]:
    """A ``make_consumer`` for :class:`~brokerlb.kafka.group.harness.GroupRun`."""

    def make(store: MetadataStore, group: str, cid: str, tracker: FetchTracker) -> ReconcilingConsumer:
        return ReconcilingConsumer(
            store,
            group,
            cid,
            topics,
            rebalance_timeout_s=rebalance_timeout_s,
            session_timeout_s=session_timeout_s,
            heartbeat_interval_s=heartbeat_interval_s,
            tracker=tracker,
            clock=clock,
        )

    return make
