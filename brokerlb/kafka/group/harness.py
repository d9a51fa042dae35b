"""Run a consumer group and measure it: shared by the tests and ``benchmarks/bench_group_protocols.py``.

:class:`GroupRun` starts and stops members (each on its own store session),
waits until the group settles, checks the invariants after each change and
records, per membership change: how long until the group settled (the last
fetch start/stop or rebalance end caused by the change), how many partitions
changed owner, how many member rebalances (and attempts) it took, and the
pause statistics of :class:`FetchTracker`.

"Settled": every member idle, every partition of the subscribed topics has an
owner node, and each member fetches exactly the partitions whose nodes it holds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from brokerlb.coordination import MetadataStore
from brokerlb.kafka.assignors import TopicPartition
from brokerlb.kafka.group.common import read_owners, read_partitions
from brokerlb.kafka.group.coordinated import CoordinatedGroupConsumer
from brokerlb.kafka.group.layout import GroupPaths
from brokerlb.kafka.group.reconciliation import (
    GroupCoordinatorService,
    Kip848Paths,
    ReconcilingConsumer,
    read_coordinator_state,
)
from brokerlb.kafka.group.tracker import FetchTracker, PauseStats
from brokerlb.kafka.group.zk_consumer import ZkRebalancingConsumer
from brokerlb.testing.invariants import InvariantViolation

__all__ = ["GroupRun", "ChangeReport", "Consumer"]

Consumer = ZkRebalancingConsumer | CoordinatedGroupConsumer | ReconcilingConsumer


@dataclass(frozen=True)
class ChangeReport:
    """What one membership change cost."""

    style: str
    change: str
    members_after: int
    settle_s: float
    moved: int
    pauses: PauseStats
    rebalances: int
    attempts: int

    def row(self) -> dict[str, Any]:
        return {
            "style": self.style,
            "change": self.change,
            "members": self.members_after,
            "settle_s": round(self.settle_s, 4),
            "moved": self.moved,
            "paused_partition_s": round(self.pauses.paused_partition_seconds, 4),
            "max_pause_s": round(self.pauses.max_pause_s, 4),
            "stop_the_world_s": round(self.pauses.stop_the_world_s, 4),
            "rebalances": self.rebalances,
            "attempts": self.attempts,
        }


@dataclass
class GroupRun:
    """A group of consumers of one style on one store service."""

    group: str
    topics: dict[str, int]
    new_store: Callable[[], Awaitable[MetadataStore]]
    #: ``make_consumer(store, group, consumer_id, tracker)``
    make_consumer: Callable[[MetadataStore, str, str, FetchTracker], Consumer]
    settle_timeout_s: float = 30.0
    tracker: FetchTracker = field(default_factory=FetchTracker)
    members: dict[str, tuple[Consumer, MetadataStore]] = field(default_factory=dict)
    reports: list[ChangeReport] = field(default_factory=list)
    admin: MetadataStore | None = None
    #: every consumer that was ever a member (their rebalance records)
    everyone: list[Consumer] = field(default_factory=list)
    #: KIP-848: ``make_coordinator(store, group)`` -- the group coordinator, started in ``setup``
    make_coordinator: Callable[[MetadataStore, str], GroupCoordinatorService] | None = None
    coordinator: GroupCoordinatorService | None = None

    @property
    def paths(self) -> GroupPaths:
        return GroupPaths(self.group)

    async def setup(self) -> None:
        from brokerlb.errors import NodeExistsError
        from brokerlb.kafka.group.layout import create_topic, set_topic_partitions

        self.admin = await self.new_store()
        for topic, count in self.topics.items():
            try:
                await create_topic(self.admin, topic, count)
            except NodeExistsError:
                await set_topic_partitions(self.admin, topic, count)
        if self.make_coordinator is not None:
            self.coordinator = await self.make_coordinator(await self.new_store(), self.group).start()

    async def join(self, consumer_id: str) -> ChangeReport:
        store = await self.new_store()
        consumer = self.make_consumer(store, self.group, consumer_id, self.tracker)
        return await self._measure(f"join {consumer_id}", self._start(consumer_id, consumer, store))

    async def _start(self, consumer_id: str, consumer: Consumer, store: MetadataStore) -> None:
        self.members[consumer_id] = (consumer, store)
        self.everyone.append(consumer)
        await consumer.start()

    async def leave(self, consumer_id: str) -> ChangeReport:
        consumer, store = self.members.pop(consumer_id)

        async def go() -> None:
            await consumer.stop()
            await store.close()

        return await self._measure(f"leave {consumer_id}", go())

    async def _measure(self, change: str, action: Awaitable[None]) -> ChangeReport:
        before = self.tracker.fetching()
        t0 = self.tracker.clock()
        await action
        await self.wait_settled()
        records = [r for c in self.everyone for r in c.history if r.started_at >= t0]
        t1 = max([t0, self.tracker.last_change_at, *(r.finished_at for r in records)])
        after = self.tracker.fetching()
        moved = sum(1 for tp, owner in after.items() if tp in before and before[tp] != owner)
        partitions = [TopicPartition(t, p) for t, n in self.topics.items() for p in range(n)]
        styles = {c.style for c in self.everyone} or {"-"}
        report = ChangeReport(
            "/".join(sorted(styles)),
            change,
            len(self.members),
            t1 - t0,
            moved,
            self.tracker.pause_stats(partitions, t0, t1),
            len(records),
            sum(max(r.attempts, 1) for r in records),
        )
        self.reports.append(report)
        return report

    async def ownership(self) -> dict[TopicPartition, str]:
        """Who owns what according to the store: owner nodes, or (KIP-848) the coordinator's state."""
        assert self.admin is not None
        if self.make_coordinator is not None:
            return {
                tp: m
                for m, tps in (await self._kip848_holdings(stable_only=False) or {}).items()
                for tp in tps
            }
        counts = await read_partitions(self.admin, self.topics)
        return await read_owners(self.admin, self.paths, counts)

    async def _kip848_holdings(self, stable_only: bool) -> dict[str, set[TopicPartition]] | None:
        """Members' assigned partitions from the coordinator's state node (None: not stable)."""
        assert self.admin is not None
        paths = Kip848Paths(self.group)
        node = await self.admin.get_or_none(paths.state)
        if node is None:
            return {} if not stable_only else None
        doc = read_coordinator_state(node.data, paths.state)
        members = doc["members"]
        if stable_only and any(
            m["state"] != "STABLE" or m["memberEpoch"] != doc["targetEpoch"] for m in members.values()
        ):
            return None
        if stable_only and members and doc["targetEpoch"] != doc["groupEpoch"]:
            return None
        return {
            mid: {TopicPartition(t, p) for t, ps in m["assigned"].items() for p in ps}
            for mid, m in members.items()
        }

    async def is_settled(self) -> bool:
        if not all(c.idle for c, _ in self.members.values()):
            return False
        if self.coordinator is not None:
            holdings = await self._kip848_holdings(stable_only=True)
            if holdings is None or set(holdings) != set(self.members) or not self.coordinator.idle:
                return False
        owners = await self.ownership()
        if not self.members:
            return not owners
        wanted = {TopicPartition(t, p) for t, n in self.topics.items() for p in range(n)}
        if set(owners) != wanted:
            return False
        for cid, (consumer, _) in self.members.items():
            if set(consumer.owned) != {tp for tp, o in owners.items() if o == cid}:
                return False
        return self.tracker.fetching() == owners

    async def wait_settled(self) -> None:
        deadline = time.monotonic() + self.settle_timeout_s
        stable = 0
        while True:
            self.check_single_owner()
            if await self.is_settled():
                stable += 1
                if stable >= 3:  # settled on three consecutive looks
                    return
            else:
                stable = 0
            if time.monotonic() > deadline:
                state = {cid: (c.idle, sorted(map(str, c.owned))) for cid, (c, _) in self.members.items()}
                raise InvariantViolation(
                    f"group {self.group} did not settle within {self.settle_timeout_s} s; "
                    f"members (idle, owned): {state}; owner nodes: "
                    f"{ {str(k): v for k, v in (await self.ownership()).items()} }"
                )
            await asyncio.sleep(0.01)

    def check_single_owner(self) -> None:
        """No partition is fetched by two members (the tracker saw every start/stop)."""
        if self.tracker.violations:
            raise InvariantViolation("partitions owned by two members: " + "; ".join(self.tracker.violations))
        claimed: dict[TopicPartition, str] = {}
        for cid, (consumer, _) in self.members.items():
            for tp in consumer.owned:
                if tp in claimed:
                    raise InvariantViolation(f"{tp} is owned by both {claimed[tp]} and {cid}")
                claimed[tp] = cid

    async def close(self) -> None:
        for cid in list(self.members):
            consumer, store = self.members.pop(cid)
            await consumer.stop()
            await store.close()
        if self.coordinator is not None:
            await self.coordinator.stop()
        if self.admin is not None:
            await self.admin.close()


def sequence(n: int) -> Sequence[str]:
    return [f"consumer-{i}" for i in range(1, n + 1)]
