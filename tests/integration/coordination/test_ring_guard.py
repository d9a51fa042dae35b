"""An assignment is conditional on the namespace's ring, and a split commits the ring with the records.

A broker that found a bundle in the ring, then stalled (a ZooKeeper restart, a frozen process) while
the bundle's owner split it, cannot assign the split parent afterwards -- the parent would be served
beside the children. Found by the fault campaign on the ephemeral ownership nodes of the last round
(a lookup checked the ring, ZooKeeper restarted, and the acquisition completed seconds later); with
one record per bundle the split commits the parent Deleted and the children Owned in the same
transaction as the ring, and an assignment of a bundle that has no record yet is conditional on the
ring it was found in.
"""

from __future__ import annotations

import pytest

from brokerlb.coordination import BundleMetadata, CheckOp, OwnershipTable
from brokerlb.coordination.ownership_table import Guard
from brokerlb.coordination.paths import local_policies_path
from brokerlb.errors import InvalidTransitionError, RecordConflictError, StaleBundleError
from brokerlb.ownership import BundleState
from brokerlb.ownership.events import RecordChanged, SessionChanged, Write
from brokerlb.ownership.machine import OwnershipMachine
from brokerlb.ring import NamespaceBundles

NS = "pulsar/ring-guard"
S = BundleState


async def owner_of_all(
    table: OwnershipTable, machine: OwnershipMachine, bundles: list[str], broker: str
) -> None:
    """Assign and take each bundle (the machine answers the Assigning with Owned)."""
    for bundle in bundles:
        await table.write(machine.assign(bundle, broker, at_ms=0))
        (take,) = [i for i in await feed(table, machine, bundle) if isinstance(i, Write)]
        await table.write(take)
        await feed(table, machine, bundle)


async def changed(table: OwnershipTable, bundle: str) -> RecordChanged:
    stored = await table.read(bundle)
    assert stored is not None
    return RecordChanged(
        bundle=bundle, record=stored.record, stat_version=stored.stat_version, zxid=stored.zxid, at_ms=0
    )


async def feed(table: OwnershipTable, machine: OwnershipMachine, bundle: str) -> list[object]:
    return machine.handle(await changed(table, bundle))


def ring_guard(version: int) -> Guard:
    return Guard(CheckOp(local_policies_path(NS), version), lambda: StaleBundleError("the ring changed"))


async def test_a_stale_view_cannot_assign_a_split_parent_or_a_bundle_of_an_older_ring(
    backend, store, other
) -> None:
    metadata = BundleMetadata(store)
    parent = str((await metadata.create_namespace(NS, num_bundles=1)).bundles[0])
    mine, theirs = OwnershipTable(store), OwnershipTable(other)
    owner = OwnershipMachine(me="b1")
    owner.handle(SessionChanged(session=store.session_id, at_ms=0))
    await owner_of_all(mine, owner, [parent], "b1")
    # the other broker's view of the parent: Owned, at the version it read, and the ring it found
    stale = OwnershipMachine(me="b2")
    stale.handle(await changed(theirs, parent))
    ring_version = (await other.get(local_policies_path(NS))).stat.version

    # the owner splits: Splitting, then the commit (ring + parent Deleted + children Owned) at once
    children = [str(c) for c in NamespaceBundles.create(NS, 2)]
    await mine.write(owner.split(parent, children, at_ms=1))
    await feed(mine, owner, parent)
    op, _ring = await metadata.ring_change(NS, lambda current: current.split(parent, [0x7FFFFFFF]))
    await mine.commit(owner.split_commit(parent, at_ms=2), ops=[op])
    assert (await mine.read(parent)).record.state is S.DELETED

    # the stale broker wants to unload the parent (its view says Owned): its compare-and-set loses
    with pytest.raises(RecordConflictError):
        await theirs.write(stale.unload(parent, "b2", at_ms=3))
    # a fresh view refuses at once: a Deleted bundle is never assigned or overridden
    stale.handle(await changed(theirs, parent))
    with pytest.raises(InvalidTransitionError):
        stale.assign(parent, "b2", at_ms=4)
    with pytest.raises(InvalidTransitionError):
        stale.override(parent, "b2", other.session_id, version=stale.record(parent).version, at_ms=4)

    # a bundle without a record, found in an older ring: the assignment's ring guard refuses it
    quarter = f"{NS}/0x00000000_0x3fffffff"
    with pytest.raises(StaleBundleError):
        await theirs.write(
            OwnershipMachine().assign(quarter, "b2", at_ms=5), guards=[ring_guard(ring_version)]
        )
    assert await theirs.read(quarter) is None
    for child in children:
        record = (await theirs.read(child)).record
        assert record.state is S.OWNED and record.dst == "b1"
