"""Where an unload hands its topic state: the leader's placement, waited for on the injected clock."""

from __future__ import annotations

import asyncio

from brokerlb.broker.handoff import LEADER_POLL, LEADER_WAIT, HandOffTarget, TopicHandOff
from brokerlb.broker.http.handoff_routes import place_for_hand_off
from brokerlb.clock import ManualClock
from brokerlb.ring import NamespaceBundles

BUNDLE = NamespaceBundles.create("t/ns", 4).bundles[1]


class Cluster:
    """Leadership as the hand-off sees it: whether this broker leads, and the leader's URL."""

    def __init__(self) -> None:
        self.leader: str | None = None
        self.placed: list[str] = []

    def is_leader(self) -> bool:
        return self.leader == "self"

    async def leader_url(self) -> str | None:
        return None  # no other broker leads in these tests

    async def place(self, bundle) -> HandOffTarget:
        self.placed.append(str(bundle))
        return HandOffTarget("broker-2:8080")


def hand_off(cluster: Cluster, clock: ManualClock) -> TopicHandOff:
    return TopicHandOff(
        None,  # type: ignore[arg-type]  # choosing a destination reads no topic
        self_id="broker-1:8080",
        self_url="http://broker-1:8080",
        admin=None,
        web_url_of=lambda broker: None,
        leader_url=cluster.leader_url,
        is_leader=cluster.is_leader,
        place=cluster.place,
        clock=clock,
    )


async def test_an_unload_waits_on_the_clock_for_the_next_leader_to_place_the_bundle() -> None:
    clock, cluster = ManualClock(), Cluster()
    choosing = asyncio.create_task(hand_off(cluster, clock).choose_destination(BUNDLE))
    await clock.advance_and_settle(LEADER_WAIT / 2)
    assert not choosing.done() and cluster.placed == []  # no leader yet: still waiting
    cluster.leader = "self"  # this broker is elected
    await clock.advance_and_settle(LEADER_POLL)
    assert await choosing == HandOffTarget("broker-2:8080") and cluster.placed == [str(BUNDLE)]


async def test_without_a_leader_the_unload_gives_up_after_the_leader_wait() -> None:
    clock, cluster = ManualClock(), Cluster()
    choosing = asyncio.create_task(hand_off(cluster, clock).choose_destination(BUNDLE))
    await clock.advance_and_settle(LEADER_WAIT - LEADER_POLL)
    assert not choosing.done()
    await clock.advance_and_settle(2 * LEADER_POLL)
    assert choosing.done() and await choosing is None and cluster.placed == []


async def test_heartbeat_namespaces_are_never_handed_over() -> None:
    heartbeat = NamespaceBundles.create("pulsar/c/broker-1:8080", 1).bundles[0]
    clock, cluster = ManualClock(), Cluster()
    cluster.leader = "self"
    assert await hand_off(cluster, clock).choose_destination(heartbeat) is None
    assert cluster.placed == []


class Placement:
    """The leader's placement as the hand-off asks it."""

    async def place(self, bundle) -> str:
        return "broker-3:8080"


async def test_a_bundle_is_handed_to_the_broker_its_placement_chooses() -> None:
    other = NamespaceBundles.create("t/ns", 4).bundles[2]
    assert await place_for_hand_off(Placement(), other) == HandOffTarget("broker-3:8080")
