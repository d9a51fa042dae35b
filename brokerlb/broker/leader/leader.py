"""What the leader broker does while it leads: the scheduler and executor around its one leader.

:class:`LeaderTasks` is the election's leader work: started each time this broker gains
leadership, cancelled the moment the lease ends (session suspended or lost, node taken, lease
deadline passed); every step first checks the lease. It schedules the steps of
:mod:`brokerlb.loadbalance.cycle` on the broker's clock -- the same steps, in the same order,
as the simulator:

* **refresh** -- on every change under ``/loadbalance/brokers`` (a report written, a broker
  joining or leaving; changes arriving together are folded into one refresh): the leader's
  ``updateAll`` (:meth:`LoadManager.refresh`), every report read is appended to the
  load-history sink (``brokerlbLoadHistoryDir``; JSON Lines per UTC day), then the modular
  split check (:func:`~brokerlb.loadbalance.cycle.split_cycle`; when it decided splits, the
  placement indexes the leader dropped are built again, off the next lookup's path);
* **shedding** -- every ``loadBalancerSheddingIntervalMinutes`` (changes not yet folded are
  folded first): :func:`~brokerlb.loadbalance.cycle.shedding_cycle`;
* **split** -- the extensible manager's split check, every ``loadBalancerSplitIntervalMinutes``;
* **persist** -- every ``loadBalancerResourceQuotaUpdateIntervalMinutes``: bundle data to
  ``/loadbalance/bundle-data/...`` and time averages to ``/loadbalance/broker-time-average/...``.

:class:`BrokerActions` carries the decisions out: a move (an unload, or a transfer with a
destination) is one transition of the bundle's ownership record written by the leader, conditional
on its epoch -- the owner acts on it; a split deletes the bundle's stored history (as Pulsar
does) and asks the owner to split at the boundaries the leader chose (else with the owner's
default algorithm), unloading the children when ``loadBalancerAutoUnloadSplitBundlesEnabled``
(not under brokerlb's placement: :func:`~brokerlb.loadbalance.registry.unloads_split_children`); a
merge moves the parts to one broker and commits (:meth:`OwnerActions.merge`).

Every step's :class:`~brokerlb.loadbalance.cycle.CycleRecord` is kept in a bounded log
(:attr:`LeaderTasks.records`) and handed to listeners (metrics, dashboard, balancer status).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from brokerlb.admin.client import AsyncAdminClient
from brokerlb.broker.leader.leader_fence import LeaderFence
from brokerlb.broker.leader.load_manager import LoadManager
from brokerlb.broker.ownership.owner_actions import OwnerActions
from brokerlb.broker.ownership.ownership_channel import OwnershipChannel
from brokerlb.clock import Clock
from brokerlb.config import ServiceConfig
from brokerlb.coordination import (
    BrokerRegistry,
    LeaderLease,
    LoadDataStore,
    RegistryEvent,
    RegistryEventKind,
)
from brokerlb.errors import BrokerLBError, LeadershipLostError
from brokerlb.loadbalance.cycle import CycleRecord, LeaderSchedule, shedding_cycle, split_cycle
from brokerlb.loadbalance.decisions import MergeDecision, SplitDecision
from brokerlb.loadbalance.leader import Move
from brokerlb.loadbalance.registry import unloads_split_children
from brokerlb.model import LocalBrokerData
from brokerlb.ring import SPECIFIED_POSITIONS_DIVIDE, NamespaceBundle

__all__ = ["BrokerActions", "HistorySink", "LeaderTasks"]

logger = logging.getLogger(__name__)


class MergeBundles(Protocol):
    """``merge_bundles(namespace, ranges, leader_epoch=)``: the leader's merge flow (parts moved to
    one broker, then parts, merged bundle and ring in one transaction, the parts' data deleted), each
    write conditional on ``leader_epoch``."""

    def __call__(self, namespace: str, ranges: list[str], *, leader_epoch: int | None) -> Awaitable[Any]: ...


#: Changes arriving within this many seconds are folded into one refresh.
REFRESH_DEBOUNCE = 0.05


class HistorySink(Protocol):
    """Where the leader appends the load reports it reads."""

    def report(self, now_ms: int, broker_id: str, data: LocalBrokerData | None) -> None: ...

    def close(self) -> None: ...


class BrokerActions:
    """The live broker's :class:`~brokerlb.loadbalance.cycle.ClusterActions` (module docstring)."""

    def __init__(
        self,
        conf: ServiceConfig,
        *,
        broker_id: str,
        clock: Clock,
        channel: OwnershipChannel,
        actions: OwnerActions,
        admin: AsyncAdminClient,
        registry: BrokerRegistry,
        load_data_store: LoadDataStore,
        merge_bundles: MergeBundles,
        fence: LeaderFence,
    ) -> None:
        self._conf = conf
        #: the seam of the leader's writes: the epoch each action is decided under (read once per
        #: action) and the outcome of the leader's own epoch-guarded writes (the ownership history)
        self._fence = fence
        self._merge_bundles = merge_bundles
        self._broker_id = broker_id
        self._clock = clock
        self._channel = channel
        self._actions = actions
        self._admin = admin
        self._registry = registry
        self._load_data = load_data_store
        #: (what, bundle, why) of the last actions that could not be carried out
        self.failures: collections.deque[tuple[str, str, str]] = collections.deque(maxlen=100)
        #: the last moves, splits and merges sent to owners (before their cycle's record exists:
        #: what the dashboard labels a move by when a lost lease cut the cycle short)
        self.started: collections.deque[Move | SplitDecision | MergeDecision] = collections.deque(maxlen=500)

    def now_ms(self) -> int:
        return self._clock.now_ms()

    async def move(self, moves: Sequence[Move]) -> list[bool]:
        return list(await asyncio.gather(*(self._move(m) for m in moves)))

    async def _move(self, move: Move) -> bool:
        """One transition of the bundle's record, written by the leader (conditional on its epoch):
        Owned → Releasing, with the destination of a transfer. The owner acts on it."""
        bundle = NamespaceBundle.parse(move.bundle)
        destination = move.destination if move.transfer else None
        self.started.append(move)
        token = self._fence.epoch()
        try:
            done = await self._fence.guarded(
                move.bundle,
                token,
                "unload",
                lambda: self._actions.unload(
                    bundle,
                    destination,
                    leader_epoch=token,
                    by="leader",
                    reason=f"{move.reason}: {move.detail}" if move.detail else str(move.reason),
                ),
            )
            if not done:
                raise BrokerLBError(f"{bundle} has no owner any more")
            return True
        except BrokerLBError as exc:
            self.failures.append(("unload", move.bundle, str(exc)))
            logger.warning("Leader could not unload %s: %s", move.bundle, exc)
            return False

    async def split(self, splits: Sequence[SplitDecision]) -> list[bool]:
        return [await self._split(d) for d in splits]

    async def merge(self, merges: Sequence[MergeDecision]) -> list[bool]:
        return [await self._merge(d) for d in merges]

    async def _merge(self, decision: MergeDecision) -> bool:
        """The merge's every write (the parts' moves, the commit, the parts' data deleted) is
        conditional on the epoch the merge was decided under, as a move's and a split's are."""
        self.started.append(decision)
        try:
            await self._merge_bundles(
                decision.namespace,
                [b.rpartition("/")[2] for b in decision.bundles],
                leader_epoch=self._fence.epoch(),
            )
            return True
        except BrokerLBError as exc:
            self.failures.append(("merge", decision.merged, str(exc)))
            logger.warning("Leader could not merge %s: %s", ", ".join(decision.bundles), exc)
            return False

    async def _split(self, decision: SplitDecision) -> bool:
        """The owner splits (it knows the topics the default algorithm divides); the leader asks it,
        with its epoch, which the owner's Splitting write is conditional on."""
        bundle = NamespaceBundle.parse(decision.bundle)
        owner = self._channel.owner(bundle).broker
        unload = unloads_split_children(self._conf)
        algorithm = SPECIFIED_POSITIONS_DIVIDE if decision.boundaries else None
        self.started.append(decision)
        try:
            token = self._fence.epoch()
            # the leader's own write (the bundle's stored data) is fenced too: a superseded leader stops here
            await self._load_data.delete_bundle_data(bundle, leader_epoch=token)
            if owner is None:
                raise BrokerLBError(f"{bundle} has no owner to split it")
            if owner == self._broker_id:
                outcome = await self._fence.guarded(
                    decision.bundle,
                    token,
                    "split",
                    lambda: self._actions.split(
                        bundle,
                        algorithm=algorithm,
                        positions=decision.boundaries,
                        unload=unload,
                        leader_epoch=token,
                    ),
                )
                return outcome.split
            registered = self._registry.broker(owner)
            url = None if registered is None else registered.web_service_url
            await self._admin.at(_url(url)).split_bundle(
                str(bundle.namespace),
                bundle.range,
                unload=unload,
                algorithm=algorithm,
                boundaries=list(decision.boundaries) or None,
                leader_epoch=token,
            )
            return True
        except BrokerLBError as exc:
            self.failures.append(("split", decision.bundle, str(exc)))
            logger.warning("Leader could not split %s: %s", decision.bundle, exc)
            return False


@dataclass
class _Pending:
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    brokers: dict[str, bool] = field(default_factory=dict)  # broker -> still registered


class LeaderTasks:
    """The leader's scheduler (module docstring); :meth:`run` is the election's leader work."""

    def __init__(
        self,
        load_manager: LoadManager,
        actions: BrokerActions,
        *,
        conf: ServiceConfig,
        registry: BrokerRegistry,
        load_data_store: LoadDataStore,
        clock: Clock,
        history: HistorySink | None = None,
        max_records: int = 1000,
    ) -> None:
        self.lm = load_manager
        self.leader = load_manager.leader
        self.actions = actions
        self.conf = conf
        self.registry = registry
        self.load_data_store = load_data_store
        self.clock = clock
        self.history = history
        #: the last steps' records, oldest first
        self.records: collections.deque[CycleRecord] = collections.deque(maxlen=max_records)
        self.cycles = {"refresh": 0, "shedding": 0, "split": 0, "persist": 0}
        self.schedule = LeaderSchedule(conf, clock.now_ms())
        self._pending = _Pending()
        self._listeners: list[Callable[[CycleRecord], None]] = []

    def add_listener(self, listener: Callable[[CycleRecord], None]) -> Callable[[], None]:
        """``listener(record)`` after every shedding and split step; returns a remover."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    @property
    def last_shedding(self) -> CycleRecord | None:
        return next((r for r in reversed(self.records) if r.kind == "shedding"), None)

    # ------------------------------------------------------------------ leader work
    async def run(self, lease: LeaderLease) -> None:
        self.leader.config = self.conf
        self.schedule = LeaderSchedule(self.conf, self.clock.now_ms())
        self._pending = _Pending()
        remove = self.registry.add_listener(self._on_registry)
        logger.info("Leader cycles started (lease epoch %d)", lease.epoch)
        try:
            for broker in self.registry.available_brokers():
                self._pending.brokers[broker] = True
            self._pending.changed.set()
            try:
                async with asyncio.TaskGroup() as group:
                    group.create_task(self._refresh_loop(lease))
                    group.create_task(self._periodic(lease, "shedding", self.shed_once))
                    if not self.schedule.split_after_refresh:
                        group.create_task(self._periodic(lease, "split", self.split_once))
                    group.create_task(self._periodic(lease, "persist", self.persist_once))
            except* LeadershipLostError as lost:
                raise lost.exceptions[0] from None
        finally:
            remove()

    def _on_registry(self, event: RegistryEvent) -> None:
        if event.kind in (RegistryEventKind.JOINED, RegistryEventKind.UPDATED):
            self._pending.brokers[event.broker_id] = True
        elif event.kind is RegistryEventKind.LEFT:
            self._pending.brokers[event.broker_id] = False
        else:
            return
        self._pending.changed.set()

    async def _refresh_loop(self, lease: LeaderLease) -> None:
        while True:
            await self._pending.changed.wait()
            await self.clock.sleep(REFRESH_DEBOUNCE)
            await self._refresh_pending(lease)

    async def _refresh_pending(self, lease: LeaderLease) -> None:
        self._pending.changed.clear()
        changed, self._pending.brokers = self._pending.brokers, {}
        lease.check()
        try:
            await self.refresh_once(lease, changed)
        except BrokerLBError as exc:
            logger.warning("Leader refresh failed: %s", exc)

    async def _periodic(
        self, lease: LeaderLease, step: str, action: Callable[[LeaderLease], Awaitable[Any]]
    ) -> None:
        while True:
            wait_ms = self.schedule.next_ms(step) - self.clock.now_ms()
            if wait_ms > 0:
                await self.clock.sleep(wait_ms / 1000)
                continue
            lease.check()
            self.schedule.done(step, self.clock.now_ms())
            try:
                await action(lease)
            except BrokerLBError as exc:
                logger.warning("Leader %s step failed: %s", step, exc)

    # ------------------------------------------------------------------ one step of each
    async def refresh_once(self, lease: LeaderLease, changed: dict[str, bool] | None = None) -> None:
        await self.lm.refresh()
        self.cycles["refresh"] += 1
        self._append_history(changed or {})
        lease.check()
        if self.schedule.split_after_refresh:
            await self.split_once(lease)

    def _append_history(self, changed: dict[str, bool]) -> None:
        if self.history is None or not changed:
            return
        now = self.clock.now_ms()
        brokers = self.leader.load_state.load_data.broker_data
        for broker, present in sorted(changed.items()):
            data = brokers.get(broker)
            try:
                self.history.report(now, broker, data.local_data if (present and data is not None) else None)
            except Exception:
                logger.exception("Could not append the report of %s to the load history", broker)

    async def split_once(self, lease: LeaderLease) -> CycleRecord:
        lease.check()
        record = await split_cycle(self.leader, self.actions, self.lm.current_inputs())
        if record.splits:  # the leader forgot the split bundles and with them its placement indexes
            self.lm.prepare_placement()
        self.cycles["split"] += 1
        self._publish(record)
        return record

    async def shed_once(self, lease: LeaderLease) -> CycleRecord:
        if self._pending.changed.is_set():
            await self._refresh_pending(lease)
        lease.check()
        record = await shedding_cycle(self.leader, self.actions, self.lm.current_inputs())
        self.cycles["shedding"] += 1
        self._publish(record)
        return record

    async def persist_once(self, lease: LeaderLease) -> int:
        """Write bundle data and broker time averages (Pulsar's resource-quota update), each write
        conditional on this leadership's epoch: a leader superseded mid-way writes nothing more."""
        data = self.leader.load_state.load_data
        epoch = lease.fencing_token
        writes = 0
        for bundle, history in list(data.bundle_data.items()):
            lease.check()
            await self.load_data_store.write_bundle_data(bundle, history.to_json(), leader_epoch=epoch)
            writes += 1
        for broker, broker_data in list(data.broker_data.items()):
            lease.check()
            await self.load_data_store.write_broker_time_average(
                broker, broker_data.time_average_data.to_json(), leader_epoch=epoch
            )
            writes += 1
        self.cycles["persist"] += 1
        return writes

    def _publish(self, record: CycleRecord) -> None:
        self.records.append(record)
        for move, done in zip(record.moves, record.moves_done, strict=True):
            logger.info(
                "Leader %s: %s %s from %s%s (%s) %s%s",
                record.leader,
                "transfer" if move.transfer else "unload",
                move.bundle,
                move.source,
                f" to {move.destination}" if move.destination else "",
                move.reason,
                move.detail,
                "" if done else " -- not carried out",
            )
        for what, decision, done in [
            *(("split", d.bundle, ok) for d, ok in zip(record.splits, record.splits_done, strict=True)),
            *(("merge", d.merged, ok) for d, ok in zip(record.merges, record.merges_done, strict=True)),
        ]:
            logger.info(
                "Leader %s: %s %s%s", record.leader, what, decision, "" if done else " -- not carried out"
            )
        for listener in list(self._listeners):
            try:
                listener(record)
            except Exception:
                logger.exception("Leader record listener failed")


def _url(url: str | None) -> str:
    if not url:
        raise BrokerLBError("the owner's web service URL is not known")
    return url.rstrip("/")
