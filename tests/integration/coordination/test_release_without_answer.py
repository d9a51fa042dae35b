"""A release the metadata store did not answer (found by the fault campaign).

A broker's ZooKeeper connection dropped while it deleted the ownership node of a bundle it was
unloading. The failed release had already taken the lock out of the ownership manager's books, so
nothing -- not the ownership watchdog, not a retry -- would ever delete the disabled node that its
live session kept: the bundle would stay unavailable to every broker until the session ended (the
campaign saw a bundle disabled for 39 s). Now the bundle stays owned, disabled, until a release
succeeds.
"""

from __future__ import annotations

from brokerlb.coordination import OwnershipEventKind, OwnershipManager
from brokerlb.coordination.paths import ownership_path
from brokerlb.errors import ConnectionLossError

from .conftest import broker_data

BUNDLE = "pulsar/ns-release/0x00000000_0xffffffff"


async def test_a_release_the_store_did_not_answer_keeps_the_bundle_in_the_books(
    backend, store, other, monkeypatch
):
    manager = OwnershipManager(store, broker_data(1))
    events = []
    manager.add_listener(lambda e: events.append(e.kind))
    assert (await manager.try_acquire(BUNDLE)).acquired
    await manager.disable(BUNDLE)
    real_delete = store.delete

    async def dropped(path, *, version=-1):
        raise ConnectionLossError(f"connection lost (path {path})")

    monkeypatch.setattr(store, "delete", dropped)
    try:
        await manager.release(BUNDLE)
    except ConnectionLossError:
        pass
    else:
        raise AssertionError("the release should have failed")
    assert manager.is_disabled(BUNDLE) and OwnershipEventKind.RELEASED not in events
    node = await other.get_or_none(ownership_path(BUNDLE))
    assert node is not None and store.owns(node.stat)  # still there: nobody else can take it yet
    monkeypatch.setattr(store, "delete", real_delete)
    await manager.release(BUNDLE)
    assert await other.get_or_none(ownership_path(BUNDLE)) is None
    assert not manager.is_disabled(BUNDLE) and events[-1] is OwnershipEventKind.RELEASED
