"""Fault injection of the embedded store: what a broker sees when its session misbehaves.

The server runs on a ManualClock: timeouts, delays and expiries happen exactly when the
test moves the clock past them (a millisecond before, nothing has happened), and nothing
sleeps.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from brokerlb.clock import ManualClock
from brokerlb.coordination import EventType, MemoryMetadataStore, MemoryServer, SessionState
from brokerlb.errors import ConnectionLossError, OperationTimeoutError, StoreClosedError


@pytest.fixture
def clock():
    return ManualClock(1_700_000_000_000)


@pytest.fixture
def server(clock):
    return MemoryServer(f"faults-{uuid.uuid4().hex[:8]}", clock=clock)


async def pair(server, timeout=0.3):
    a = MemoryMetadataStore(server, session_timeout=timeout)
    b = MemoryMetadataStore(server, session_timeout=timeout)
    await a.start()
    await b.start()
    return a, b


async def test_short_drop_keeps_the_session(server, clock):
    a, b = await pair(server)
    states = []
    a.add_session_listener(lambda e: states.append(e.state))
    await a.create("/e", b"", ephemeral=True)
    sid = a.session_id
    fired = []
    await a.get("/e", watch=fired.append)
    a.drop_connection()
    assert a.session_state is SessionState.SUSPENDED
    with pytest.raises(ConnectionLossError) as err:
        await a.get("/e")
    assert err.value.retriable
    await clock.settle()
    assert [e.type for e in fired] == [EventType.NONE]  # watches are dropped with the connection
    a.restore_connection()
    assert states == [SessionState.SUSPENDED, SessionState.CONNECTED] and a.session_id == sid
    assert await b.exists("/e") is not None


async def test_long_drop_expires_the_session(server, clock):
    a, b = await pair(server)
    await a.create("/e", b"", ephemeral=True)
    states = []
    a.add_session_listener(lambda e: states.append(e.state))
    a.drop_connection()
    await clock.advance_and_settle(0.299)
    assert await b.exists("/e") is not None  # not yet: the server waits for the session timeout
    await clock.advance_and_settle(0.001)
    assert await b.exists("/e") is None  # the server expired a's session
    a.restore_connection()
    assert states == [SessionState.SUSPENDED, SessionState.LOST, SessionState.CONNECTED]
    assert a.connected and a.session_id in server.live_sessions()


async def test_drop_with_duration_restores_by_itself(server, clock):
    a, _ = await pair(server, timeout=5)
    sid = a.session_id
    a.drop_connection(duration=0.05)
    await clock.advance_and_settle(0.049)
    assert a.session_state is SessionState.SUSPENDED
    await clock.advance_and_settle(0.001)
    assert a.session_state is SessionState.CONNECTED and a.session_id == sid


async def test_crash_is_noticed_after_the_session_timeout(server, clock):
    a, b = await pair(server)
    await a.create("/broker", b"", ephemeral=True)
    a.crash()
    with pytest.raises(StoreClosedError):
        await a.get("/broker")
    await clock.advance_and_settle(0.299)
    assert await b.exists("/broker") is not None
    await clock.advance_and_settle(0.001)
    assert await b.exists("/broker") is None


async def test_pause_past_the_timeout_loses_the_session(server, clock):
    a, b = await pair(server)
    await a.create("/leader", b"", ephemeral=True)
    states = []
    a.add_session_listener(lambda e: states.append(e.state))
    a.pause()
    blocked = asyncio.create_task(a.get("/leader"))
    await clock.advance_and_settle(0.299)
    assert await b.exists("/leader") is not None
    await clock.advance_and_settle(0.001)
    assert not blocked.done()  # a paused process does nothing
    assert await b.exists("/leader") is None
    assert states == []  # nor hears anything
    a.resume()
    with pytest.raises(ConnectionLossError):
        await blocked  # it was issued in the old session
    assert states == [SessionState.SUSPENDED, SessionState.LOST, SessionState.CONNECTED]


async def test_short_pause_is_invisible(server, clock):
    a, b = await pair(server, timeout=5)
    a.pause()
    task = asyncio.create_task(a.create("/x", b""))
    await clock.advance_and_settle(4.9)
    assert not task.done() and await b.exists("/x") is None
    a.resume()
    assert await task == "/x"
    assert a.session_state is SessionState.CONNECTED


async def test_events_wait_while_paused(server, clock):
    a, b = await pair(server, timeout=5)
    await a.create("/n", b"")
    fired = []
    await a.get("/n", watch=fired.append)
    a.pause()
    await b.set("/n", b"changed")
    await clock.advance_and_settle(1.0)
    assert fired == []
    a.resume()
    await clock.settle()
    assert [e.type for e in fired] == [EventType.CHANGED]


async def test_operation_delay(server, clock):
    a, _ = await pair(server, timeout=5)
    a.set_operation_delay(0.1)
    op = asyncio.create_task(a.exists("/"))
    await clock.advance_and_settle(0.099)
    assert not op.done()
    await clock.advance_and_settle(0.001)
    assert op.done() and await op is not None
    a.set_operation_delay(0)
    assert await a.exists("/") is not None  # no delay: runs at once
    assert clock.pending() == 0


async def test_operations_time_out(server, clock):
    a = MemoryMetadataStore(server, session_timeout=5, operation_timeout=0.05)
    await a.start()
    a.pause()
    op = asyncio.create_task(a.exists("/"))
    await clock.advance_and_settle(0.049)
    assert not op.done()
    await clock.advance_and_settle(0.001)
    with pytest.raises(OperationTimeoutError) as err:
        await op
    assert err.value.retriable
    a.resume()


async def test_named_servers_are_shared_in_process():
    name = f"shared-{uuid.uuid4().hex[:8]}"
    try:
        a, b = MemoryMetadataStore(name), MemoryMetadataStore(name)
        await a.start()
        await b.start()
        await a.create("/hello", b"world")
        assert (await b.get("/hello")).data == b"world"
        assert a.session_id != b.session_id
        await a.close()
        await b.close()
    finally:
        MemoryServer.forget(name)


async def test_session_ids_are_deterministic(server):
    a, b = await pair(server)
    assert (a.session_id, b.session_id) == (0x100000001, 0x100000002)


async def test_a_suspended_leader_stops_at_once_and_leads_again_after_reconnecting(server, clock):
    from brokerlb.coordination import LeaderBroker, LeaderElection

    a, b = await pair(server, timeout=5)
    election = await LeaderElection(a, LeaderBroker("b1:8080", "http://b1:8080")).start()
    follower = await LeaderElection(b, LeaderBroker("b2:8080", "http://b2:8080")).start()
    lease = election.lease
    a.drop_connection()
    assert not lease.valid and not election.is_leader
    await clock.advance_and_settle(4.999)
    assert not follower.is_leader  # the session (and its node) is still alive on the server
    a.restore_connection()
    await clock.run_until(lambda: election.is_leader, message="leads again")
    assert election.epoch == 2 and not follower.is_leader


async def test_a_slow_twin_with_the_same_identity_follows_instead_of_fighting(server, clock):
    """The race CI caught on ZooKeeper, made deterministic: a live twin whose store is slower deletes
    the leader's node by the stale-node rule, the leader re-creates it before the twin looks again.
    The twin must then follow; deleting again would take leadership away over and over until the
    election gave up with "leader node kept changing"."""
    from brokerlb.coordination import LeaderBroker, LeaderElection

    a, b = await pair(server, timeout=5)
    me = LeaderBroker("b7:8080", "http://b7:8080")
    first = await LeaderElection(a, me).start()
    b.set_operation_delay(0.02)
    twin_started = asyncio.create_task(LeaderElection(b, me).start())
    twin = await clock.run_until(lambda: twin_started.done() and twin_started.result(), message="twin starts")
    await clock.run_until(lambda: first.is_leader and twin.state.value == "following", message="one leader")
    assert not twin.is_leader
    assert first.epoch == 2  # lost once to the stale-node deletion, then led again
    await clock.advance_and_settle(2 * 5)  # two session timeouts of heartbeats: nobody fights
    assert first.is_leader and first.epoch == 2 and twin.state.value == "following"
