"""What a broker does when the ownership records say so: the executor of its ownership machine.

The machine (:class:`~brokerlb.ownership.machine.OwnershipMachine`, fed by the
:class:`~brokerlb.broker.ownership.ownership_channel.OwnershipChannel`) decides; :class:`OwnerActions`
carries out what it decides for this broker, and offers the moves an operator or the leader asks
for. Every move is one transition of one record (or one transaction of several, with the ring):

* **serving** -- the one place where this broker starts serving a bundle
  (:class:`~brokerlb.ownership.events.StartServing`: its record says Owned by it, under its
  live session) and the one place where it stops, for any reason
  (:class:`~brokerlb.ownership.events.StopServing`: an unload, a transfer, a split or merge,
  an ended session or a record that no longer names it). Both tell the data path
  (:class:`BundleServing`): starting takes the bundle's hash range in storage (the fence, before
  any client is served; a split's children keep their parent's). Stopping fences the bundle's
  topics for an unload or a transfer (the release step below closes them), closes them at once
  when the bundle is lost or merged (their clients get the protocol's close and look the topics up
  again), and leaves them open for a split (this broker serves the children; the topics go on);
* **take** -- an Assigning record naming this broker: the machine answers Owned under this
  broker's session, unless the broker is stopping (it takes nothing then; the leader's monitor
  reassigns the bundle after the in-flight timeout);
* **release** (the source of an unload or a transfer: Releasing naming it) -- a move carries no
  data: the topics live on the storage tier and the next owner opens them from there after
  fencing the bundle's range. An unload's clients are closed (they look the topic up again; the
  lookup waits for the move to settle), a transfer's stay connected, fenced, until the
  destination owns the bundle (:class:`~brokerlb.ownership.events.ClientsMoved` tells them where
  it went: CLOSE_PRODUCER/CLOSE_CONSUMER name it). Then the machine writes Free, or Assigning to
  the destination;
* **split commit** (Splitting naming this broker): the namespace's new bundles, the parent
  Deleted and the children Owned by this broker, in one transaction -- retried on a lost race of
  the bundles (7 times, 100 ms apart: Pulsar's ``BUNDLE_SPLIT_RETRY_LIMIT``); if it never commits,
  the leader's monitor rolls the split back after the in-flight timeout;
* **reassign** (the leader, for an orphan or a stuck state) -- the holder's registration is read
  from the store first (a record is an orphan only when its session really ended), then the
  leader's placement chooses a broker (Pulsar's ``selectBroker``, the dead one excluded by not
  being registered) and the override is written, conditional on the leader's epoch; no broker:
  Free;
* **moves asked for** -- :meth:`OwnerActions.unload` (Releasing, with a destination for a
  transfer) and :meth:`OwnerActions.split` (Splitting with the children the split algorithm
  chooses here, from the topics this broker serves) write one transition and wait for the move to
  settle; :meth:`OwnerActions.merge` (the leader) first transfers the parts to one broker, then
  commits the merge: the parts Deleted, the merged bundle Owned by that broker, and the ring, in
  one transaction.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from brokerlb.broker.data.topics import LOST, UNLOAD, CloseCause, TopicRegistry
from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
from brokerlb.broker.ownership.ownership_channel import OwnershipChannel
from brokerlb.config import ServiceConfig
from brokerlb.coordination import BrokerRegistry, BundleMetadata
from brokerlb.coordination.ownership_table import Guard
from brokerlb.coordination.retry import BUNDLE_UPDATE_RETRY
from brokerlb.errors import (
    BadVersionError,
    BrokerLBError,
    InvalidBundlesError,
    InvalidSplitError,
    InvalidTransitionError,
    NoBrokerAvailableError,
    RecordConflictError,
    ServiceUnavailableError,
    StaleBundleError,
)
from brokerlb.ownership import BundleState
from brokerlb.ownership.events import (
    ClientsMoved,
    CommitSplit,
    Reassign,
    ReassignFailed,
    Release,
    Released,
    StartServing,
    StopCause,
    StopServing,
    TableInstruction,
    Write,
)
from brokerlb.ring import (
    BundleSplitOption,
    NamespaceBundle,
    NamespaceBundles,
    TopicRates,
    parse_boundary,
    resolve_split_algorithm,
)

if TYPE_CHECKING:
    from brokerlb.broker.data.data_path import DataPath
    from brokerlb.broker.leader.leader_fence import LeaderFence

__all__ = [
    "OwnerActions",
    "BundleServing",
    "TopicsServing",
    "SplitOutcome",
    "parse_split_boundaries",
]

logger = logging.getLogger(__name__)

S = BundleState
#: ``place(bundle) -> broker``: the leader's placement (for overrides and merges).
Place = Callable[[NamespaceBundle], Awaitable[str]]


class BundleServing(Protocol):
    """The data path's side of serving a bundle: told when this broker starts and stops serving it."""

    async def start_serving(self, bundle: str) -> None: ...

    async def stop_serving(self, bundle: str, cause: StopCause) -> None: ...

    async def clients_moved(self, bundle: str, owner: str | None) -> None: ...


class TopicsServing:
    """:class:`BundleServing` over the topic registry and the data path: starting takes the bundle's
    hash range in storage (:meth:`~brokerlb.broker.data.data_path.DataPath.start_serving`: the fence,
    before any client is served); stopping fences the topics (unload, transfer: the release step
    closes them), closes them (lost, merge: their clients look them up again) or leaves them open
    (split: the children are served here); ``clients_moved`` closes a transfer's fenced topics,
    naming the new owner."""

    def __init__(
        self, topics: TopicRegistry, unload_timeout: float, data_path: DataPath | None = None
    ) -> None:
        self.topics = topics
        self.unload_timeout = unload_timeout
        self.data_path = data_path

    async def start_serving(self, bundle: str) -> None:
        if self.data_path is not None:
            await self.data_path.start_serving(bundle)

    async def stop_serving(self, bundle: str, cause: StopCause) -> None:
        if cause.kind in ("unload", "transfer"):
            self.topics.fence_bundle(bundle)
        elif cause.kind == "lost":
            await self.topics.close_bundle(bundle, self.unload_timeout, LOST)
        elif cause.kind == "merge":
            await self.topics.close_bundle(bundle, self.unload_timeout, UNLOAD)

    async def clients_moved(self, bundle: str, owner: str | None) -> None:
        cause = CloseCause.transfer(owner) if owner else UNLOAD
        await self.topics.close_bundle(bundle, self.unload_timeout, cause)

    async def close_unloaded(self, bundle: str) -> None:
        await self.topics.close_bundle(bundle, self.unload_timeout, UNLOAD)


@dataclass(frozen=True, slots=True)
class SplitOutcome:
    parent: str
    children: tuple[str, ...]
    boundaries: tuple[int, ...]

    @property
    def split(self) -> bool:
        return bool(self.children)


def parse_split_boundaries(body: object) -> list[int]:
    """The split body: a JSON list of boundaries (numbers, or ``"0x..."`` strings)."""
    if body is None:
        return []
    if not isinstance(body, list):
        raise InvalidSplitError(f"Split boundaries must be a JSON list of positions, got {body!r}")
    try:
        return [parse_boundary(b) for b in body]
    except InvalidBundlesError as exc:
        raise InvalidSplitError(f"Split bundle failed due to invalid request: {exc}") from exc


class OwnerActions:
    """The executor of this broker's ownership machine, and the moves asked of it (module docstring)."""

    def __init__(
        self,
        conf: ServiceConfig,
        *,
        channel: OwnershipChannel,
        metadata: BundleMetadata,
        bundles: NamespaceBundlesCache,
        topics: TopicRegistry,
        registry: BrokerRegistry,
        serving: BundleServing,
        place: Place,
        fence: LeaderFence,
        report_changed: Callable[[], None],
        closing: Callable[[], bool] = lambda: False,
    ) -> None:
        self.conf = conf
        self.channel = channel
        self.broker_id = channel.broker_id
        self.metadata = metadata
        self.bundles = bundles
        self.topics = topics
        self.registry = registry
        self.serving = serving
        self._place = place
        #: the seam of the leader's writes: their condition on its epoch
        self.fence = fence
        self._report_changed = report_changed
        self._closing = closing
        self._background: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ the executor
    async def execute(self, instruction: TableInstruction) -> None:
        """Carry out one instruction of this broker's machine (module docstring)."""
        if isinstance(instruction, Write):
            await self._write(instruction)
        elif isinstance(instruction, StartServing):
            await self._start_serving(instruction.bundle)
        elif isinstance(instruction, StopServing):
            await self._stop_serving(instruction.bundle, instruction.cause)
        elif isinstance(instruction, ClientsMoved):
            await self.serving.clients_moved(instruction.bundle, instruction.owner)
        elif isinstance(instruction, Release):
            await self._release(instruction)
        elif isinstance(instruction, CommitSplit):
            await self._commit_split(instruction)
        elif isinstance(instruction, Reassign):
            await self._reassign(instruction)

    async def _write(self, w: Write) -> None:
        record = w.record
        taking = (
            record is not None
            and record.state is S.OWNED
            and record.dst == self.broker_id
            and not record.force
        )
        if taking:
            if self._closing():
                logger.info("%s is stopping: not taking %s", self.broker_id, w.bundle)
                return
            assert record is not None
            if record.dst_session != self.channel.session:
                return  # decided under an earlier session
            await self.bundles.get(w.bundle.rpartition("/")[0])  # ready to group its topics before taking it
        guards = self.fence.current() if w.by == "leader" else []
        await self.channel.write(w, guards)

    async def _start_serving(self, bundle: str) -> None:
        """The one place where this broker starts serving a bundle."""
        await self.bundles.get(bundle.rpartition("/")[0])  # its topics are grouped by the ring from now on
        await self.serving.start_serving(bundle)
        self.channel.mark_started(bundle)
        logger.info("%s serves %s", self.broker_id, bundle)
        self._report_changed()

    async def _stop_serving(self, bundle: str, cause: StopCause) -> None:
        """The one place where this broker stops serving a bundle, for any reason."""
        await self.serving.stop_serving(bundle, cause)
        logger.info("%s stopped serving %s (%s)", self.broker_id, bundle, cause)
        self._report_changed()

    async def _release(self, i: Release) -> None:
        """The source's release step (module docstring): a move carries no data; the unload's
        clients are closed (a transfer's are told the destination once it owns the bundle), then
        the machine writes the next record."""
        if i.transfer_to is None and isinstance(self.serving, TopicsServing):
            await self.serving.close_unloaded(i.bundle)
        self.channel.feed(Released(bundle=i.bundle, version=i.version, at_ms=self.channel.now_ms()))

    async def _commit_split(self, i: CommitSplit) -> None:
        parent = NamespaceBundle.parse(i.bundle)
        children = [NamespaceBundle.parse(c) for c in i.children]
        boundaries = [c.lower for c in children[1:]]

        def split(current: NamespaceBundles) -> NamespaceBundles:
            return current.split(parent, boundaries)

        await self._commit(
            parent.namespace,
            split,
            lambda: self.channel.machine.split_commit(i.bundle, at_ms=self.channel.now_ms()),
        )
        logger.info("Split %s into %s", parent, ", ".join(c.range for c in children))

    async def _commit(
        self,
        namespace: object,
        change: Callable[[NamespaceBundles], NamespaceBundles],
        writes: Callable[[], list[Write]],
        guards: Sequence[Guard] = (),
    ) -> None:
        """The records and the ring in one transaction; a lost race of the ring is tried again."""
        ns = str(namespace)
        attempts = BUNDLE_UPDATE_RETRY.max_retries + 1
        for attempt in range(attempts):
            records = writes()  # InvalidTransitionError: the record moved on
            op, ring = await self.metadata.ring_change(ns, change)
            try:
                await self.channel.table.commit(records, ops=[op], guards=guards)
                self.metadata.committed(ring)
                break
            except BadVersionError:
                if attempt == attempts - 1:
                    raise
                await self.channel.clock.sleep(BUNDLE_UPDATE_RETRY.delay_s)
        await self.metadata.sync_global(ns)
        await self.bundles.refresh(ns)
        self._report_changed()

    async def _reassign(self, i: Reassign) -> None:
        """The leader overrides an orphan or a stuck record (module docstring)."""
        machine = self.channel.machine
        record = machine.record(i.bundle)
        if record is None or record.version != i.version:
            return
        try:
            if i.exclude is not None:
                holder_session = record.holder()[1]
                live = await self.registry.read_session(i.exclude)
                if live is not None and (holder_session is None or live == holder_session):
                    logger.info(
                        "%s is not an orphan: %s is registered under its session", i.bundle, i.exclude
                    )
                    self.channel.feed(ReassignFailed(bundle=i.bundle, at_ms=self.channel.now_ms()))
                    return
            target = i.keep_on
            if target is None:
                try:
                    target = await self._place(NamespaceBundle.parse(i.bundle))
                except (NoBrokerAvailableError, ServiceUnavailableError) as exc:
                    logger.warning("No broker for %s (%s): freeing it", i.bundle, exc)
            session = None if target is None else await self.registry.read_session(target)
            if target is not None and session is None:
                target = None
            w = machine.override(
                i.bundle, target, session, version=i.version, at_ms=self.channel.now_ms(), reason=i.reason
            )
            logger.warning("Leader overrides %s: %s -> %s (%s)", i.bundle, record, w.record, i.reason)
            await self.channel.write(w, self.fence.current())
        except (BrokerLBError, InvalidTransitionError) as exc:
            logger.warning("Could not reassign %s: %s", i.bundle, exc)
            self.channel.feed(ReassignFailed(bundle=i.bundle, at_ms=self.channel.now_ms()))

    # ------------------------------------------------------------------ moves asked for
    def owns(self, bundle: NamespaceBundle | str) -> bool:
        """The record says this broker owns the bundle, under its session now."""
        record = self.channel.record(bundle)
        return (
            record is not None
            and record.state is S.OWNED
            and record.dst == self.broker_id
            and record.dst_session is not None
            and record.dst_session == self.channel.session
        )

    async def unload(
        self,
        bundle: NamespaceBundle,
        destination: str | None = None,
        *,
        leader_epoch: int | None = None,
        by: str = "admin",
        reason: str = "",
    ) -> bool:
        """Unload ``bundle`` (a transfer to ``destination`` when given): one transition, Owned →
        Releasing, then wait until the move settled. ``False`` when the bundle has no owner."""
        name = str(bundle)
        record = self.channel.record(name)
        if record is None or record.state is not S.OWNED:
            if record is not None and record.state in (S.RELEASING, S.ASSIGNING):
                await self.channel.settled(name)
                return True
            return False
        started = self.channel.clock.monotonic()
        try:
            written = await self.channel.unload(
                name, destination, by=by, reason=reason, guards=self.fence.guards(leader_epoch)
            )
        except RecordConflictError:
            await self.channel.changed(name, 1.0)
            return await self.unload(bundle, destination, leader_epoch=leader_epoch, by=by, reason=reason)
        except InvalidTransitionError as exc:
            raise ServiceUnavailableError(f"{exc}; try again") from exc
        await self._wait_past(name, written.version)
        owner = self.channel.owner(name)
        logger.info(
            "Unloaded %s in %.0f ms: %s",
            name,
            (self.channel.clock.monotonic() - started) * 1e3,
            f"now owned by {owner.broker}" if owner.broker else "clients look it up again",
        )
        return True

    async def split(
        self,
        bundle: NamespaceBundle,
        *,
        algorithm: str | None,
        positions: Sequence[int] = (),
        unload: bool = False,
        leader_epoch: int | None = None,
    ) -> SplitOutcome:
        """Split a bundle this broker owns: the children from the split algorithm on its topics here,
        one transition (Splitting; conditional on ``leader_epoch`` when the leader asked), and the
        commit (module docstring); waits for it."""
        algo = resolve_split_algorithm(algorithm, self.conf.defaultNamespaceBundleSplitAlgorithm)
        name = str(bundle)
        if not self.owns(bundle):
            raise StaleBundleError(
                f"Bundle {bundle} is not owned by this broker (unloaded, transferred or split meanwhile); "
                "look it up again"
            )
        boundaries = algo.split_boundaries(self._split_option(bundle, positions)) or []
        if not boundaries:
            logger.info("No valid boundary found to split %s with %s", bundle, algo.name)
            return SplitOutcome(name, (), ())
        children = _children(bundle, boundaries)
        try:
            written = await self.channel.split(
                name,
                children,
                by="leader" if leader_epoch is not None else self.broker_id,
                reason=f"split with {algo.name}",
                guards=self.fence.guards(leader_epoch),
            )
        except (InvalidTransitionError, RecordConflictError) as exc:
            raise StaleBundleError(f"{exc}; look it up again") from exc
        await self._wait_past(name, written.version)
        record = self.channel.record(name)
        if record is None or record.state is not S.DELETED:
            raise ServiceUnavailableError(f"The split of {bundle} did not commit ({record}); try again")
        await self.metadata.sync_global(bundle.namespace)  # (the commit does too: the caller reads it back)
        await self.bundles.refresh(bundle.namespace)
        if unload:
            self._spawn(self._unload_all([NamespaceBundle.parse(c) for c in children]))
        return SplitOutcome(name, children, tuple(boundaries))

    async def merge(
        self,
        parts: Sequence[NamespaceBundle],
        merged: NamespaceBundle,
        broker: str,
        *,
        leader_epoch: int | None,
    ) -> None:
        """(The leader) merge adjacent ``parts`` into ``merged`` on ``broker``: each part is moved
        there (a transfer, or an assignment of an unowned part), then the parts Deleted, the merged
        bundle Owned by ``broker`` and the ring, in one transaction -- each write conditional on
        ``leader_epoch`` (the epoch the merge was decided under)."""
        guards = self.fence.guards(leader_epoch)
        for part in parts:
            await self._bring(part, broker, guards)
        names = [str(p) for p in parts]

        def merge(current: NamespaceBundles) -> NamespaceBundles:
            return current.merge(parts)

        def writes() -> list[Write]:
            return self.channel.machine.merge_commit(names, str(merged), at_ms=self.channel.now_ms())

        try:
            await self._commit(merged.namespace, merge, writes, guards)
        except InvalidTransitionError as exc:
            raise ServiceUnavailableError(f"Cannot merge {', '.join(names)}: {exc}") from exc

    async def _bring(self, part: NamespaceBundle, broker: str, guards: Sequence[Guard]) -> None:
        name = str(part)
        for _attempt in range(3):
            view = await self.channel.settled(name)
            if view.broker == broker:
                return
            try:
                if view.broker is None:
                    await self.channel.assign(name, broker, by="leader", reason="merge", guards=guards)
                else:
                    await self.channel.unload(
                        name, broker, by="leader", reason=f"merge on {broker}", guards=guards
                    )
            except (RecordConflictError, InvalidTransitionError):
                await self.channel.changed(name, 1.0)
                continue
            await self._wait_past(name, (self.channel.record(name) or _NONE).version)
            view = await self.channel.settled(name)
            if view.broker == broker:
                return
        raise ServiceUnavailableError(f"Could not move {name} to {broker} for the merge; try again")

    async def _wait_past(self, name: str, version: int) -> None:
        """Wait until the record moved past ``version`` and out of flight (bounded)."""
        limit = self.channel.machine.in_flight_timeout_ms / 1000
        deadline = self.channel.clock.monotonic() + limit
        while True:
            record = self.channel.record(name)
            if record is None or (record.version > version and record.state in (S.OWNED, S.FREE, S.DELETED)):
                return
            remaining = deadline - self.channel.clock.monotonic()
            if remaining <= 0:
                return
            await self.channel.changed(name, min(remaining, 1.0))

    def _split_option(self, bundle: NamespaceBundle, positions: Sequence[int]) -> BundleSplitOption:
        topics = self.topics.topics_in(str(bundle))
        rates = {}
        for topic in topics:
            stats = self.topics.stats_of(topic)
            if stats is not None:
                rates[topic] = TopicRates(
                    stats.msg_rate_in + stats.msg_rate_out, stats.msg_throughput_in + stats.msg_throughput_out
                )
        return BundleSplitOption(
            bundle,
            topics=topics,
            positions=list(positions),
            topic_rates=rates,
            max_msg_rate=self.conf.loadBalancerNamespaceBundleMaxMsgRate,
            max_bandwidth_mbytes=self.conf.loadBalancerNamespaceBundleMaxBandwidthMbytes,
            flow_or_qps_difference_threshold_percentage=self.conf.flowOrQpsDifferenceThresholdPercentage,
        )

    async def _unload_all(self, bundles: Sequence[NamespaceBundle]) -> None:
        for child in bundles:
            try:
                await self.unload(child, reason="split children unloaded")
            except BrokerLBError as exc:
                logger.warning("Could not unload split child %s: %s", child, exc)

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def close(self) -> None:
        """Wait for background work (children unloads) to finish."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)


class _NoRecord:
    version = 0


_NONE = _NoRecord()


def _children(bundle: NamespaceBundle, boundaries: Sequence[int]) -> tuple[str, ...]:
    """The child bundles' names of a split at ``boundaries`` (inside the bundle's range)."""
    edges = [bundle.lower, *sorted(boundaries), bundle.upper]
    return tuple(
        str(NamespaceBundle(bundle.namespace, lo, hi)) for lo, hi in zip(edges, edges[1:], strict=False)
    )
