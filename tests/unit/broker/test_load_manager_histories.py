"""Where the live leader's history of a bundle it sees for the first time comes from (Pulsar's
``getBundleDataOrDefault``): the stored bundle data, else the legacy resource quota, else the
default -- read from a real embedded store."""

from __future__ import annotations

import asyncio
import json

import pytest

from brokerlb.broker.leader.load_manager import LoadManager
from brokerlb.clock import ManualClock
from brokerlb.coordination.load_data import LoadDataStore
from brokerlb.coordination.paths import resource_quota_path
from brokerlb.errors import NamespaceNotFoundError
from brokerlb.loadbalance.leader import ClusterInputs, Leader
from brokerlb.model import BundleData, ResourceQuota
from brokerlb.testing.builders import broker, bundle_stats

STORED, QUOTA, FRESH, BROKEN = (f"t/ns/0x{i:x}0000000_0x{i + 1:x}0000000" for i in range(4))


class _Inputs:
    def __init__(self, inputs: ClusterInputs) -> None:
        self._inputs = inputs

    def current(self) -> ClusterInputs:
        return self._inputs


class _NoNamespaces:
    def policy_of(self, namespace: str) -> None:
        return None  # nothing loaded

    async def get(self, namespace: str) -> None:
        raise NamespaceNotFoundError(f"Namespace {namespace} does not exist")


async def test_a_new_bundle_starts_from_its_stored_data_else_its_legacy_quota_else_the_default(store) -> None:
    load_data = LoadDataStore(store)
    stored = BundleData.from_resource_quota(ResourceQuota(msg_rate_in=7.0, msg_rate_out=3.0))
    await load_data.write_bundle_data(STORED, stored.to_json())
    quota = ResourceQuota(msg_rate_in=120.0, msg_rate_out=80.0, bandwidth_in=5000.0, bandwidth_out=9000.0)
    await store.create(resource_quota_path(QUOTA), json.dumps(quota.to_json()).encode(), make_parents=True)
    await store.create(resource_quota_path(BROKEN), b"not json", make_parents=True)
    report = broker(
        "b1:8080", bundles={b: bundle_stats(msg_rate_in=1.0) for b in (STORED, QUOTA, FRESH, BROKEN)}
    )
    leader = Leader("b1:8080")
    manager = LoadManager(
        leader,
        _Inputs(ClusterInputs(reports={"b1:8080": report})),
        bundles=_NoNamespaces(),
        load_data_store=load_data,
        clock=ManualClock(),
    )

    await manager.refresh()

    sample = bundle_stats(msg_rate_in=1.0)

    def expected(start: BundleData) -> BundleData:
        history = start.copy()
        history.update(sample)  # the refresh folds the report's first sample into it
        return history

    legacy = BundleData.from_resource_quota(quota)
    histories = leader.load_state.load_data.bundle_data
    assert histories[STORED].to_json() == expected(stored).to_json()
    assert histories[QUOTA].to_json() == expected(legacy).to_json()
    assert histories[QUOTA].long_term_data.msg_throughput_out == pytest.approx(9000.0 * 999 / 1000)
    # no stored data and no quota, or an unreadable quota (skipped with a log line): the default
    assert histories[FRESH].to_json() == expected(BundleData.new_default()).to_json()
    assert histories[BROKEN].to_json() == expected(BundleData.new_default()).to_json()


class _RecordingNamespaces:
    """Nothing loaded; records the namespaces each refresh asks for."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def policy_of(self, namespace: str) -> None:
        return None

    async def get(self, namespace: str) -> None:
        self.asked.append(namespace)
        raise NamespaceNotFoundError(f"Namespace {namespace} does not exist")


async def test_each_refresh_loads_the_namespaces_of_the_current_reports_in_order(store) -> None:
    """The union of the reports' namespaces is kept as reports are replaced, go missing and
    come back: each refresh asks for exactly that union, sorted."""

    def report(name: str, *namespaces: str):
        return broker(name, bundles={f"t/{ns}/0x00000000_0x10000000": bundle_stats() for ns in namespaces})

    cache = _RecordingNamespaces()
    inputs = _Inputs(ClusterInputs(reports={}))
    manager = LoadManager(
        Leader("b1:8080"), inputs, bundles=cache, load_data_store=LoadDataStore(store), clock=ManualClock()
    )
    kept = report("b1:8080", "a")  # the same report object in two refreshes
    steps = [
        (
            {"b1:8080": report("b1:8080", "a", "b"), "b2:8080": report("b2:8080", "b", "c")},
            ["t/a", "t/b", "t/c"],
        ),
        ({"b1:8080": kept, "b2:8080": None}, ["t/a"]),
        ({"b1:8080": kept, "b2:8080": report("b2:8080", "a", "d")}, ["t/a", "t/d"]),
        ({"b2:8080": report("b2:8080")}, []),
    ]
    for reports, union in steps:
        inputs._inputs = ClusterInputs(reports=reports)
        cache.asked.clear()
        await manager.refresh()
        assert cache.asked == union


class _ReadsTogether:
    """Stored histories that answer only once every bundle's read has started: one read after another
    would never finish (a new leader reads every bundle's history in its first refresh)."""

    def __init__(self, bundles: int) -> None:
        self.bundles = bundles
        self.started = 0
        self.all_started = asyncio.Event()

    async def read_bundle_data(self, bundle: object) -> None:
        self.started += 1
        if self.started == self.bundles:
            self.all_started.set()
        await self.all_started.wait()

    async def read_resource_quota(self, bundle: str) -> None:
        return None


@pytest.mark.timeout(60)  # a hang guard: the reads one after another never finish
async def test_a_refresh_reads_the_new_bundles_histories_concurrently() -> None:
    bundles = [f"t/ns/0x{i:x}0000000_0x{i + 1:x}0000000" for i in range(8)]
    report = broker("b1:8080", bundles={b: bundle_stats(msg_rate_in=1.0) for b in bundles})
    leader = Leader("b1:8080")
    histories = _ReadsTogether(len(bundles))
    manager = LoadManager(
        leader,
        _Inputs(ClusterInputs(reports={"b1:8080": report})),
        bundles=_NoNamespaces(),
        load_data_store=histories,
        clock=ManualClock(),
    )

    await manager.refresh()

    assert histories.started == len(bundles)
    assert set(leader.load_state.load_data.bundle_data) >= set(bundles)
