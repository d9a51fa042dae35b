"""Leader election on ``/loadbalance/leader`` that knows when leadership is lost.

The protocol is Pulsar's ``LeaderElectionImpl``: the leader is whoever holds the
ephemeral node, whose value is ``{"brokerId", "serviceUrl"}``. A candidate reads
the node; if absent it creates it; if present with its own value from an earlier
session it deletes that stale node and tries again; otherwise it follows and
watches the node, and when the node disappears everyone tries again.

Where brokerlb goes further than Pulsar (whose leader keeps acting after losing its
session until ZooKeeper tells it so): **leadership is a lease**.

* Each time leadership is gained the *epoch* grows and a :class:`LeaderLease` is
  issued. Leader work takes the lease and calls :meth:`LeaderLease.check` before
  every action; tasks started with :meth:`LeaderElection.run_while_leader` are
  cancelled the moment the lease ends.
* The lease ends at once on SUSPENDED (the connection dropped: another broker may
  be elected before we hear of it), on LOST, when the leader node is deleted or
  taken, and -- the case a paused process (GC pause, SIGSTOP) needs -- when its
  **deadline** passes. While leading, a heartbeat confirms the node every
  ``session_timeout × heartbeat_fraction``; a confirmation obtained by a request
  sent at time *t* proves the server heard us at or after *t*, so our session (and
  node) cannot expire before *t* + session timeout. The deadline is
  *t* + ``session_timeout × lease_fraction`` (default 0.8). A process frozen past
  its session wakes with an expired lease: ``check()`` fails before it can act.
* Every loss is logged at WARNING: ``Lost leadership of /loadbalance/leader
  (epoch N): <reason>; leader work stopped``.

After a loss the candidate stays in the race: when the session is CONNECTED again
it re-runs the election (and becomes leader again if its node is still there).

Time is the store's :class:`~brokerlb.clock.Clock` unless another is given: lease
deadlines, heartbeats, the heartbeat's timeout and the retry delay all run on it,
so on the embedded store with a :class:`~brokerlb.clock.ManualClock` a test moves
through a lease step by step.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from brokerlb.clock import Clock
from brokerlb.coordination.ownership_table import Guard
from brokerlb.coordination.paths import LEADER_PATH
from brokerlb.coordination.records import LeaderBroker
from brokerlb.coordination.store import (
    CheckOp,
    CreateOp,
    MetadataStore,
    Node,
    Op,
    SessionEvent,
    SessionState,
    SetOp,
)
from brokerlb.coordination.watches import DataWatch
from brokerlb.errors import (
    BadVersionError,
    CorruptMetadataError,
    InvalidConfigError,
    LeadershipLostError,
    MetadataStoreError,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
)

__all__ = [
    "LeaderElection",
    "LeaderLease",
    "LeadershipChange",
    "ElectionState",
    "current_fencing_token",
    "epoch_path_of",
    "fenced_ops",
    "leader_guard",
]

logger = logging.getLogger(__name__)


class ElectionState(enum.Enum):
    STOPPED = "stopped"
    #: Waiting to (re)run the election: not connected, or a try is in progress.
    ELECTING = "electing"
    LEADING = "leading"
    FOLLOWING = "following"


@dataclass(frozen=True, slots=True)
class LeadershipChange:
    """Delivered to listeners when this candidate gains or loses leadership."""

    leading: bool
    epoch: int
    reason: str
    #: The cluster-wide leader epoch of this leadership (:attr:`LeaderLease.fencing_token`).
    fencing_token: int | None = None


class LeaderLease:
    """Proof of leadership for one epoch. Check it before every leader action."""

    def __init__(self, election: LeaderElection, epoch: int, fencing_token: int | None = None) -> None:
        self.election = election
        self.epoch = epoch
        #: The cluster-wide leader epoch: the version of the epoch node (``<path>-epoch``), written in
        #: the same transaction that created the leader node. Every new leadership has a higher one,
        #: so a write conditional on it (:meth:`LeaderElection.fenced`) or a command carrying it
        #: (checked with :func:`current_fencing_token`) is refused once another leader was elected --
        #: even from a process that resumes mid-task after losing its session.
        self.fencing_token = fencing_token
        #: Set when this epoch's leadership ends.
        self.lost = asyncio.Event()
        self.lost_reason: str | None = None

    @property
    def valid(self) -> bool:
        return self.election._lease_valid(self)

    def check(self) -> None:
        """Raise :class:`LeadershipLostError` unless this lease is still valid."""
        if not self.valid:
            self.election._expire_if_overdue()
            raise LeadershipLostError(
                f"Leadership epoch {self.epoch} of {self.election.path} has ended: "
                f"{self.lost_reason or self.election._lease_problem()}"
            )

    def __repr__(self) -> str:
        return f"LeaderLease(epoch={self.epoch}, valid={self.valid})"


LeaderWork = Callable[[LeaderLease], Awaitable[None]]


class LeaderElection:
    """Run for leader as ``candidate`` on ``path`` (Pulsar: ``/loadbalance/leader``)."""

    def __init__(
        self,
        store: MetadataStore,
        candidate: LeaderBroker,
        *,
        path: str = LEADER_PATH,
        clock: Clock | None = None,
        lease_fraction: float = 0.8,
        heartbeat_fraction: float = 0.25,
        retry_delay: float = 5.0,
    ) -> None:
        if not 0 < heartbeat_fraction < lease_fraction <= 1.0:
            raise InvalidConfigError(
                "lease_fraction", lease_fraction, "need 0 < heartbeat_fraction < lease_fraction <= 1"
            )
        self.store = store
        self.candidate = candidate
        self.path = path
        self.epoch_path = epoch_path_of(path)
        self.clock = clock if clock is not None else store.clock
        self._value = candidate.to_bytes()
        self._lease_span = store.session_timeout * lease_fraction
        self._heartbeat_every = store.session_timeout * heartbeat_fraction
        self._retry_delay = retry_delay
        self._state = ElectionState.STOPPED
        self._epoch = 0
        self._last_token: int | None = None
        self._lease: LeaderLease | None = None
        self._deadline = 0.0
        self._node_version = -1
        self._leader: LeaderBroker | None = None
        self._listeners: list[Callable[[LeadershipChange], None]] = []
        self._workers: list[tuple[LeaderWork, str]] = []
        self._worker_tasks: set[asyncio.Task[None]] = set()
        self._mutex = asyncio.Lock()
        self._watch: DataWatch | None = None
        self._remove_session_listener: Callable[[], None] | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._elect_task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        self._stale_rule = True

    # ------------------------------------------------------------------ views
    @property
    def state(self) -> ElectionState:
        return self._state

    @property
    def epoch(self) -> int:
        """Number of times this candidate has gained leadership."""
        return self._epoch

    @property
    def last_fencing_token(self) -> int | None:
        """The fencing token of this candidate's latest leadership, kept after it ends: work decided
        under it carries it, so an owner can refuse that work once another leader was elected."""
        return self._last_token

    @property
    def is_leader(self) -> bool:
        """Leading with a valid lease (false at once when the session is in doubt)."""
        return self._lease is not None and self._lease.valid

    @property
    def lease(self) -> LeaderLease | None:
        """The current lease while leading, else ``None``."""
        return self._lease if self.is_leader else None

    @property
    def leader(self) -> LeaderBroker | None:
        """The current leader as last seen by the watch (a memory read)."""
        return self._leader

    async def get_leader(self) -> LeaderBroker | None:
        """The current leader, read from the store."""
        node = await self.store.get_or_none(self.path)
        return None if node is None else LeaderBroker.from_bytes(node.data, self.path)

    def add_listener(self, listener: Callable[[LeadershipChange], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    # ------------------------------------------------------------------ life cycle
    async def start(self) -> LeaderElection:
        """Join the election; returns after the first try (leading or following)."""
        if self._state is not ElectionState.STOPPED:
            return self
        self._state = ElectionState.ELECTING
        self._remove_session_listener = self.store.add_session_listener(self._on_session)
        self._watch = self.store.watch_data(self.path, self._on_leader_node)
        await self._watch.start()
        await self._elect_now()
        return self

    async def close(self) -> None:
        """Leave the election; a leader deletes its node so another broker takes over at once."""
        if self._state is ElectionState.STOPPED:
            return
        was_leading = self._state is ElectionState.LEADING
        self._stop("election closed")
        if was_leading and self.store.connected:
            with contextlib.suppress(MetadataStoreError):
                node = await self.store.get_or_none(self.path)
                if node is not None and self.store.owns(node.stat):
                    await self.store.delete(self.path, version=node.stat.version)

    def abandon(self) -> None:
        """Stop all activity without touching the store (the process is going away)."""
        self._stop("abandoned")

    def _stop(self, why: str) -> None:
        """Lose leadership (``why``), stop the election and heartbeat tasks, the watch and the session listener."""
        self._lose(why, on_purpose=True)  # closed or abandoned by its broker: nothing wrong
        self._state = ElectionState.STOPPED
        for task in (self._elect_task, self._heartbeat):
            if task is not None:
                task.cancel()
        if self._watch is not None:
            self._watch.cancel()
        if self._remove_session_listener is not None:
            self._remove_session_listener()

    async def wait_for_leadership(self, timeout: float | None = None) -> LeaderLease:
        """Wait until this candidate leads (up to ``timeout`` s on the clock); returns the lease."""

        async def wait() -> LeaderLease:
            while (lease := self.lease) is None:
                self._changed.clear()
                await self._changed.wait()
            return lease

        try:
            return await self.clock.wait_for(wait(), timeout)
        except TimeoutError:
            raise OperationTimeoutError(
                f"{self.candidate.broker_id} did not become leader within {timeout} s"
            ) from None

    def run_while_leader(self, work: LeaderWork, name: str = "leader work") -> Callable[[], None]:
        """Run ``work(lease)`` in a task each time leadership is gained; cancel it when lost.

        Returns a function that stops running this work.
        """
        entry = (work, name)
        self._workers.append(entry)
        if self.is_leader and self._lease is not None:
            self._start_worker(work, name, self._lease)
        return lambda: self._workers.remove(entry) if entry in self._workers else None

    # ------------------------------------------------------------------ lease
    def _lease_valid(self, lease: LeaderLease) -> bool:
        return (
            lease is self._lease
            and self._state is ElectionState.LEADING
            and not lease.lost.is_set()
            and self.clock.monotonic() < self._deadline
        )

    def _lease_problem(self) -> str:
        if self._state is not ElectionState.LEADING:
            return f"not leading ({self._state.value})"
        overdue = self.clock.monotonic() - self._deadline
        return f"lease expired {overdue:.3f} s ago: no confirmation from the metadata store"

    def _expire_if_overdue(self) -> None:
        if self._state is ElectionState.LEADING and self.clock.monotonic() >= self._deadline:
            self._lose(self._lease_problem())
            # The session may well be alive (a starved event loop, a slow store): run the election
            # again; it re-confirms leadership if the node is still ours, else follows the new leader.
            self._schedule_election(0.0)

    # ------------------------------------------------------------------ events
    def _on_session(self, event: SessionEvent) -> None:
        if self._state is ElectionState.STOPPED:
            return
        if event.state is SessionState.SUSPENDED:
            self._lose("metadata session suspended (connection lost)")
        elif event.state is SessionState.LOST:
            self._lose("metadata session lost (expired)")
        elif event.state is SessionState.CONNECTED:
            self._schedule_election(0.0)

    def _on_leader_node(self, node: Node | None) -> None:
        if self._state is ElectionState.STOPPED:
            return
        if node is None:
            self._leader = None
            if self._state is ElectionState.LEADING:
                self._lose("leader node deleted")
            self._schedule_election(0.0)
            return
        try:
            self._leader = LeaderBroker.from_bytes(node.data, self.path)
        except CorruptMetadataError as exc:
            logger.error("Unreadable leader node: %s", exc)
            self._leader = None
        if self._state is ElectionState.LEADING and not self.store.owns(node.stat):
            self._lose(f"leader node now held by session 0x{node.stat.ephemeral_owner or 0:x}")
            self._schedule_election(0.0)
        self._changed.set()

    # ------------------------------------------------------------------ the election
    def _schedule_election(self, delay: float) -> None:
        if self._elect_task is not None and not self._elect_task.done():
            return
        self._elect_task = asyncio.create_task(self._elect_after(delay), name=f"elect {self.path}")

    async def _elect_after(self, delay: float) -> None:
        if delay:
            await self.clock.sleep(delay)
        await self._elect_now()

    async def _elect_now(self) -> None:
        async with self._mutex:
            if self._state is ElectionState.STOPPED or not self.store.connected:
                return
            try:
                await self._try_elect()
                self._stale_rule = False
            except MetadataStoreError as exc:
                logger.warning(
                    "Leader election on %s failed (%s); retrying in %.1f s", self.path, exc, self._retry_delay
                )
                self._retry_later()

    def _retry_later(self) -> None:
        async def retry() -> None:
            await self.clock.sleep(self._retry_delay)
            await self._elect_now()

        self._elect_task = asyncio.create_task(retry(), name=f"elect retry {self.path}")

    async def _try_elect(self) -> None:
        stale_deleted = False
        for _attempt in range(8):
            if self._state is ElectionState.LEADING:
                return
            sent_at = self.clock.monotonic()
            node = await self.store.get_or_none(self.path)
            if node is None:
                await self.store.ensure_path(self.epoch_path)
                try:
                    # the leader node and the next leader epoch in one transaction: no instant at which
                    # a new leader exists while the previous epoch is still current
                    results = await self.store.multi(
                        [
                            CreateOp(self.path, self._value, ephemeral=True),
                            SetOp(self.epoch_path, self._value),
                        ]
                    )
                except NodeExistsError:
                    continue  # another candidate was faster: read who
                self._become_leader(sent_at, version=0, token=results[1].version)
                return
            existing = _leader_or_none(node, self.path)
            mine = self.store.owns(node.stat)
            if existing == self.candidate and mine:
                # still ours (a lease that lapsed inside the session): the epoch written with our node
                stat = await self.store.exists(self.epoch_path)
                self._become_leader(sent_at, version=node.stat.version, token=stat.version if stat else None)
                return
            stale = existing == self.candidate and self._stale_rule and not stale_deleted
            if stale or mine:
                # Our value from an earlier process (its session may be expiring), or our session with
                # another value: delete it and try again (Pulsar's rule). A stale node is deleted at most
                # once per try: if our value is back under another session, that session is alive -- a
                # twin with our identity (a misconfiguration) -- and we follow it rather than fight it,
                # which would take leadership away from both over and over. After the first election our
                # own earlier sessions' nodes are gone, so our value from another session is a live twin.
                stale_deleted = stale_deleted or stale
                with contextlib.suppress(NoNodeError, BadVersionError):
                    await self.store.delete(self.path, version=node.stat.version)
                continue
            self._follow(existing)
            return
        raise BadVersionError("leader node kept changing during the election", self.path)

    def _follow(self, leader: LeaderBroker | None) -> None:
        self._leader = leader
        if self._state is not ElectionState.FOLLOWING:
            logger.info(
                "%s follows leader %s on %s",
                self.candidate.broker_id,
                leader.broker_id if leader else "?",
                self.path,
            )
        self._state = ElectionState.FOLLOWING
        self._changed.set()

    def _become_leader(self, confirmed_at: float, version: int, token: int | None = None) -> None:
        self._epoch += 1
        self._state = ElectionState.LEADING
        self._node_version = version
        self._deadline = confirmed_at + self._lease_span
        self._leader = self.candidate
        self._lease = LeaderLease(self, self._epoch, token)
        self._last_token = token
        logger.info(
            "%s gained leadership of %s (epoch %d, leader epoch %s)",
            self.candidate.broker_id,
            self.path,
            self._epoch,
            token,
        )
        self._heartbeat = asyncio.create_task(
            self._heartbeat_loop(self._lease), name=f"leader heartbeat {self.path}"
        )
        self._notify(LeadershipChange(True, self._epoch, "elected", token))
        for work, name in list(self._workers):
            self._start_worker(work, name, self._lease)

    def _lose(self, reason: str, *, on_purpose: bool = False) -> None:
        lease = self._lease
        if self._state is ElectionState.LEADING:
            self._state = ElectionState.ELECTING
        if lease is None or lease.lost.is_set():
            return
        lease.lost_reason = reason
        lease.lost.set()
        self._lease = None
        heartbeat, self._heartbeat = self._heartbeat, None
        if heartbeat is not None and heartbeat is not asyncio.current_task():
            heartbeat.cancel()
        for task in list(self._worker_tasks):
            task.cancel()
        logger.log(
            logging.INFO if on_purpose else logging.WARNING,
            "%s lost leadership of %s (epoch %d): %s; leader work stopped",
            self.candidate.broker_id,
            self.path,
            lease.epoch,
            reason,
        )
        self._notify(LeadershipChange(False, lease.epoch, reason, lease.fencing_token))

    async def _heartbeat_loop(self, lease: LeaderLease) -> None:
        while not lease.lost.is_set():
            wait = min(self._heartbeat_every, max(0.0, self._deadline - self.clock.monotonic()))
            await self.clock.sleep(wait)
            if lease.lost.is_set():
                return
            self._expire_if_overdue()
            if lease.lost.is_set():
                return
            sent_at = self.clock.monotonic()
            try:  # never wait past the deadline: the lease must end on time even if the store hangs
                stat = await self.clock.wait_for(
                    self.store.exists(self.path), max(0.001, self._deadline - sent_at)
                )
            except (MetadataStoreError, TimeoutError) as exc:
                logger.debug("Leader heartbeat on %s failed: %r", self.path, exc)
                continue
            if lease.lost.is_set():
                return
            if stat is None or not self.store.owns(stat):
                self._lose("leader node gone or held by another session")
                self._schedule_election(0.0)
                return
            self._deadline = max(self._deadline, sent_at + self._lease_span)

    def _start_worker(self, work: LeaderWork, name: str, lease: LeaderLease) -> None:
        async def run() -> None:
            try:
                await work(lease)
            except LeadershipLostError as exc:
                logger.info("%s stopped: %s", name, exc)

        task = asyncio.create_task(run(), name=f"{name} (epoch {lease.epoch})")
        self._worker_tasks.add(task)
        task.add_done_callback(self._worker_done)

    def _worker_done(self, task: asyncio.Task[None]) -> None:
        self._worker_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("Leader task %s failed", task.get_name(), exc_info=task.exception())

    def _notify(self, change: LeadershipChange) -> None:
        self._changed.set()
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:
                logger.exception("Leadership listener failed on %s", change)


def epoch_path_of(leader_path: str) -> str:
    """The leader-epoch node beside a leader node: ``/loadbalance/leader`` → ``/loadbalance/leader-epoch``."""
    return f"{leader_path}-epoch"


async def current_fencing_token(store: MetadataStore, leader_path: str = LEADER_PATH) -> int | None:
    """The leader epoch now current in the store (``None`` before any leader was elected)."""
    stat = await store.exists(epoch_path_of(leader_path))
    return None if stat is None else stat.version


def fenced_ops(token: int, ops: list[Op], leader_path: str = LEADER_PATH) -> list[Op]:
    """``ops`` made conditional on leader epoch ``token``: run them with :meth:`MetadataStore.multi`; a
    leader superseded meanwhile gets :class:`~brokerlb.errors.BadVersionError` and nothing changes."""
    return [CheckOp(epoch_path_of(leader_path), token), *ops]


def leader_guard(token: int | None, leader_path: str = LEADER_PATH) -> list[Guard]:
    """The guard every leader write of an ownership record is conditional on: the leader epoch
    ``token`` still current (``None``: not a leader's write, no guard). A superseded leader's write
    changes nothing and raises :class:`~brokerlb.errors.LeadershipLostError`."""
    if token is None:
        return []

    def superseded() -> LeadershipLostError:
        return LeadershipLostError(f"Refused a write of a superseded leader (epoch {token})")

    return [Guard(CheckOp(epoch_path_of(leader_path), token), superseded)]


def _leader_or_none(node: Node, path: str) -> LeaderBroker | None:
    try:
        return LeaderBroker.from_bytes(node.data, path)
    except CorruptMetadataError as exc:
        logger.error("Unreadable leader node, treating it as another candidate's: %s", exc)
        return None
