"""A leader whose lease lapsed while its session stayed alive leads again (new epoch).

The lease ends when the heartbeat cannot confirm leadership in time -- e.g. an event loop
starved for longer than the lease. The session (and the leader node) may well be alive; the
election then runs again and re-confirms leadership instead of leaving the cluster with a
held leader node and no leader at work.
"""

from __future__ import annotations

from brokerlb.coordination import LeaderBroker, LeaderElection


async def test_leadership_is_regained_after_a_lapsed_lease(backend, store):
    election = await LeaderElection(store, LeaderBroker("b1:8080", "http://b1:8080")).start()
    lease = election.lease
    assert lease is not None and election.epoch == 1
    backend.starve_loop(store.session_timeout * 0.9)  # past the lease (0.8 x session timeout)
    assert not lease.valid  # checked before any leader action: the lapsed lease stops it
    await backend.until(lambda: election.is_leader and election.epoch == 2, message="leadership regained")
    assert not lease.valid
    await election.close()
