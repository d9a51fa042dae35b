"""Regression for Apache Pulsar #26253: a former leader still unloads bundles and writes metadata.

Pulsar's report: load-balancer tasks start only while a broker leads, but cancelling a task does not
stop an invocation already running; when leadership changes mid-invocation, the former leader still
unloads bundles and persists load-balancing metadata. Pulsar's fix re-checks ``isLeader()`` before
each unload and write -- which a process that resumes from a pause between the check and the call
still passes.

brokerlb: every leadership has a cluster-wide epoch (the leader-epoch node's version, written in the
transaction that creates the leader node); every leader write is conditional on it -- a move is one
transition of the bundle's ownership record, written in one transaction with a check of the epoch;
a split's Splitting record (written by the owner on the leader's behalf) and the leader's metadata
writes too -- so an epoch that is no longer current changes nothing. Here the former leader's tasks run *after* a new leadership began, with the
epoch they were decided under: every one is refused (unloads, a split, a merge), nothing moves,
nothing is deleted; the same commands with the current epoch go through.
"""

from __future__ import annotations

import uuid

import httpx

from brokerlb.broker.leader.leader import BrokerActions
from brokerlb.coordination import open_store
from brokerlb.coordination.paths import LEADER_PATH
from brokerlb.loadbalance.decisions import MergeDecision, SplitDecision, UnloadDecision
from brokerlb.loadbalance.leader import Move
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.waiting import eventually


def _actions_of(service, token: int | None) -> BrokerActions:
    """The leader's executor as its cycle has it, carrying leader epoch ``token``."""
    return BrokerActions(
        service.conf,
        broker_id=service.broker_id,
        clock=service.clock,
        channel=service.channel,
        actions=service.actions,
        admin=service.admin,
        registry=service.registry,
        load_data_store=service.load_data_store,
        merge_bundles=service.namespaces.merge_parts,
        fencing_token=lambda: token,
    )


async def test_a_former_leaders_unloads_and_splits_are_refused() -> None:
    cluster = await InProcessCluster(3).start()
    store = open_store(cluster.store_url, session_timeout=10.0)
    await store.start()
    try:
        services = cluster.services
        leader = next(s for s in services if s.election.is_leader)
        former = leader.election.last_fencing_token
        assert former is not None
        namespace = f"public/former-{uuid.uuid4().hex[:6]}"
        async with httpx.AsyncClient(timeout=30, follow_redirects=True) as client:
            assert (await client.put(f"{cluster.urls[0]}/admin/v2/namespaces/{namespace}")).status_code == 204
            for i in range(16):
                answer = await client.get(f"{cluster.urls[0]}/lookup/v2/topic/persistent/{namespace}/t-{i}")
                assert answer.status_code == 200, answer.text
        owners = {b: o.broker_id for b, o in leader.channel.owners().items() if b.startswith(f"{namespace}/")}
        assert owners
        # a new leadership begins (the leader node goes; whoever wins, the epoch moves on)
        await store.delete(LEADER_PATH)
        current = await eventually(
            lambda: next(
                (
                    s.election.last_fencing_token
                    for s in services
                    if s.election.is_leader and (s.election.last_fencing_token or 0) > former
                ),
                None,
            ),
            timeout=60,
            message="a new leadership",
        )
        stale = _actions_of(leader, former)
        moves = [
            Move(b, o, None, False, UnloadDecision(o, b)) for b, o in sorted(owners.items())
        ]  # a bundle of every owner, the leader's own included
        assert await stale.move(moves) == [False] * len(moves)
        bundle = sorted(owners)[0]
        assert await stale.split([SplitDecision(bundle)]) == [False]
        ring = list(await leader.bundles.get(namespace))
        parts = tuple(str(b) for b in ring[:2])  # adjacent
        assert await stale.merge([MergeDecision(parts)]) == [False]
        assert list(await leader.bundles.get(namespace)) == ring, "a refused merge changed the ring"
        assert all(
            "superseded leader" in why or "no longer the leader" in why for _, _, why in stale.failures
        ), list(stale.failures)
        after = {b: o.broker_id for b, o in leader.channel.owners().items() if b.startswith(f"{namespace}/")}
        assert after == owners, "a refused command moved or split a bundle"
        # the current leadership's commands go through
        fresh = _actions_of(leader, current)
        assert await fresh.move(moves[:1]) == [True]
    finally:
        await store.close()
        await cluster.stop()
