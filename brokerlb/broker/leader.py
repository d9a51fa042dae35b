"""What the leader broker does while it leads (Pulsar's ``ModularLoadManagerImpl`` leader side).

Started by the election each time this broker gains leadership, cancelled the moment
the lease ends (session suspended or lost, node taken, lease deadline passed). Each
action first checks the lease. Three loops:

* **refresh** -- on every change under ``/loadbalance/brokers`` (a report written, a
  broker joining or leaving; changes arriving together are folded into one cycle):
  ``updateAll`` (:meth:`LoadManager.refresh`), every report read is appended to the
  load-history sink (``brokerlbLoadHistoryDir``; JSON Lines per UTC day), then the
  split check (``BundleSplitterTask``; the owner splits with the default algorithm and
  ``unload = loadBalancerAutoUnloadSplitBundlesEnabled``; the bundle's data is dropped);
* **shedding** -- every ``loadBalancerSheddingIntervalMinutes``: the shedding cycle of
  the configured strategy with the leader's loop rules
  (:func:`~brokerlb.loadbalance.shedding.run_shedding_cycle`); each ``Success`` is an
  unload through the owner, to the chosen destination (a transfer); successful unloads
  are remembered for the grace period;
* **persist** -- every ``loadBalancerResourceQuotaUpdateIntervalMinutes``: bundle data
  to ``/loadbalance/bundle-data/...`` and time averages to
  ``/loadbalance/broker-time-average/...``.

Decisions and what was done are kept in :attr:`LeaderTasks.events` (a bounded log) for
the demo, tests and operators.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from brokerlb.broker.load_manager import LoadManager
from brokerlb.coordination import LeaderLease, RegistryEvent, RegistryEventKind
from brokerlb.errors import BrokerLBError, LeadershipLostError
from brokerlb.loadbalance.decisions import SheddingResult, SplitResult
from brokerlb.loadbalance.shedding import record_unloads, run_shedding_cycle
from brokerlb.loadbalance.split import find_bundles_to_split
from brokerlb.model import LocalBrokerData
from brokerlb.ring import NamespaceBundle

if TYPE_CHECKING:
    from brokerlb.broker.service import BrokerService

__all__ = ["LeaderTasks", "LeaderEvent", "HistorySink"]

logger = logging.getLogger(__name__)

#: Changes arriving within this many seconds are folded into one refresh.
REFRESH_DEBOUNCE = 0.05


class HistorySink(Protocol):
    """Where the leader appends the load reports it reads."""

    def report(self, now_ms: int, broker_id: str, data: LocalBrokerData | None) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class LeaderEvent:
    """One thing the leader decided or did: ``unload``, ``split``, ``shed-cycle``, ``failed``."""

    at_ms: int
    kind: str
    bundle: str | None = None
    source: str | None = None
    destination: str | None = None
    reason: str = ""
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            k: v
            for k, v in (
                ("atMs", self.at_ms),
                ("kind", self.kind),
                ("bundle", self.bundle),
                ("source", self.source),
                ("destination", self.destination),
                ("reason", self.reason),
                ("detail", self.detail),
            )
            if v not in (None, "")
        }


@dataclass
class _Pending:
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    brokers: dict[str, bool] = field(default_factory=dict)  # broker -> still registered


class LeaderTasks:
    """The leader's loops (module docstring); :meth:`run` is the election's leader work."""

    def __init__(
        self,
        service: BrokerService,
        load_manager: LoadManager,
        *,
        history: HistorySink | None = None,
        max_events: int = 1000,
    ) -> None:
        self.service = service
        self.lm = load_manager
        self.conf = service.conf
        self.history = history
        self.events: collections.deque[LeaderEvent] = collections.deque(maxlen=max_events)
        self.last_shedding: SheddingResult | None = None
        self.last_split: SplitResult | None = None
        self.cycles = {"refresh": 0, "shedding": 0, "persist": 0}
        self._pending = _Pending()
        self._splitting: set[str] = set()
        self._remove_listener: Callable[[], None] | None = None
        self._listeners: list[Callable[[LeaderEvent], None]] = []

    def add_listener(self, listener: Callable[[LeaderEvent], None]) -> None:
        self._listeners.append(listener)

    # ------------------------------------------------------------------ leader work
    async def run(self, lease: LeaderLease) -> None:
        self.lm.reset()
        self._pending = _Pending()
        self._remove_listener = self.service.registry.add_listener(self._on_registry)
        logger.info("%s leads (epoch %d): load manager cycles started", self.service.broker_id, lease.epoch)
        try:
            for broker in self.service.registry.available_brokers():
                self._pending.brokers[broker] = True
            self._pending.changed.set()
            try:
                async with asyncio.TaskGroup() as group:
                    group.create_task(self._refresh_loop(lease))
                    group.create_task(
                        self._periodic(lease, "loadBalancerSheddingIntervalMinutes", self.shed_once)
                    )
                    group.create_task(
                        self._periodic(
                            lease, "loadBalancerResourceQuotaUpdateIntervalMinutes", self.persist_once
                        )
                    )
            except* LeadershipLostError as lost:
                raise lost.exceptions[0] from None
        finally:
            if self._remove_listener is not None:
                self._remove_listener()
                self._remove_listener = None

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
            await asyncio.sleep(REFRESH_DEBOUNCE)
            self._pending.changed.clear()
            changed, self._pending.brokers = self._pending.brokers, {}
            lease.check()
            try:
                await self.refresh_once(lease, changed)
            except BrokerLBError as exc:
                logger.warning("Leader refresh failed: %s", exc)

    async def _periodic(self, lease: LeaderLease, key: str, action: Callable[[LeaderLease], Any]) -> None:
        while True:
            await asyncio.sleep(self.conf.duration_seconds(key))
            lease.check()
            try:
                await action(lease)
            except BrokerLBError as exc:
                logger.warning("Leader %s cycle failed: %s", key, exc)

    # ------------------------------------------------------------------ one cycle of each
    async def refresh_once(self, lease: LeaderLease, changed: dict[str, bool] | None = None) -> None:
        await self.lm.refresh()
        self.cycles["refresh"] += 1
        self._append_history(changed or {})
        lease.check()
        await self.check_splits(lease)

    def _append_history(self, changed: dict[str, bool]) -> None:
        if self.history is None or not changed:
            return
        now = self.service.clock.now_ms()
        brokers = self.lm.state.load_data.broker_data
        for broker, present in sorted(changed.items()):
            data = brokers.get(broker)
            try:
                self.history.report(now, broker, data.local_data if (present and data is not None) else None)
            except Exception:
                logger.exception("Could not append the report of %s to the load history", broker)

    async def check_splits(self, lease: LeaderLease) -> SplitResult:
        reported = {b for d in self.lm.state.load_data.broker_data.values() for b in d.local_data.last_stats}
        self._splitting &= reported
        result = find_bundles_to_split(self.lm.view(), self.lm.strategy_state)
        self.last_split = result
        for decision in result.splits:
            if decision.bundle in self._splitting:
                continue
            lease.check()
            self._splitting.add(decision.bundle)
            await self._split(decision.bundle, str(decision.reason), decision.detail)
        return result

    async def _split(self, bundle_name: str, reason: str, detail: str) -> None:
        bundle = NamespaceBundle.parse(bundle_name)
        owner = self.service.owners.get_owner(bundle)
        self.lm.forget_bundle(bundle_name)
        try:
            await self.service.load_data_store.delete_bundle_data(bundle)
            unload = self.conf.loadBalancerAutoUnloadSplitBundlesEnabled
            if owner is None or owner.broker_id == self.service.broker_id:
                if self.service.actions.owns(bundle):
                    await self.service.actions.split(bundle, algorithm=None, unload=unload)
            else:
                await self.service.admin.at(owner.data.http_url or "").split_bundle(
                    str(bundle.namespace), bundle.range, unload=unload
                )
            self._event("split", bundle_name, owner.broker_id if owner else None, None, reason, detail)
        except BrokerLBError as exc:
            self._event("failed", bundle_name, owner.broker_id if owner else None, None, "split", str(exc))

    async def shed_once(self, lease: LeaderLease) -> SheddingResult:
        await self.lm.refresh()
        result = run_shedding_cycle(self.lm.view(), self.lm.strategy_state, self.lm.rng)
        self.last_shedding = result
        self.cycles["shedding"] += 1
        unloads = result.unloads
        if unloads:
            lease.check()
            done = await asyncio.gather(
                *(
                    self._unload(d.bundle or "", d.broker, d.destination, str(d.reason), d.detail)
                    for d in unloads
                )
            )
            executed = SheddingResult.of([d for d, ok in zip(unloads, done, strict=True) if ok])
            record_unloads(
                executed, self.service.clock.now_ms(), self.lm.state.load_data.recently_unloaded_bundles
            )
        self._event("shed-cycle", reason=str(len(unloads)), detail=_summary(result))
        return result

    async def _unload(
        self, bundle_name: str, broker: str | None, destination: str | None, reason: str, detail: str
    ) -> bool:
        bundle = NamespaceBundle.parse(bundle_name)
        owner = self.service.owners.get_owner(bundle)
        try:
            if owner is None:
                raise BrokerLBError(f"{bundle_name} has no owner any more")
            if destination:
                self.service.placement.set_bundle_affinity(bundle_name, destination)
            if owner.broker_id == self.service.broker_id:
                await self.service.actions.unload(bundle, destination)
            else:
                await self.service.admin.at(owner.data.http_url or "").unload_bundle(
                    str(bundle.namespace), bundle.range, destination_broker=destination, authoritative=True
                )
        except BrokerLBError as exc:
            self._event("failed", bundle_name, broker, destination, "unload", str(exc))
            return False
        self._event("unload", bundle_name, owner.broker_id, destination, reason, detail)
        return True

    async def persist_once(self, lease: LeaderLease) -> int:
        """Write bundle data and broker time averages (Pulsar's resource-quota update)."""
        store = self.service.load_data_store
        data = self.lm.state.load_data
        writes = 0
        for bundle, history in list(data.bundle_data.items()):
            lease.check()
            await store.write_bundle_data(bundle, history.to_json())
            writes += 1
        for broker, broker_data in list(data.broker_data.items()):
            lease.check()
            await store.write_broker_time_average(broker, broker_data.time_average_data.to_json())
            writes += 1
        self.cycles["persist"] += 1
        return writes

    def _event(
        self,
        kind: str,
        bundle: str | None = None,
        source: str | None = None,
        destination: str | None = None,
        reason: str = "",
        detail: str = "",
    ) -> None:
        event = LeaderEvent(self.service.clock.now_ms(), kind, bundle, source, destination, reason, detail)
        self.events.append(event)
        if kind in ("unload", "split", "failed"):
            logger.info(
                "Leader %s: %s %s%s%s (%s) %s",
                self.service.broker_id,
                kind,
                bundle or "",
                f" from {source}" if source else "",
                f" to {destination}" if destination else "",
                reason,
                detail,
            )
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                logger.exception("Leader event listener failed")


def _summary(result: SheddingResult) -> str:
    counts = collections.Counter(f"{d.label}/{d.reason}" for d in result.decisions)
    return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
