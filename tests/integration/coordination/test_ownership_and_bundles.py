"""Racing assignments on the ownership table, and bundle metadata -- on the embedded store and on ZooKeeper."""

from __future__ import annotations

import asyncio

import pytest

from brokerlb.coordination import (
    BundleMetadata,
    LocalPolicies,
    OwnershipTable,
    Policies,
)
from brokerlb.coordination.paths import local_policies_path, policies_path
from brokerlb.errors import (
    BundleNotFoundError,
    ConflictError,
    InvalidSplitError,
    NamespaceNotFoundError,
    RecordConflictError,
)
from brokerlb.ownership.machine import OwnershipMachine
from brokerlb.ring import NamespaceBundles
from brokerlb.testing.coordination import check_coordination_invariants

NS = "acme/orders"


# --------------------------------------------------------------------------- the ownership table


async def test_two_brokers_racing_to_assign_1000_bundles_each_bundle_gets_one_record(backend):
    """Two brokers assign the same 1000 bundles at once, each to itself: every bundle ends with one
    assignment (the other's compare-and-set lost), both won some, and every broker's view agrees."""
    store = await backend.new_store(session_timeout=10.0)
    other = await backend.new_store(session_timeout=10.0)
    bundles = [str(b) for b in NamespaceBundles.create(NS, 1000)]
    await BundleMetadata(store).create_namespace(NS, num_bundles=1000)
    tables = [await OwnershipTable(store).start(), await OwnershipTable(other).start()]
    gate = asyncio.Semaphore(200)

    async def assign(table: OwnershipTable, broker: str, bundle: str) -> str | None:
        async with gate:
            try:
                await table.write(OwnershipMachine().assign(bundle, broker, at_ms=0))
                return bundle
            except RecordConflictError:
                return None

    r1, r2 = await asyncio.gather(
        asyncio.gather(*(assign(tables[0], "b1", b) for b in bundles)),
        asyncio.gather(*(assign(tables[1], "b2", b) for b in reversed(bundles))),
    )
    won1, won2 = {b for b in r1 if b}, {b for b in r2 if b}
    assert won1 | won2 == set(bundles) and not won1 & won2
    await backend.until(lambda: all(len(t) == 1000 for t in tables), message="both views see every record")
    for table in tables:
        assert {r.bundle for r in table if r.record.dst == "b1"} == won1
        assert {r.bundle for r in table if r.record.dst == "b2"} == won2
    await check_coordination_invariants(store, [NS])


# --------------------------------------------------------------------------- bundle metadata


async def test_create_namespace_writes_local_and_global_policies(store):
    metadata = BundleMetadata(store)
    bundles = await metadata.create_namespace(
        NS, num_bundles=4, anti_affinity_group="group-a", policies={"replication_clusters": ["use"]}
    )
    assert len(bundles) == 4
    local = LocalPolicies.from_bytes((await store.get(local_policies_path(NS))).data)
    glob = Policies.from_bytes((await store.get(policies_path(NS))).data)
    assert local.bundles == glob.bundles == bundles.to_json()
    assert local.namespace_anti_affinity_group == "group-a"
    assert glob.extra == {"replication_clusters": ["use"]}
    with pytest.raises(ConflictError):
        await metadata.create_namespace(NS)
    assert await metadata.get_bundles(NS) == bundles
    assert len(await metadata.get_bundles("acme/unknown")) == 1  # Pulsar: no policies → one full bundle


async def test_local_policies_are_created_from_the_global_ones(store):
    await store.create(policies_path(NS), b'{"bundles":{"numBundles":2},"deleted":false}', make_parents=True)
    metadata = BundleMetadata(store)
    children = await metadata.split_bundle(f"{NS}/0x00000000_0x80000000", [0x40000000])
    assert [c.range for c in children] == ["0x00000000_0x40000000", "0x40000000_0x80000000"]
    local = LocalPolicies.from_bytes((await store.get(local_policies_path(NS))).data)
    glob = Policies.from_bytes((await store.get(policies_path(NS))).data)
    assert local.bundles["numBundles"] == 3 and glob.bundles == local.bundles
    assert glob.extra == {"deleted": False}  # other fields survive the read-modify-write


async def test_concurrent_splits_of_one_namespace_keep_every_boundary(backend, store, other):
    metadata = BundleMetadata(store)
    rival = BundleMetadata(other)
    initial = await metadata.create_namespace(NS, num_bundles=8)
    splits = []
    for i, b in enumerate(initial):
        mid = b.lower + (b.upper - b.lower) // 2
        splits.append(((metadata, rival)[i % 2], b, mid))
    await asyncio.gather(*(m.split_bundle(b, [mid]) for m, b, mid in splits))
    final = await metadata.get_bundles(NS)
    assert len(final) == 16
    assert {mid for _, _, mid in splits} <= set(final.boundaries)
    await check_coordination_invariants(store, [NS])


async def test_splitting_the_same_bundle_twice_has_one_winner(store, other):
    await BundleMetadata(store).create_namespace(NS, num_bundles=2)
    target = f"{NS}/0x00000000_0x80000000"
    results = await asyncio.gather(
        BundleMetadata(store).split_bundle(target, [0x20000000]),
        BundleMetadata(other).split_bundle(target, [0x60000000]),
        return_exceptions=True,
    )
    errors = [r for r in results if isinstance(r, Exception)]
    assert len(errors) == 1 and isinstance(errors[0], BundleNotFoundError)
    assert len(await BundleMetadata(other).get_bundles(NS)) == 3
    await check_coordination_invariants(store, [NS])


async def test_invalid_split_fails_at_once_and_changes_nothing(store):
    metadata = BundleMetadata(store)
    await metadata.create_namespace(NS, num_bundles=2)
    version = (await store.get(local_policies_path(NS))).stat.version
    with pytest.raises(InvalidSplitError):
        await metadata.split_bundle(f"{NS}/0x00000000_0x80000000", [0x90000000])
    assert (await store.get(local_policies_path(NS))).stat.version == version
    with pytest.raises(NamespaceNotFoundError):
        await metadata.split_bundle("acme/none/0x00000000_0xffffffff", [5])


async def test_merge_and_anti_affinity(store):
    metadata = BundleMetadata(store)
    await metadata.create_namespace(NS, num_bundles=4)
    merged = await metadata.merge_bundles(NS, [f"{NS}/0x00000000_0x40000000", f"{NS}/0x40000000_0x80000000"])
    assert merged.range == "0x00000000_0x80000000"
    await metadata.set_anti_affinity_group(NS, "g1")
    assert await metadata.get_anti_affinity_group(NS) == "g1"
    await metadata.set_anti_affinity_group(NS, None)
    assert await metadata.get_anti_affinity_group(NS) is None
    assert len(await metadata.get_bundles(NS)) == 3  # the group update kept the bundles
    await check_coordination_invariants(store, [NS])
