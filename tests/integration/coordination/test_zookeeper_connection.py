"""ZooKeeper-only behaviour: a server that is down, and a server restart (SUSPENDED, then the same session)."""

from __future__ import annotations

import asyncio

import pytest

from brokerlb.coordination import LeaderBroker, LeaderElection, SessionState
from brokerlb.errors import ConnectionLossError
from brokerlb.testing.waiting import eventually
from brokerlb.testing.zookeeper import ZooKeeperServer, free_port

pytestmark = pytest.mark.zookeeper

GUARD = 60.0


async def test_no_server_is_a_connection_loss():
    from brokerlb.coordination.zookeeper import ZooKeeperMetadataStore

    store = ZooKeeperMetadataStore(f"127.0.0.1:{free_port()}", session_timeout=2, connect_timeout=0.5)
    with pytest.raises(ConnectionLossError, match="Cannot connect") as err:
        await store.start()
    assert err.value.retriable


async def test_server_restart_suspends_the_leader_which_leads_again_in_the_same_session(tmp_path, zk_server):
    from brokerlb.coordination.zookeeper import ZooKeeperMetadataStore

    server = ZooKeeperServer(data_dir=tmp_path / "data")
    await asyncio.to_thread(server.start)
    # a fresh JVM on a loaded machine can take longer than the default 10 s to establish the first
    # session (a clean-clone CI run timed out here): the bounds below are guards, not timings
    store = ZooKeeperMetadataStore(server.hosts, session_timeout=10, connect_timeout=GUARD)
    try:
        await store.start()
        states = []
        store.add_session_listener(lambda e: states.append(e.state))
        election = await LeaderElection(store, LeaderBroker("b1:8080", "http://b1:8080")).start()
        lease = election.lease
        session = store.session_id
        await asyncio.to_thread(server.stop)
        await eventually(
            lambda: store.session_state is SessionState.SUSPENDED, timeout=GUARD, message="suspended"
        )
        assert not lease.valid and not election.is_leader  # a suspended leader stops at once
        await asyncio.to_thread(server.start)
        await store.wait_connected(GUARD)
        assert store.session_id == session and SessionState.LOST not in states  # the session survived
        await eventually(lambda: election.is_leader, timeout=GUARD, message="leads again")
        assert election.epoch == 2 and election.lease is not lease
        await election.close()
    finally:
        await store.close()
        await asyncio.to_thread(server.stop)
