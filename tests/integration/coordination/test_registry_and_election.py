"""Broker registry, ephemeral locks and leader election -- on the embedded store and on ZooKeeper.

On the embedded store time is a ManualClock (see ``conftest.py``): lease deadlines and
heartbeats are asserted at exact instants. Nothing here sleeps: tests wait for events
or conditions (``backend.until``).
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from brokerlb.coordination import (
    BrokerRegistry,
    CreateOp,
    DeleteOp,
    ElectionState,
    EphemeralLock,
    LeaderBroker,
    LeaderElection,
    RegistryEventKind,
)
from brokerlb.coordination.paths import BROKERS_ROOT, LEADER_PATH
from brokerlb.errors import LeadershipLostError, LockBusyError
from brokerlb.testing.waiting import eventually

from .conftest import MemoryBackend, events_delivered


def candidate(n: int) -> LeaderBroker:
    return LeaderBroker(f"broker-{n}:8080", f"http://broker-{n}:8080")


# --------------------------------------------------------------------------- ephemeral lock


async def test_lock_rules(store, other):
    mine = EphemeralLock(store, "/locks/a", b"me")
    await mine.acquire()
    assert mine.held and mine.version == 0
    with pytest.raises(LockBusyError) as err:
        await EphemeralLock(other, "/locks/a", b"someone else").acquire()
    assert err.value.owner_session == store.session_id
    await mine.update(b"me, updated")
    assert (await other.get("/locks/a")).data == b"me, updated"
    await mine.release()
    assert await other.exists("/locks/a") is None and mine.lost.is_set()


async def test_lock_takes_over_its_own_stale_value(store, other):
    """Same value from an earlier session = an earlier incarnation of us: Pulsar deletes it and takes over."""
    old = EphemeralLock(store, "/locks/b", b"same")
    await old.acquire()
    old.abandon()  # the old process died; its session has not expired yet
    again = EphemeralLock(other, "/locks/b", b"same")
    await again.acquire()
    stat = await other.exists("/locks/b")
    assert other.owns(stat)


async def test_live_twins_with_the_same_value_do_not_fight(store, other):
    """Pulsar's lock would ping-pong here; ours yields during revalidation."""
    first = EphemeralLock(store, "/locks/twin", b"same")
    await first.acquire()
    second = EphemeralLock(other, "/locks/twin", b"same")
    await second.acquire()  # takes over by the stale-node rule
    await eventually(lambda: first.lost.is_set(), message="first yields")
    # A lost lock stops watching and never touches the node again, so there is nothing to wait for.
    assert first.state.value == "released"
    assert second.held and other.owns(await other.exists("/locks/twin"))


async def test_lock_refuses_a_persistent_node(store):
    await store.create("/locks/c", b"", make_parents=True)
    with pytest.raises(LockBusyError, match="non-ephemeral"):
        await EphemeralLock(store, "/locks/c", b"x").acquire()


# --------------------------------------------------------------------------- registry


async def test_registry_membership_events(store, other):
    watcher = await BrokerRegistry(store).start()
    events = []
    watcher.add_listener(events.append)
    joiner = await BrokerRegistry(other).start()
    await joiner.register("b1:8080", {"webServiceUrl": "http://b1:8080", "numBundles": 0})
    await watcher.wait_for(lambda ids: ids == ["b1:8080"])
    assert watcher.broker("b1:8080").web_service_url == "http://b1:8080"
    await joiner.update({"webServiceUrl": "http://b1:8080", "numBundles": 3})
    await eventually(
        lambda: (r := watcher.report("b1:8080")) is not None and r.num_bundles == 3, message="update seen"
    )
    await joiner.unregister()
    await watcher.wait_for(lambda ids: ids == [])
    kinds = [e.kind for e in events]
    assert kinds[0] is RegistryEventKind.JOINED and RegistryEventKind.UPDATED in kinds
    assert kinds[-1] is RegistryEventKind.LEFT
    assert await store.exists(f"{BROKERS_ROOT}/b1:8080") is None


async def test_second_registration_from_another_session_is_refused(store, other):
    first = await BrokerRegistry(store).start()
    await first.register("dup:8080", {"startTimestamp": 1})
    second = await BrokerRegistry(other).start()
    with pytest.raises(LockBusyError, match="already registered") as err:
        await second.register("dup:8080", {"startTimestamp": 2})
    assert err.value.owner_session == store.session_id
    assert first.is_registered and not second.is_registered


async def test_restarted_broker_waits_for_its_stale_registration(backend, store, other, caplog):
    caplog.set_level(logging.WARNING, logger="brokerlb.coordination.registry")
    await (await BrokerRegistry(store).start()).register("r:8080", {"startTimestamp": 1})
    second = await BrokerRegistry(other).start()
    registering = asyncio.create_task(second.register("r:8080", {"startTimestamp": 2}, wait_for_stale=10))
    await eventually(lambda: "waiting up to" in caplog.text, message="the second registration waits")
    assert not registering.done()
    await store.close()  # the old process dies: its node goes with its session
    await asyncio.wait_for(registering, 30)
    assert second.is_registered


async def test_registry_reregisters_after_session_loss(backend, store, other):
    registry = await BrokerRegistry(store).start()
    events = []
    registry.add_listener(events.append)
    await registry.register("s:8080", {"n": 1})
    observer = await BrokerRegistry(other).start()
    await backend.expire(store)
    await backend.until(
        lambda: RegistryEventKind.REREGISTERED in [e.kind for e in events], message="re-registration"
    )
    stat = await other.exists(f"{BROKERS_ROOT}/s:8080")
    assert stat is not None and stat.ephemeral_owner == store.session_id
    assert registry.is_registered
    await observer.wait_for(lambda ids: ids == ["s:8080"])


async def test_registration_lost_when_another_session_took_the_id(backend, store, other):
    registry = await BrokerRegistry(store).start()
    events = []
    registry.add_listener(events.append)
    await registry.register("t:8080", {"n": 1})
    path = f"{BROKERS_ROOT}/t:8080"
    # The other session deletes our node and puts its own (an operator error, or a twin broker).
    await other.multi([DeleteOp(path), CreateOp(path, b'{"n": 2}', ephemeral=True)])
    await backend.until(
        lambda: RegistryEventKind.REGISTRATION_LOST in [e.kind for e in events], message="registration lost"
    )
    assert not registry.is_registered


# --------------------------------------------------------------------------- election


async def start_candidates(backend, n):
    stores = [await backend.new_store() for _ in range(n)]
    elections = [await LeaderElection(s, candidate(i)).start() for i, s in enumerate(stores)]
    return stores, elections


def leaders(elections):
    return [e for e in elections if e.is_leader]


def settled(elections) -> bool:
    """One leader, everyone else following it, nobody in the middle of an election."""
    current = leaders(elections)
    if len(current) != 1:
        return False
    leader = current[0]
    return all(e.state in (ElectionState.LEADING, ElectionState.FOLLOWING) for e in elections) and all(
        e.leader == leader.candidate for e in elections
    )


async def test_exactly_one_leader_and_everyone_knows_it(backend):
    stores, elections = await start_candidates(backend, 3)
    await backend.until(lambda: settled(elections), message="one leader, known to all")
    leader = leaders(elections)[0]
    node = await stores[0].get(LEADER_PATH)
    assert LeaderBroker.from_bytes(node.data) == leader.candidate
    assert {e.state for e in elections if e is not leader} == {ElectionState.FOLLOWING}
    assert await elections[1].get_leader() == leader.candidate


async def test_closing_the_leader_hands_over_at_once(backend):
    _stores, elections = await start_candidates(backend, 2)
    first = leaders(elections)[0]
    await first.close()
    second = [e for e in elections if e is not first][0]
    await second.wait_for_leadership(timeout=30)
    assert second.epoch == 1


async def test_leader_losing_its_session_stops_leader_work_and_says_so(backend, caplog):
    stores, elections = await start_candidates(backend, 2)
    first = leaders(elections)[0]
    follower = [e for e in elections if e is not first][0]
    lease = first.lease
    lease.check()
    work_started, work_cancelled = asyncio.Event(), asyncio.Event()

    async def leader_work(current):
        current.check()
        work_started.set()
        try:
            await asyncio.Event().wait()  # leader work runs until leadership ends
        except asyncio.CancelledError:
            work_cancelled.set()
            raise

    first.run_while_leader(leader_work)
    await asyncio.wait_for(work_started.wait(), 30)
    caplog.set_level(logging.WARNING, logger="brokerlb.coordination.election")
    await backend.expire(stores[elections.index(first)])
    await backend.until(work_cancelled.is_set, message="leader work cancelled")
    assert not lease.valid
    with pytest.raises(LeadershipLostError):
        lease.check()
    assert any("lost leadership" in r.getMessage() for r in caplog.records)
    # Someone leads again: the follower, or the old leader in its new session with a new epoch.
    await backend.until(lambda: settled(elections), message="a new leader, known to all")
    (now,) = leaders(elections)
    assert now is follower or (now is first and first.epoch == 2)
    assert not lease.valid


async def test_stale_leader_node_of_a_previous_session_is_replaced(backend, store, other):
    """A broker restarted within its session timeout finds its own old node: it deletes it and leads."""
    crashed = await LeaderElection(store, candidate(7)).start()
    assert crashed.is_leader
    crashed.abandon()  # the process is gone; its session (and node) would live until the timeout
    restarted = await LeaderElection(other, candidate(7)).start()
    assert restarted.is_leader
    assert other.owns(await other.exists(LEADER_PATH))


async def test_live_twins_with_the_same_identity_settle_on_one_leader(backend, store, other, caplog):
    """Two live candidates with one identity (a misconfiguration): the stale-node rule deletes the
    twin's node at most once per try, so they settle on one leader instead of taking it from each
    other until the election gives up (the flake CI once caught)."""
    caplog.set_level(logging.WARNING, logger="brokerlb.coordination.election")
    first = await LeaderElection(store, candidate(7)).start()
    twin = await LeaderElection(other, candidate(7)).start()
    await backend.until(lambda: settled([first, twin]), message="one leader, the twin following")
    (leader,) = leaders([first, twin])
    await events_delivered(backend, first.store, twin.store)
    await events_delivered(backend, twin.store, first.store)
    assert settled([first, twin]) and leaders([first, twin]) == [leader]
    assert leader.store.owns(await leader.store.exists(LEADER_PATH))
    assert not any("kept changing" in r.getMessage() for r in caplog.records)
    losses = [r for r in caplog.records if "lost leadership" in r.getMessage()]
    assert len(losses) <= 1, [r.getMessage() for r in losses]
    await twin.close()
    await first.close()


async def test_lease_has_a_deadline_renewed_by_heartbeats(backend):
    stores, elections = await start_candidates(backend, 1)
    election = elections[0]
    lease = election.lease
    deadline = election._deadline
    await backend.until(lambda: election._deadline > deadline, message="a heartbeat renewed the lease")
    assert lease.valid


async def test_lease_deadline_and_heartbeats_at_exact_instants():
    """On the manual clock: the lease lasts 0.8 x the session timeout from the confirming request,
    a heartbeat every 0.25 x extends it, and a leader whose heartbeats go unanswered stops leading
    exactly at its deadline -- before its session (and node) can expire at 1.0 x."""
    backend = MemoryBackend()
    try:
        store, other = await backend.new_store(), await backend.new_store()
        clock, timeout = backend.clock, backend.session_timeout
        election = await LeaderElection(store, candidate(1)).start()
        follower = await LeaderElection(other, candidate(2)).start()
        t0 = clock.monotonic()
        lease = election.lease
        assert election._deadline == pytest.approx(t0 + 0.8 * timeout)
        await clock.advance_and_settle(0.25 * timeout)  # the first heartbeat
        assert election._deadline == pytest.approx(t0 + 0.25 * timeout + 0.8 * timeout)
        await clock.advance_and_settle(2 * timeout)  # heartbeats keep it going well past 0.8 x
        assert lease.valid and election._deadline == pytest.approx(clock.monotonic() + 0.8 * timeout)
        store.pause()  # frozen: heartbeats go unanswered, the server hears nothing
        paused_at, deadline = clock.monotonic(), election._deadline
        await clock.advance_and_settle(deadline - clock.monotonic() - 0.001)
        assert lease.valid and election.is_leader
        await clock.advance_and_settle(0.001)
        assert not lease.valid and not election.is_leader and "lease expired" in lease.lost_reason
        assert not follower.is_leader  # the paused leader's session is still alive on the server
        await clock.advance_and_settle(paused_at + timeout - clock.monotonic() - 0.001)
        assert not follower.is_leader
        await clock.advance_and_settle(0.001)  # the session expires: its node goes
        assert follower.is_leader and follower.epoch == 1
        await follower.close()
        await election.close()
    finally:
        await backend.close()
