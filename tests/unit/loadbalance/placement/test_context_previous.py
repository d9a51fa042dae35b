"""A placement context built with ``previous`` (the leader's last one) equals one built cold.

The leader lends the per-broker usage figures of its last context to the next one for the
brokers whose report is the same object; a new report, a new broker, a departed one or other
resource weights must all give what a cold build gives.
"""

import random

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance.leader import ClusterInputs, Leader
from brokerlb.loadbalance.placement.context import PlacementContext
from brokerlb.model import NamespaceBundleStats
from brokerlb.testing import broker

BROKERS = [f"b{i}:8080" for i in range(6)]


def figures(context: PlacementContext) -> dict[str, object]:
    return {
        "max_usage": context.max_usage,
        "weighted_usage": context.weighted_usage,
        "scores": context.scores,
        "total_topics": context.total_topics,
        "running": sorted(context.brokers_running("ModularLoadManagerImpl")),
        "counts": {ns: dict(context.namespace_counts(ns)) for ns in ("t/a", "t/b")},
    }


def report(name: str, rng: random.Random, manager: str = "ModularLoadManagerImpl"):
    bundles = {
        f"t/{ns}/0x{r:08x}_0x{r + 1:08x}": NamespaceBundleStats(msg_rate_in=rng.uniform(0, 500), topics=2)
        for ns in ("a", "b")
        for r in rng.sample(range(16), rng.randrange(0, 4))
    }
    local = broker(name, cpu=rng.uniform(0, 90), memory=rng.uniform(0, 90), bundles=bundles)
    local.load_manager_class_name = f"org.apache.pulsar.broker.loadbalance.impl.{manager}"
    return local


def test_a_context_lent_figures_by_the_previous_one_equals_a_cold_one() -> None:
    rng = random.Random(11)
    leader = Leader(BROKERS[0], rng=random.Random(1))
    reports = {b: report(b, rng) for b in BROKERS[:5]}
    for step in range(40):
        action = rng.random()
        name = rng.choice(BROKERS)
        if action < 0.5:
            manager = "ModularLoadManagerImpl" if rng.random() < 0.8 else "SimpleLoadManagerImpl"
            reports[name] = report(name, rng, manager)  # a new report (or a new broker)
        elif action < 0.6:
            reports.pop(name, None)  # a broker left
        if step % 7 == 3:  # other weights: nothing may be lent
            leader.config = ServiceConfig(loadBalancerCPUResourceWeight=rng.choice([1.0, 2.5]))
        inputs = ClusterInputs(reports=dict(reports))
        leader.refresh(step, inputs)
        lent = leader.placement_context(step, inputs)
        cold = PlacementContext(leader.view(step, inputs))
        assert figures(lent) == figures(cold), step
        if rng.random() < 0.5 and reports:  # a placement preallocates into the next view
            leader.place(step, f"t/a/0x{0x100 + step:08x}_0x{0x101 + step:08x}", inputs)
