"""A leader whose lease lapsed while its session stayed alive leads again (new epoch).

The lease ends when the heartbeat cannot confirm leadership in time -- e.g. an event loop
starved for longer than the lease. The session (and the leader node) may well be alive; the
election then runs again and re-confirms leadership instead of leaving the cluster with a
held leader node and no leader at work.
"""

from __future__ import annotations

import time

from brokerlb.coordination import LeaderBroker, LeaderElection
from brokerlb.testing.waiting import eventually


async def test_leadership_is_regained_after_a_lapsed_lease(backend, store):
    election = await LeaderElection(store, LeaderBroker("b1:8080", "http://b1:8080")).start()
    lease = election.lease
    assert lease is not None and election.epoch == 1
    time.sleep(store.session_timeout * 0.9)  # starve the loop past the lease (0.8 x session timeout)
    await eventually(
        lambda: election.is_leader and election.epoch == 2,
        timeout=10,
        message="leadership regained in a new epoch",
    )
    assert not lease.valid
    await election.close()
