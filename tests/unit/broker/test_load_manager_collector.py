"""The collector's pause after a leader refresh waits when placements wait for that refresh: after a
leader change the new leader's first refresh is what its clean-up of a dead broker's bundles waits
for, and its first pause is a full collection."""

from __future__ import annotations

import asyncio

from brokerlb.broker.leader import load_manager as load_manager_module
from brokerlb.broker.leader.load_manager import LoadManager
from brokerlb.clock import ManualClock
from brokerlb.coordination.load_data import LoadDataStore
from brokerlb.loadbalance.leader import ClusterInputs, Leader
from brokerlb.ring import NamespaceBundle
from brokerlb.testing.builders import broker, bundle_stats

from .test_load_manager_histories import _Inputs, _NoNamespaces

BUNDLE = "t/ns/0x00000000_0x80000000"


async def test_a_waiting_placement_goes_before_the_collectors_pause(store, monkeypatch) -> None:
    pauses: list[int] = []
    monkeypatch.setattr(load_manager_module, "after_leader_refresh", lambda: pauses.append(1))
    report = broker("b1:8080", bundles={BUNDLE: bundle_stats(msg_rate_in=1.0)})
    manager = LoadManager(
        Leader("b1:8080"),
        _Inputs(ClusterInputs(reports={"b1:8080": report})),
        bundles=_NoNamespaces(),
        load_data_store=LoadDataStore(store),
        clock=ManualClock(),
    )
    # a new leader has not refreshed yet: the placement waits for its first refresh
    placed = asyncio.ensure_future(manager.place(NamespaceBundle.parse("t/ns/0x80000000_0xffffffff")))
    while not manager._refresh_waiters:
        await asyncio.sleep(0)

    await manager.refresh()

    assert await placed == "b1:8080"
    assert pauses == []  # left to the next refresh
    await manager.refresh()
    assert pauses == [1]
    await manager.refresh()  # nobody waiting: every refresh pauses as before
    assert pauses == [1, 1]


async def test_the_pause_is_left_to_the_next_refresh_once_only(store, monkeypatch) -> None:
    pauses: list[int] = []
    monkeypatch.setattr(load_manager_module, "after_leader_refresh", lambda: pauses.append(1))
    manager = LoadManager(
        Leader("b1:8080"),
        _Inputs(ClusterInputs(reports={"b1:8080": broker("b1:8080")})),
        bundles=_NoNamespaces(),
        load_data_store=LoadDataStore(store),
        clock=ManualClock(),
    )
    for _ in range(2):  # placements wait for both refreshes: the second pauses all the same
        waiter = asyncio.ensure_future(manager._next_refresh(30.0))
        while not manager._refresh_waiters:
            await asyncio.sleep(0)
        await manager.refresh()
        await waiter
    assert pauses == [1]
