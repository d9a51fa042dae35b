"""Brokers that die or freeze: ephemerals vanish, leadership moves, a frozen leader stops acting.

On ZooKeeper each broker is a child process killed with SIGKILL or frozen with
SIGSTOP, on real time; on the embedded store each broker is in-process, its session
is crashed or paused, and time is a ManualClock, so the embedded variant asserts
exact instants (the nodes vanish exactly at the session timeout, not a millisecond
before). Nothing sleeps; every scenario ends with the coordination invariant check.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from brokerlb.clock import ManualClock
from brokerlb.coordination import MemoryMetadataStore, MemoryServer
from brokerlb.coordination.paths import BROKERS_ROOT, LEADER_PATH
from brokerlb.testing.coordination import check_coordination_invariants
from brokerlb.testing.waiting import eventually

from .members import InProcessMember, ProcessMember

NS = "failures/ns"


class Cluster:
    def __init__(self, kind: str, zk=None) -> None:
        self.kind = kind
        self.members = []
        if kind == "memory":
            self.session_timeout = 1.0
            self.clock = ManualClock(1_700_000_000_000)
            self.server = MemoryServer(f"failures-{uuid.uuid4().hex[:8]}", clock=self.clock)
        else:
            self.session_timeout = 2.0
            self.zk = zk
            self.chroot = f"/failures-{uuid.uuid4().hex[:8]}"

    async def setup(self) -> None:
        if self.kind == "memory":
            self.observer = MemoryMetadataStore(self.server, session_timeout=5)
        else:
            from brokerlb.coordination.zookeeper import ZooKeeperMetadataStore

            async with ZooKeeperMetadataStore(self.zk.hosts, session_timeout=5) as root:
                await root.ensure_path(self.chroot)
            self.observer = ZooKeeperMetadataStore(f"{self.zk.hosts}{self.chroot}", session_timeout=5)
        await self.observer.start()

    async def member(self, broker_id: str, bundles: int = 0):
        if self.kind == "memory":
            m = InProcessMember(
                self.server, broker_id, self.session_timeout, NS if bundles else None, bundles
            )
        else:
            m = ProcessMember(
                f"zk:{self.zk.hosts}{self.chroot}",
                broker_id,
                self.session_timeout,
                NS if bundles else None,
                bundles,
            )
        self.members.append(m)
        return await m.start()

    @property
    def manual(self) -> bool:
        return self.kind == "memory"

    def now(self) -> float:
        """The members' clock: the manual clock in process, the system-wide monotonic clock on ZooKeeper."""
        return self.clock.monotonic() if self.manual else time.monotonic()

    async def until(self, condition, message: str, timeout: float = 30.0):
        if self.manual:
            return await self.clock.run_until(condition, within=timeout, message=message)
        return await eventually(condition, timeout=timeout, interval=0.05, message=message)

    async def close(self) -> None:
        for m in self.members:
            await m.cleanup()
        await self.observer.close()


@pytest.fixture(params=["memory", pytest.param("zookeeper", marks=pytest.mark.zookeeper)])
async def cluster(request):
    c = Cluster(request.param, request.getfixturevalue("zk_server") if request.param == "zookeeper" else None)
    await c.setup()
    try:
        yield c
    finally:
        await c.close()


async def test_killed_broker_loses_its_registration_after_the_session_timeout(cluster):
    await cluster.member("b1:8080", bundles=16)
    observer = cluster.observer
    assert await observer.exists(f"{BROKERS_ROOT}/b1:8080") is not None
    killed_at = cluster.now()
    cluster.members[0].kill()

    async def gone():
        return await observer.exists(f"{BROKERS_ROOT}/b1:8080") is None

    if cluster.manual:  # exact: the server expires the session at the timeout, not before
        await cluster.clock.advance_and_settle(cluster.session_timeout - 0.001)
        assert await observer.exists(f"{BROKERS_ROOT}/b1:8080") is not None, "outlives the process"
        await cluster.clock.advance_and_settle(0.001)
        assert await gone()
    else:
        await cluster.until(gone, message="nodes vanish")
        # The session expires a session timeout after the server last heard from the client, which
        # pings every third of the timeout: never sooner than two thirds of it after the kill.
        assert cluster.now() - killed_at >= cluster.session_timeout * 0.5
    await check_coordination_invariants(observer, [NS])


async def test_killed_leader_is_replaced_when_its_session_expires(cluster):
    # Both start together and race for the leadership.
    members = await asyncio.gather(cluster.member("b1:8080", bundles=8), cluster.member("b2:8080", bundles=8))
    await cluster.until(lambda: sum(bool(m.of("leader")) for m in members) == 1, message="one leader")
    leader = next(m for m in members if m.of("leader"))
    survivor = next(m for m in members if m is not leader)
    killed_at = cluster.now()
    leader.kill()
    took_over = await survivor.wait_event("leader", timeout=cluster.session_timeout + 30)
    if cluster.manual:  # the dead leader's node goes with its session, and the survivor leads at once
        assert took_over["t"] - killed_at == pytest.approx(cluster.session_timeout)
    else:
        assert took_over["t"] - killed_at >= cluster.session_timeout * 0.5
    await survivor.wait_event("leader-work", after=took_over["t"])
    assert await cluster.observer.exists(f"{BROKERS_ROOT}/{leader.broker_id}") is None
    await check_coordination_invariants(cluster.observer, [NS])


async def test_paused_leader_knows_it_lost_leadership_and_does_no_leader_work(cluster):
    first = await cluster.member("b1:8080", bundles=4)
    second = await cluster.member("b2:8080")
    await first.wait_event("leader-work")
    paused_at = cluster.now()
    first.pause()
    took_over = await second.wait_event("leader", timeout=cluster.session_timeout + 30)
    if cluster.manual:  # the paused leader's node goes with its session, not before
        assert took_over["t"] - paused_at == pytest.approx(cluster.session_timeout)
    await second.wait_event("leader-work")
    resumed_at = cluster.now()
    first.resume()
    lost = await first.wait_event("lost-leadership", timeout=30)
    await first.wait_event("session", state="connected", after=resumed_at, timeout=30)  # its new session
    # Events arrive in the order they happen: a stray leader action after resuming would come before
    # the re-registration in the new session.
    await first.wait_event("registry-reregistered", after=resumed_at, timeout=30)

    work = first.of("leader-work")
    assert work, "the leader worked before it was paused"
    assert all(w["t_checked"] < resumed_at for w in work), "leader work after resuming"
    first_work_of_second = min(w["t_checked"] for w in second.of("leader-work"))
    assert max(w["t_checked"] for w in work) < first_work_of_second, "two leaders acted at the same time"
    assert "lease expired" in lost["reason"] or "session" in lost["reason"]
    assert any("lost leadership" in line for line in first.log), first.log[-10:]
    assert not [e for e in first.events if e["event"] == "leader" and e["t"] > resumed_at]
    leader = await cluster.observer.get(LEADER_PATH)
    assert b"b2:8080" in leader.data
    await check_coordination_invariants(cluster.observer, [NS])
