"""Taking a bundle is conditional on the namespace's ring: a broker that found the bundle in the ring,
then stalled (a ZooKeeper restart, a frozen process) while its owner split it, cannot take the split
parent afterwards -- it would serve the parent's topics while the owner serves the children's.

Found by the fault campaign: a lookup checked the ring, ZooKeeper restarted, and the acquisition
completed seconds later, after the split had committed and released the parent.
"""

from __future__ import annotations

import pytest

from brokerlb.coordination import BundleMetadata, OwnershipManager, split_and_own
from brokerlb.errors import LockBusyError, StaleBundleError

from .conftest import broker_data

NS = "pulsar/ring-guard"


async def test_a_stale_ring_check_cannot_take_a_split_parent(backend, store, other) -> None:
    mine = BundleMetadata(store)
    bundles = await mine.create_namespace(NS, num_bundles=1)
    parent = bundles.bundles[0]
    owner = OwnershipManager(store, broker_data(1), ring_guard=mine.ring_guard)
    assert (await owner.try_acquire(parent)).acquired
    theirs = BundleMetadata(other)
    checked = await theirs.ring_guard(parent)  # the other broker found the parent in the ring ...
    assert checked is not None

    async def stale_guard(_bundle: str):
        return checked  # ... and creates its node only now, with what it saw then

    late = OwnershipManager(other, broker_data(2), ring_guard=stale_guard)
    children = await split_and_own(mine, owner, parent, [0x80000000])
    assert len(children) == 2 and not owner.is_owned(parent)
    with pytest.raises(LockBusyError):
        await late.try_acquire(parent)
    assert not late.is_owned(parent)
    assert await store.get_or_none(f"/namespace/{parent}") is None
    # a fresh check says why: the parent is no longer in the ring
    fresh = OwnershipManager(other, broker_data(2), ring_guard=theirs.ring_guard)
    with pytest.raises(StaleBundleError):
        await fresh.try_acquire(parent)
    # and the children are taken only by their owner
    for child in children:
        assert not (await fresh.try_acquire(child)).acquired
    await owner.close()


async def test_without_the_guard_the_stale_broker_takes_the_parent(backend, store, other) -> None:
    """What the guard prevents (the unguarded manager, as before it): two owners of one range."""
    mine = BundleMetadata(store)
    parent = (await mine.create_namespace(NS, num_bundles=1)).bundles[0]
    owner = OwnershipManager(store, broker_data(1))
    assert (await owner.try_acquire(parent)).acquired
    await split_and_own(mine, owner, parent, [0x80000000])
    late = OwnershipManager(other, broker_data(2))
    assert (await late.try_acquire(parent)).acquired  # overlaps the children its owner holds
    await late.close()
    await owner.close()
