"""A release or an acquisition the metadata store did not answer.

The release (found by the fault campaign):

A broker's ZooKeeper connection dropped while it deleted the ownership node of a bundle it was
unloading. The failed release had already taken the lock out of the ownership manager's books, so
nothing -- not the ownership watchdog, not a retry -- would ever delete the disabled node that its
live session kept: the bundle would stay unavailable to every broker until the session ended (the
campaign saw a bundle disabled for 39 s). Now the bundle stays owned, disabled, until a release
succeeds.

The acquisition (suspected behind a subscribe that timed out in the end-to-end test under load): the
create was applied and its answer lost, so the node is the live session's but the manager does
not hold it. Every lookup names the broker, which refuses the clients, until the session ends;
the ownership watchdog now deletes such a node when it gives up on the assignment.
"""

from __future__ import annotations

import pytest

from brokerlb.coordination import OwnershipEventKind, OwnershipManager
from brokerlb.coordination.paths import ownership_path
from brokerlb.errors import ConnectionLossError, OperationTimeoutError

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
    with pytest.raises(ConnectionLossError):
        await manager.release(BUNDLE)
    assert manager.is_disabled(BUNDLE) and OwnershipEventKind.RELEASED not in events
    node = await other.get_or_none(ownership_path(BUNDLE))
    assert node is not None and store.owns(node.stat)  # still there: nobody else can take it yet
    monkeypatch.setattr(store, "delete", real_delete)
    await manager.release(BUNDLE)
    assert await other.get_or_none(ownership_path(BUNDLE)) is None
    assert not manager.is_disabled(BUNDLE) and events[-1] is OwnershipEventKind.RELEASED


async def test_a_node_an_unanswered_acquisition_created_is_deleted_only_by_its_session(
    backend, store, other, monkeypatch
):
    """The acquisition's create was applied but its answer lost, and the store did not come back in
    time for a second look: the node is this session's, the manager does not hold it.
    ``delete_unheld`` removes exactly such a node -- not a held one, not another session's (the
    ownership watchdog calls it when it gives up on the assignment)."""
    manager = OwnershipManager(store, broker_data(1))
    path = ownership_path(BUNDLE)

    async def not_back(timeout=None):
        raise OperationTimeoutError("the store did not come back")

    restore = drop_create_answers(monkeypatch, store)
    monkeypatch.setattr(store, "wait_connected", not_back)
    with pytest.raises(OperationTimeoutError):
        await manager.try_acquire(BUNDLE)
    restore()
    node = await other.get_or_none(path)
    assert node is not None and store.owns(node.stat) and not manager.is_owned(BUNDLE)
    other_manager = OwnershipManager(other, broker_data(2))
    assert not await other_manager.delete_unheld(BUNDLE)  # not its session's node
    assert await manager.delete_unheld(BUNDLE)
    assert await other.get_or_none(path) is None
    assert (await manager.try_acquire(BUNDLE)).acquired
    assert not await manager.delete_unheld(BUNDLE)  # held: released only by a release
    assert await other.get_or_none(path) is not None


async def test_an_acquisition_whose_answer_was_lost_adopts_its_node_once_the_store_answers(
    backend, store, other, monkeypatch
):
    manager = OwnershipManager(store, broker_data(1))
    dropped = []
    drop_create_answers(monkeypatch, store, dropped, once=True)
    result = await manager.try_acquire(BUNDLE)
    assert dropped and result.acquired and manager.is_owned(BUNDLE)
    node = await other.get_or_none(ownership_path(BUNDLE))
    assert node is not None and store.owns(node.stat)
    await manager.release(BUNDLE)
    assert await other.get_or_none(ownership_path(BUNDLE)) is None


def drop_create_answers(monkeypatch, store, dropped=None, *, once=False):
    """Make ``store``'s creates (plain and in a ``multi``) apply, then raise a connection loss (the
    answer lost); ``once``: only the first. Returns a function that restores the store."""
    real_create, real_multi = store.create, store.multi
    dropped = [] if dropped is None else dropped

    def lose(what):
        if not (once and dropped):
            dropped.append(what)
            raise ConnectionLossError(f"connection lost ({what})")

    async def create(node_path, *args, **kwargs):
        result = await real_create(node_path, *args, **kwargs)
        lose(node_path)
        return result

    async def multi(ops, *args, **kwargs):
        result = await real_multi(ops, *args, **kwargs)
        lose("multi")
        return result

    monkeypatch.setattr(store, "create", create)
    monkeypatch.setattr(store, "multi", multi)

    def restore():
        monkeypatch.setattr(store, "create", real_create)
        monkeypatch.setattr(store, "multi", real_multi)

    return restore
