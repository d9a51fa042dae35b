"""Regression for Apache Pulsar #26197 (ownership-generation races in the ownership cache).

Pulsar's report: a release of one generation of a bundle's ownership could remove the next
generation (``removeOwnership`` was blind to which acquisition it ended), and an acquisition could
be reported successful for a generation that was mid-release -- the broker then believed it owned a
bundle whose ownership node was gone, and another broker could take it: two owners.

brokerlb: each ownership node's generation is its creation transaction (``czxid``, the lock's
epoch). A release deletes only its own generation's node, and an acquisition of a bundle waits for
a release of it in progress.
"""

from __future__ import annotations

import asyncio

from brokerlb.coordination import EphemeralLock, OwnershipManager
from brokerlb.coordination.paths import ownership_path

from .conftest import broker_data

BUNDLE = "pulsar/ns-26197/0x00000000_0xffffffff"


async def test_a_release_deletes_only_its_own_generation(backend, store, other):
    """A lock whose node was replaced by another session's (a new generation) releases without
    touching it."""
    path = ownership_path(BUNDLE)
    old = EphemeralLock(store, path, b"gen")
    await old.acquire()
    first_epoch = old.epoch
    assert first_epoch is not None
    await store.delete(path)
    await other.create(path, b"theirs", ephemeral=True)
    # the release races the notification of the change: it must not take the new generation with it
    await old.release()
    node = await store.get_or_none(path)
    assert node is not None and node.data == b"theirs" and node.stat.czxid != first_epoch


async def test_an_acquisition_during_a_release_is_a_new_generation_that_stays(backend, store, other):
    manager = OwnershipManager(store, broker_data(1))
    first = await manager.try_acquire(BUNDLE)
    assert first.acquired
    for _round in range(5):
        _, again = await asyncio.gather(manager.release(BUNDLE), manager.try_acquire(BUNDLE))
        assert again.acquired
        node = await store.get_or_none(ownership_path(BUNDLE))
        # what the manager believes is what the store has: it owns the bundle, by a live node
        assert node is not None and store.owns(node.stat), "acquired a bundle whose node is gone"
        assert manager.serving(BUNDLE)
        # so nobody else can take it
        rival = OwnershipManager(other, broker_data(2))
        assert not (await rival.try_acquire(BUNDLE)).acquired
    await manager.close()
