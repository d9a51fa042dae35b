"""The live leader builds its placement indexes off the lookup's path, and decides as before.

:class:`~brokerlb.broker.leader.load_manager.LoadManager` refreshes the leader and then builds the
placement context of the new load data (:meth:`LoadManager.prepare_placement`); the split step
builds it again when its decided splits made the leader drop it. A lookup that follows places
with the context already built, and its decisions are those of a leader that builds the
context inside the placement. Everything runs on an embedded ``memory:`` store through the
broker's caches (registry watch, namespace bundles cache, cluster policies cache).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import pytest_asyncio

from brokerlb.broker.leader.leader import LeaderTasks
from brokerlb.broker.leader.leader_inputs import LeaderInputs
from brokerlb.broker.leader.load_manager import LoadManager
from brokerlb.broker.leader.policies_cache import ClusterPoliciesCache
from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
from brokerlb.clock import ManualClock
from brokerlb.config import ServiceConfig
from brokerlb.coordination import BrokerRegistry, BundleMetadata, LoadDataStore, MetadataStore, open_store
from brokerlb.coordination.paths import BROKERS_ROOT
from brokerlb.coordination.records import encode_json
from brokerlb.loadbalance import leader as leader_module
from brokerlb.loadbalance.leader import ClusterInputs, Leader
from brokerlb.loadbalance.placement.context import PlacementContext
from brokerlb.model import LocalBrokerData, NamespaceBundleStats
from brokerlb.ring import NamespaceBundle
from brokerlb.testing import broker, eventually

pytestmark = pytest.mark.asyncio

BROKERS = [f"b{i}:8080" for i in range(1, 6)]
#: 16 bundles of a namespace nobody reports yet (placed by the tests)
NEW_NAMESPACE = "t/new"


class Lease:
    epoch = 1

    def check(self) -> None:
        pass


@dataclass
class Actions:
    """Accepts every split (the owners' side is not under test here)."""

    clock: ManualClock

    def now_ms(self) -> int:
        return self.clock.now_ms()

    async def move(self, moves):
        return [True for _ in moves]

    async def split(self, splits):
        return [True for _ in splits]

    async def merge(self, merges):
        return [False for _ in merges]


class CountingContext(PlacementContext):
    """A placement context that counts how many were built."""

    built = 0

    def __init__(self, view, *, previous=None) -> None:
        type(self).built += 1
        super().__init__(view, previous=previous)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> type[CountingContext]:
    CountingContext.built = 0
    monkeypatch.setattr(leader_module, "PlacementContext", CountingContext)
    return CountingContext


@pytest_asyncio.fixture
async def store() -> AsyncIterator[MetadataStore]:
    store = open_store(f"memory:placement-prepared-{random.randrange(1 << 30)}")
    await store.start()
    try:
        yield store
    finally:
        await store.close()


def reports() -> dict[str, LocalBrokerData]:
    """Five brokers with different loads; b1 holds a bundle of many topics (a split candidate)."""
    out = {}
    for i, name in enumerate(BROKERS):
        bundle = f"t/ns-{i}/0x00000000_0xffffffff"
        stats = NamespaceBundleStats(
            msg_rate_in=100.0 * (i + 1), msg_rate_out=50.0, topics=40 if i == 0 else 2
        )
        out[name] = broker(name, cpu=10.0 * i, bundles={bundle: stats})
    return out


class Live:
    """The live leader's components on a metadata store (as the broker wires them)."""

    def __init__(self, store: MetadataStore, config: ServiceConfig) -> None:
        self.store = store
        self.config = config
        self.clock = ManualClock(1_700_000_000_000)

    async def start(self) -> Live:
        self.registry = await BrokerRegistry(self.store).start()
        self.metadata = BundleMetadata(self.store, default_num_bundles=4)
        self.bundles = NamespaceBundlesCache(self.store, self.metadata)
        self.policies = await ClusterPoliciesCache(self.store, "test").start()
        self.leader = Leader(BROKERS[0], self.config, rng=random.Random(3))
        self.inputs = LeaderInputs(self.registry, self.bundles, self.policies)
        self.lm = LoadManager(
            self.leader,
            self.inputs,
            bundles=self.bundles,
            load_data_store=LoadDataStore(self.store),
            clock=self.clock,
        )
        self.tasks = LeaderTasks(
            self.lm,
            Actions(self.clock),  # type: ignore[arg-type]
            conf=self.config,
            registry=self.registry,
            load_data_store=LoadDataStore(self.store),
            clock=self.clock,
        )
        return self

    async def write(self, written: dict[str, LocalBrokerData]) -> None:
        for name, report in written.items():
            path = f"{BROKERS_ROOT}/{name}"
            data = encode_json(report.to_json())
            if await self.store.exists(path) is None:
                await self.store.create(path, data)
            else:
                await self.store.set(path, data)
        await eventually(
            lambda: all(
                (node := self.registry.broker_node(n)) is not None and node.data == encode_json(r.to_json())
                for n, r in written.items()
            ),
            timeout=20,
            message="the registry shows the reports",
        )

    async def new_namespace(self) -> list[NamespaceBundle]:
        for i in range(len(BROKERS)):
            await self.metadata.create_namespace(f"t/ns-{i}", num_bundles=1)
        return list(await self.metadata.create_namespace(NEW_NAMESPACE, num_bundles=16))


async def test_the_refresh_builds_the_placement_context_and_the_lookup_uses_it(
    store: MetadataStore, counted: type[CountingContext]
) -> None:
    live = await Live(store, ServiceConfig()).start()
    bundles = await live.new_namespace()
    first = reports()
    await live.write(first)
    await live.lm.refresh()
    assert counted.built == 1, "the refresh built the placement context"

    placed = [await live.lm.place(b) for b in bundles[:8]]
    assert counted.built == 1, "the lookups placed with the context the refresh built"

    # a new report: the next refresh builds the context again, lending the unchanged brokers' figures
    await live.write({BROKERS[2]: broker(BROKERS[2], cpu=70.0, bundles=first[BROKERS[2]].last_stats)})
    await live.lm.refresh()
    assert counted.built == 2
    placed += [await live.lm.place(b) for b in bundles[8:]]
    assert counted.built == 2

    # the same history on a leader that builds the context inside each placement decides alike
    config = ServiceConfig()
    reference = Leader(BROKERS[0], config, rng=random.Random(3))
    inputs = live.inputs.current()
    reference.refresh(0, ClusterInputs(reports=first, namespace_policies=inputs.namespace_policies))
    expected = [
        reference.place(0, str(b), ClusterInputs(reports=first, namespace_policies=inputs.namespace_policies))
        for b in bundles[:8]
    ]
    second = {**first, BROKERS[2]: live.inputs.reports()[BROKERS[2]]}
    reference.refresh(0, ClusterInputs(reports=second, namespace_policies=inputs.namespace_policies))
    expected += [
        reference.place(
            0, str(b), ClusterInputs(reports=second, namespace_policies=inputs.namespace_policies)
        )
        for b in bundles[8:]
    ]
    assert placed == [d.broker for d in expected]
    assert len(set(placed)) > 1, "the placements spread (the comparison is not trivial)"


async def test_a_split_step_that_drops_the_placement_context_builds_it_again(
    store: MetadataStore, counted: type[CountingContext]
) -> None:
    live = await Live(store, ServiceConfig(loadBalancerNamespaceBundleMaxTopics=10)).start()
    bundles = await live.new_namespace()
    await live.write(reports())
    await live.lm.refresh()
    assert counted.built == 1
    record = await live.tasks.split_once(Lease())
    assert [d.bundle for d in record.splits] == ["t/ns-0/0x00000000_0xffffffff"]
    assert counted.built == 2, "the split step built the context the split dropped"
    await live.lm.place(bundles[0])
    assert counted.built == 2, "the lookup placed with it"

    record = await live.tasks.split_once(Lease())  # nothing new to split: the context is kept
    assert not record.splits and counted.built == 2


async def test_the_reports_mapping_is_kept_until_the_registry_changes(store: MetadataStore) -> None:
    live = await Live(store, ServiceConfig()).start()
    first = reports()
    await live.write(first)
    mapping = live.inputs.reports()
    assert live.inputs.reports() is mapping, "no change: the same mapping, nothing walked again"
    assert {b: r.to_json() for b, r in mapping.items() if r is not None} == {
        b: r.to_json() for b, r in first.items()
    }

    changed = broker(BROKERS[1], cpu=55.0)
    await live.write({BROKERS[1]: changed})
    again = live.inputs.reports()
    assert again is not mapping
    assert again[BROKERS[1]] is not None and again[BROKERS[1]].to_json() == changed.to_json()
    assert all(again[b] is mapping[b] for b in BROKERS if b != BROKERS[1]), "unchanged reports kept"

    await store.delete(f"{BROKERS_ROOT}/{BROKERS[4]}")
    await eventually(lambda: BROKERS[4] not in live.inputs.reports(), timeout=20, message="b5 left")
