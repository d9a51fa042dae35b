"""The one seam of the leader's writes (:class:`~brokerlb.broker.leader.leader_fence.LeaderFence`) on
the embedded store: under an epoch that is no longer current, every kind of leader write is refused
and changes nothing; under the current one it goes through."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from brokerlb.broker.leader.leader_fence import LeaderFence
from brokerlb.coordination import LoadDataStore, OwnershipTable, current_fencing_token
from brokerlb.coordination.election import epoch_path_of
from brokerlb.coordination.paths import LEADER_PATH
from brokerlb.coordination.store import SetOp
from brokerlb.errors import ConflictError, LeadershipLostError
from brokerlb.ownership import BundleState
from brokerlb.ownership.machine import OwnershipMachine

BUNDLE = "t/ns/0x00000000_0x80000000"
OTHER = "t/ns/0x80000000_0xffffffff"


@dataclass
class Election:
    """Stands for the election: this broker's latest leadership's epoch, kept after it ended."""

    last_fencing_token: int | None


async def _new_leadership(store) -> int:
    """Another leader is elected: the epoch node is written again (as the election's transaction does)."""
    path = epoch_path_of(LEADER_PATH)
    if await store.exists(path) is None:
        await store.create(path, b"", make_parents=True)
    else:
        await store.set(path, b"")
    token = await current_fencing_token(store)
    assert token is not None
    return token


async def test_every_kind_of_leader_write_under_a_superseded_epoch_is_refused(store) -> None:
    outcomes: list[tuple[str, int | None, str]] = []
    former = await _new_leadership(store)
    fence = LeaderFence(store, Election(former), lambda b, t, o, at_ns=None: outcomes.append((b, t, o)))
    table = await OwnershipTable(store).start()
    load = LoadDataStore(store)
    machine = OwnershipMachine()
    await load.write_bundle_data(BUNDLE, {"topics": 1}, leader_epoch=fence.epoch())
    await store.create("/ring", b"before")
    current = await _new_leadership(store)  # the former leader is superseded; its fence keeps its epoch
    assert fence.epoch() == former != current

    # a lookup's assignment, an override of the monitor (the guard of the epoch the leader holds now)
    with pytest.raises(LeadershipLostError, match=f"superseded leader \\(epoch {former}\\)"):
        await table.write(machine.assign(BUNDLE, "b1", at_ms=0), guards=fence.current())
    # a move, a split's or a merge's commit: records and the ring in one transaction
    with pytest.raises(LeadershipLostError):
        await table.commit(
            [machine.assign(BUNDLE, "b1", at_ms=0), machine.assign(OTHER, "b1", at_ms=0)],
            ops=[SetOp("/ring", b"after")],
            guards=fence.guards(former),
        )
    # the split's and the merge's delete of a bundle's stored data, the persisted load data
    with pytest.raises(ConflictError):
        await load.delete_bundle_data(BUNDLE, leader_epoch=fence.epoch())
    with pytest.raises(ConflictError):
        await load.write_bundle_data(BUNDLE, {"topics": 9}, leader_epoch=fence.epoch())
    # the leader's own move, recorded as refused
    with pytest.raises(LeadershipLostError):
        await fence.guarded(
            BUNDLE,
            former,
            "unload",
            lambda: table.write(machine.assign(BUNDLE, "b1", at_ms=0), guards=fence.guards(former)),
        )
    # a leader's command to another broker (a split over REST): refused before it acts (409)
    with pytest.raises(ConflictError, match=f"epoch {former}"):
        await fence.admit(BUNDLE, former, "split")

    assert await table.read(BUNDLE) is None and await table.read(OTHER) is None
    assert (await store.get("/ring")).data == b"before"
    assert await load.read_bundle_data(BUNDLE) == {"topics": 1}
    assert fence.refused == 2
    assert [o for _, _, o in outcomes] == [
        f"refused: Refused a write of a superseded leader (epoch {former})",
        f"refused: leader epoch {former} is not current ({current})",
    ]

    # the current leadership's writes go through the same seam
    fresh = LeaderFence(store, Election(current))
    await fresh.admit(BUNDLE, current, "split")
    await table.commit(
        [machine.assign(BUNDLE, "b1", at_ms=0)], ops=[SetOp("/ring", b"after")], guards=fresh.current()
    )
    await load.delete_bundle_data(BUNDLE, leader_epoch=fresh.epoch())
    stored = await table.read(BUNDLE)
    assert stored is not None and stored.record.state is BundleState.ASSIGNING
    assert (await store.get("/ring")).data == b"after"
    assert await load.read_bundle_data(BUNDLE) is None


async def test_a_write_that_is_not_a_leaders_has_no_condition(store) -> None:
    fence = LeaderFence(store, Election(None))
    assert fence.epoch() is None and fence.current() == [] and fence.guards(None) == []
    await fence.admit(BUNDLE, None, "unload")  # an operator's command: not fenced
    assert fence.refused == 0
