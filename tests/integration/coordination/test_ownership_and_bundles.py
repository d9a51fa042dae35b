"""Bundle ownership and bundle metadata -- on the embedded store and on ZooKeeper."""

from __future__ import annotations

import asyncio

import pytest

from brokerlb.coordination import (
    BundleMetadata,
    CreateOp,
    DeleteOp,
    LocalPolicies,
    NamespaceEphemeralData,
    OwnershipCache,
    OwnershipEventKind,
    OwnershipManager,
    Policies,
    split_and_own,
)
from brokerlb.coordination.paths import local_policies_path, ownership_path, policies_path
from brokerlb.errors import BundleNotFoundError, ConflictError, InvalidSplitError, NamespaceNotFoundError
from brokerlb.ring import NamespaceBundles
from brokerlb.testing.coordination import check_coordination_invariants

NS = "acme/orders"


def broker_data(n: int) -> NamespaceEphemeralData:
    return NamespaceEphemeralData(f"pulsar://broker-{n}:6650", None, f"http://broker-{n}:8080", None)


# --------------------------------------------------------------------------- ownership


async def test_acquire_reports_the_current_owner(store, other):
    mine, theirs = OwnershipManager(store, broker_data(1)), OwnershipManager(other, broker_data(2))
    bundle = f"{NS}/0x00000000_0x40000000"
    won = await mine.try_acquire(bundle)
    assert won.acquired and won.owner.broker_id == "broker-1:8080"
    lost = await theirs.try_acquire(bundle)
    assert not lost.acquired and lost.owner.http_url == "http://broker-1:8080"
    assert lost.owner_session == store.session_id
    again = await mine.try_acquire(bundle)
    assert again.acquired
    stored = NamespaceEphemeralData.from_bytes((await other.get(ownership_path(bundle))).data)
    assert stored == broker_data(1)


async def test_cache_follows_disable_and_release(backend, store, other):
    cache = await OwnershipCache(other).start()
    mine = OwnershipManager(store, broker_data(1))
    bundle = f"{NS}/0x40000000_0x80000000"
    await mine.try_acquire(bundle)
    await backend.until(lambda: cache.get_owner(bundle), message="owner cached")
    assert cache.get_owner(bundle).broker_id == "broker-1:8080" and not cache.get_owner(bundle).disabled
    await mine.disable(bundle)
    assert not mine.is_owned(bundle) and mine.is_disabled(bundle)
    await backend.until(lambda: cache.get_owner(bundle).disabled, message="disabled flag seen")
    await mine.release(bundle)
    await backend.until(lambda: cache.get_owner(bundle) is None, message="release seen")
    assert await cache.lookup_owner(bundle) is None
    assert cache.owned_by("broker-1:8080") == []
    cache.close()


async def test_lookup_owner_reads_the_store_on_a_miss(store, other):
    await OwnershipManager(store, broker_data(3)).try_acquire(f"{NS}/0x80000000_0xc0000000")
    cache = OwnershipCache(other)  # not started: every lookup misses the memory
    info = await cache.lookup_owner(f"{NS}/0x80000000_0xc0000000")
    assert info.broker_id == "broker-3:8080" and info.session_id == store.session_id


async def test_ownership_is_reacquired_after_session_loss(backend, store, other):
    mine = OwnershipManager(store, broker_data(1))
    events = []
    mine.add_listener(events.append)
    bundle = f"{NS}/0xc0000000_0xffffffff"
    await mine.try_acquire(bundle)
    await backend.expire(store)
    await backend.until(
        lambda: OwnershipEventKind.REACQUIRED in [e.kind for e in events], message="ownership re-created"
    )
    assert store.owns(await other.exists(ownership_path(bundle)))
    assert mine.is_owned(bundle)


async def test_ownership_lost_when_another_broker_took_the_bundle(backend, store, other):
    mine = OwnershipManager(store, broker_data(1))
    events = []
    mine.add_listener(events.append)
    bundle = f"{NS}/0x00000000_0x40000000"
    await mine.try_acquire(bundle)
    # Another session replaces the node in one transaction (our lock would re-create it in between).
    await other.multi(
        [
            DeleteOp(ownership_path(bundle)),
            CreateOp(ownership_path(bundle), broker_data(2).to_bytes(), ephemeral=True),
        ]
    )
    await backend.until(lambda: OwnershipEventKind.LOST in [e.kind for e in events], message="loss reported")
    assert not mine.is_owned(bundle) and mine.owned_bundles() == []


async def test_two_brokers_racing_for_1000_bundles_each_get_one_owner(backend):
    # 400 creates in flight on a loaded box can starve a 2 s ZooKeeper session's pings (seen once
    # in a full run: the session expired mid-race); this test is about single ownership, not
    # session timing, so its two sessions are longer
    store = await backend.new_store(session_timeout=10.0)
    other = await backend.new_store(session_timeout=10.0)
    bundles = [str(b) for b in NamespaceBundles.create(NS, 1000)]
    metadata = BundleMetadata(store)
    await metadata.create_namespace(NS, num_bundles=1000)
    b1, b2 = OwnershipManager(store, broker_data(1)), OwnershipManager(other, broker_data(2))
    cache = await OwnershipCache(store).start()
    r1, r2 = await asyncio.gather(
        b1.acquire_many(bundles, concurrency=200), b2.acquire_many(list(reversed(bundles)), concurrency=200)
    )
    won1 = {r.bundle for r in r1 if r.acquired}
    won2 = {r.bundle for r in r2 if r.acquired}
    assert won1 | won2 == set(bundles) and not won1 & won2
    assert won1 and won2  # a real race: both won some
    # Every loser was told the winner.
    for result in r1 + r2:
        if not result.acquired:
            assert result.owner.broker_id == ("broker-2:8080" if result.bundle in won2 else "broker-1:8080")
    await backend.until(lambda: len(cache.owners()) == 1000, message="cache sees all owners")
    assert {b for b, info in cache.owners().items() if info.broker_id == "broker-1:8080"} == won1
    await check_coordination_invariants(
        store,
        [NS],
        beliefs={"broker-1:8080": b1.owned_bundles(), "broker-2:8080": b2.owned_bundles()},
        require_all_owned=True,
    )
    cache.close()


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


async def test_split_and_own_moves_ownership_to_the_children(store, other):
    metadata = BundleMetadata(store)
    await metadata.create_namespace(NS, num_bundles=1)
    owner = OwnershipManager(store, broker_data(1))
    parent = f"{NS}/0x00000000_0xffffffff"
    await owner.try_acquire(parent)
    children = await split_and_own(metadata, owner, parent, [0x7FFFFFFF])
    assert [c.range for c in children] == ["0x00000000_0x7fffffff", "0x7fffffff_0xffffffff"]
    assert owner.owned_bundles() == sorted(str(c) for c in children)
    assert await other.exists(ownership_path(parent)) is None
    await check_coordination_invariants(
        store, [NS], beliefs={"broker-1:8080": owner.owned_bundles()}, require_all_owned=True
    )
