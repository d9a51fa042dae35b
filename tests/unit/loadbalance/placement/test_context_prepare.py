"""A leader that prepares its placement context after each refresh (as the broker's refresh does,
:meth:`Leader.prepare_placement`) places exactly as one that builds everything at the first
placement: preparing only fills caches (isolation without a policy, load-manager class, every
anti-affinity group's counts), and the placements that follow keep them current."""

import random

from brokerlb.loadbalance.leader import ClusterInputs, Leader
from brokerlb.loadbalance.policies import NamespacePolicy
from brokerlb.model import NamespaceBundleStats
from brokerlb.testing import broker

BROKERS = [f"b{i}:8080" for i in range(8)]
NAMESPACES = [f"t/ns{i}" for i in range(6)]
#: ns0, ns2, ns4 in one anti-affinity group (spelled differently), ns3 in another
GROUPS = {"t/ns0": "g1", "t/ns2": "G1", "t/ns4": "g1", "t/ns3": "g2"}


def report(name: str, rng: random.Random):
    bundles = {
        f"{ns}/0x{r:08x}_0x{r + 1:08x}": NamespaceBundleStats(msg_rate_in=rng.uniform(0, 500), topics=2)
        for ns in NAMESPACES
        for r in rng.sample(range(16), rng.randrange(0, 3))
    }
    return broker(name, cpu=rng.uniform(0, 90), memory=rng.uniform(0, 90), bundles=bundles)


def test_prepared_and_unprepared_leaders_place_alike() -> None:
    rng = random.Random(5)
    prepared, plain = (Leader(BROKERS[0], rng=random.Random(1)) for _ in range(2))
    policies = {ns: NamespacePolicy(GROUPS.get(ns)) for ns in NAMESPACES}
    reports = {b: report(b, rng) for b in BROKERS}
    placed = 0
    for step in range(30):
        for name in rng.sample(BROKERS, 3):
            reports[name] = report(name, rng)
        inputs = ClusterInputs(reports=dict(reports), namespace_policies=policies)
        prepared.refresh(step, inputs)
        plain.refresh(step, inputs)
        prepared.prepare_placement(step, inputs)
        for _ in range(rng.randrange(1, 6)):
            ns = rng.choice(NAMESPACES)
            bundle = f"{ns}/0x{0x1000 + placed:08x}_0x{0x1001 + placed:08x}"
            placed += 1
            a, b = prepared.place(step, bundle, inputs), plain.place(step, bundle, inputs)
            assert (a.broker, a.reason, a.detail) == (b.broker, b.reason, b.detail), (step, bundle)
    assert placed > 50
