"""The live leader survives a strategy's move of a bundle its source no longer owns.

A strategy reads load reports; a report may still list a bundle that moved away minutes ago.
Carried out, the move is a transfer of the bundle to the broker that owns it already, which
that broker's ownership machine refuses ("unload to the same broker is not allowed"): the leader
logged a failure and its status read ``stalled``. It now skips the decision before carrying it
out, records it with its reason (``Skip``/``NotOwned``, saying who owns the bundle) and counts it
in ``pulsar_lb_unload_broker_breakdown_total``. The simulator runs the same leader
(tests/sim/test_pain_points.py reproduces the rolling restart where this happened).
"""

from __future__ import annotations

import random
from typing import ClassVar

import httpx
import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.broker.data.synthetic import SyntheticClients
from brokerlb.broker.data.topics import TopicStats
from brokerlb.loadbalance.decisions import Label, Reason, SheddingResult, UnloadDecision
from brokerlb.loadbalance.registry import StrategyKind, StrategySpec, register, unregister
from brokerlb.loadbalance.state import StrategyState
from brokerlb.loadbalance.view import ClusterView
from brokerlb.testing import eventually
from brokerlb.testing.clusters import InProcessCluster

from .helpers import new_namespace, topics_of

pytestmark = pytest.mark.asyncio(loop_scope="package")

NAMESPACE_PREFIX = "public/stale-"


class StaleReportShedder:
    """Decides what a strategy reading a stale report decides: move a bundle of the test's
    namespace from a broker that does not own it to the broker that does (its reporter)."""

    class_name: ClassVar[str] = "tests.StaleReportShedder"

    def find_bundles_for_unloading(
        self, view: ClusterView, state: StrategyState, rng: random.Random
    ) -> SheddingResult:
        for owner in sorted(view.brokers):
            for bundle in sorted(view.brokers[owner].local_data.last_stats):
                if bundle.startswith(NAMESPACE_PREFIX):
                    source = next(b for b in sorted(view.brokers) if b != owner)
                    return SheddingResult.of(
                        [UnloadDecision(source, bundle, owner, Label.SUCCESS, Reason.OVERLOADED, "stale")]
                    )
        return SheddingResult.of([UnloadDecision.skip(Reason.BALANCED, "nothing reported yet")])


@pytest.fixture
def stale_strategy():
    spec = StrategySpec(
        StrategyKind.SHEDDING, StaleReportShedder.class_name, __name__, "StaleReportShedder", None
    )
    register(spec)
    yield spec.class_name
    unregister(StrategyKind.SHEDDING, spec.class_name)


async def test_the_live_leader_skips_a_move_of_a_bundle_its_source_no_longer_owns(stale_strategy) -> None:
    cluster = await InProcessCluster(
        3,
        {
            "loadBalancerLoadSheddingStrategy": stale_strategy,
            "loadBalancerSheddingIntervalMinutes": 0.01,
            "loadBalancerReportUpdateMinIntervalMillis": 100,
        },
    ).start()
    try:
        ns = new_namespace("stale")
        assert ns.startswith(NAMESPACE_PREFIX)
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(ns, num_bundles=1)
        clients = SyntheticClients(cluster.services)
        await clients.add_many({t: TopicStats(msg_rate_in=5) for t in topics_of(ns, 4)})
        leader = next(s for s in cluster.services if s.is_leader)

        def skipped():
            return [
                d
                for r in leader.leader_tasks.records
                for d in r.decisions
                if d.bundle and d.bundle.startswith(ns) and d.reason is Reason.NOT_OWNED
            ]

        await eventually(skipped, timeout=60, message="the leader skips the stale move")
        decision = skipped()[0]
        owner = leader.channel.owner(decision.bundle).broker
        assert owner is not None and decision.label is Label.SKIP
        assert decision.detail.endswith(
            f"not moved: {owner} owns it already (its destination; {decision.broker} reported it last)"
        )
        # nothing was sent to the owner, nothing failed, the bundle never moved
        assert not [r for r in leader.leader_tasks.records for m in r.moves if m.bundle == decision.bundle]
        assert list(leader.leader_tasks.actions.failures) == []
        status = await AsyncAdminClient(leader.url).get_balancer_status()
        assert status["state"] != "stalled", status
        async with httpx.AsyncClient() as http:
            scrape = (await http.get(f"{leader.url}/metrics")).text
        counted = [
            line
            for line in scrape.splitlines()
            if line.startswith("pulsar_lb_unload_broker_breakdown_total{")
            and 'result="Skip"' in line
            and 'reason="NotOwned"' in line
        ]
        assert counted and float(counted[0].rsplit(" ", 1)[1]) >= 1, counted
        await clients.close()
    finally:
        await cluster.stop()
