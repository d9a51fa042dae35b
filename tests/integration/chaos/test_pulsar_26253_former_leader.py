"""Regression for Apache Pulsar #26253: a former leader still unloads bundles and writes metadata.

Pulsar's report: load-balancer tasks start only while a broker leads, but cancelling a task does not
stop an invocation already running; when leadership changes mid-invocation, the former leader still
unloads bundles and persists load-balancing metadata. Pulsar's fix re-checks ``isLeader()`` before
each unload and write -- which a process that resumes from a pause between the check and the call
still passes.

brokerlb: every leadership has a cluster-wide epoch (the leader-epoch node's version, written in the
transaction that creates the leader node); every leader write goes through one seam
(:class:`~brokerlb.broker.leader.leader_fence.LeaderFence`) that makes it conditional on the epoch it
was decided under -- a move is one transition of the bundle's ownership record, written in one
transaction with a check of the epoch; a split's Splitting record (written by the owner on the
leader's behalf), a merge's commit, the leader's metadata deletes and the monitor's overrides too --
so an epoch that is no longer current changes nothing. Here the former leader leaves the election
and its tasks run *after* a new leadership began, with the epoch they were decided under (its
fence's, kept after the leadership ended): every one is refused (unloads, a split and its data
delete, a merge, an override), nothing moves, nothing is deleted; the new leader's commands go
through. On the embedded store and on real ZooKeeper.
"""

from __future__ import annotations

import uuid

import httpx
import pytest

from brokerlb.broker.leader.leader import BrokerActions
from brokerlb.loadbalance.decisions import MergeDecision, SplitDecision, UnloadDecision
from brokerlb.loadbalance.leader import Move
from brokerlb.ownership import BundleState
from brokerlb.ownership.events import Reassign
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.waiting import eventually


def _actions_of(service) -> BrokerActions:
    """The leader's executor as the broker's cycle has it: its epoch read through its fence."""
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
        fence=service.leader_fence,
    )


@pytest.fixture(params=["memory", pytest.param("zookeeper", marks=pytest.mark.zookeeper)])
def store_url(request) -> str | None:
    if request.param == "memory":
        return None
    zk_server = request.getfixturevalue("zk_server")
    return f"zk:{zk_server.hosts}/former-{uuid.uuid4().hex[:8]}"


async def test_a_former_leaders_writes_are_refused(store_url) -> None:
    cluster = await InProcessCluster(3, store_url=store_url).start()
    try:
        services = cluster.services
        leader = next(s for s in services if s.election.is_leader)
        former = leader.leader_fence.epoch()
        assert former is not None
        namespace = f"public/former-{uuid.uuid4().hex[:6]}"
        async with httpx.AsyncClient(timeout=30, follow_redirects=True) as client:
            assert (await client.put(f"{cluster.urls[0]}/admin/v2/namespaces/{namespace}")).status_code == 204
            for i in range(16):
                answer = await client.get(f"{cluster.urls[0]}/lookup/v2/topic/persistent/{namespace}/t-{i}")
                assert answer.status_code == 200, answer.text
        owners = {b: o.broker_id for b, o in leader.channel.owners().items() if b.startswith(f"{namespace}/")}
        assert owners
        # a new leadership begins: the leader leaves the election (its fence keeps its epoch)
        await leader.election.close()
        current = await eventually(
            lambda: next((s for s in services if s is not leader and s.election.is_leader), None),
            timeout=60,
            message="a new leadership",
        )
        assert (current.leader_fence.epoch() or 0) > former
        assert leader.leader_fence.epoch() == former
        stale = _actions_of(leader)
        moves = [
            Move(b, o, None, False, UnloadDecision(o, b)) for b, o in sorted(owners.items())
        ]  # a bundle of every owner, the former leader's own included
        assert await stale.move(moves) == [False] * len(moves)
        bundle = sorted(owners)[0]
        await current.load_data_store.write_bundle_data(
            bundle, {"topics": 1}, leader_epoch=current.leader_fence.epoch()
        )
        assert await stale.split([SplitDecision(bundle)]) == [False]
        assert await leader.load_data_store.read_bundle_data(bundle) == {"topics": 1}, (
            "a refused split deleted data"
        )
        ring = list(await leader.bundles.get(namespace))
        parts = tuple(str(b) for b in ring[:2])  # adjacent
        assert await stale.merge([MergeDecision(parts)]) == [False]
        assert list(await leader.bundles.get(namespace)) == ring, "a refused merge changed the ring"
        assert all(
            "superseded leader" in why or "no longer the leader" in why for _, _, why in stale.failures
        ), list(stale.failures)
        # the former leader's monitor, still running: its override of a record is refused
        other = next(s.broker_id for s in services if s.broker_id != owners[bundle])
        record = leader.channel.record(bundle)
        assert record is not None and record.state is BundleState.OWNED
        override = Reassign(
            bundle=bundle, version=record.version, exclude=None, reason="stuck", keep_on=other
        )
        await leader.actions.execute(override)
        after = {b: o.broker_id for b, o in leader.channel.owners().items() if b.startswith(f"{namespace}/")}
        assert after == owners, "a refused command moved, split or overrode a bundle"
        stored = await leader.channel.table.read(bundle)
        assert stored is not None and stored.record.version == record.version
        # the current leadership's commands go through
        fresh = _actions_of(current)
        assert await fresh.move([m for m in moves if m.bundle != bundle][:1]) == [True]
        await current.actions.execute(override)
        await eventually(
            lambda: current.channel.owner(bundle).broker == other or None,
            timeout=30,
            message="the current leader's override",
        )
    finally:
        await cluster.stop()
