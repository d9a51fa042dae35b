"""``loadBalancerSheddingExcludedNamespaces`` in the simulator's extensible load manager.

Pulsar rule (PIP-380, ``TopKBundles.update``): a broker leaves the bundles of the excluded
namespaces out of its top-K bundles report, so TransferShedder never sees them and never moves
them; they are left out before the heaviest K are picked, so the report still holds K others.
"""

from collections import Counter
from types import SimpleNamespace

import numpy as np

from brokerlb.sim import run_scenario
from brokerlb.sim.brokers import BundleTraffic, ReportWriter
from tests.sim.conftest import small_scenario

SKEWED = {"msg_rate": 40_000, "zipf": 1.2, "noise": 0.05}
FAST = {"loadBalancerSheddingConditionHitCountThreshold": 1, "loadBalancerBrokerLoadTargetStd": 0.05}


def _shed_namespaces(excluded: str) -> Counter:
    scenario = small_scenario(minutes=60, workload=SKEWED)
    result = run_scenario(
        scenario, "TransferShedder", {**FAST, "loadBalancerSheddingExcludedNamespaces": excluded}
    )
    return Counter(
        m["bundle"].rsplit("/", 1)[0] for m in result.moves if m["cause"] in ("transfer", "unload")
    )


def test_excluded_namespaces_are_never_shed():
    # worked example: 4 brokers, namespaces t/ns-1..3 with 8 bundles each, skewed traffic;
    # TransferShedder moves bundles of t/ns-3 unless it is excluded
    assert _shed_namespaces("")["t/ns-3"] > 0
    moved = _shed_namespaces("t/ns-3")
    assert moved["t/ns-3"] == 0 and sum(moved.values()) > 0
    assert _shed_namespaces("t/ns-1,t/ns-2,t/ns-3") == Counter()


def test_excluded_bundles_do_not_take_places_of_the_top_k():
    # six bundles: the three heaviest in the excluded namespace t/x, three lighter in t/y; with
    # k = 2 the report is t/y's two heaviest (picking the heaviest first and dropping t/x after
    # would leave an empty report)
    names = [f"t/x/0x0000000{i}_0x0000000{i + 1}" for i in range(3)] + [
        f"t/y/0x0000000{i}_0x0000000{i + 1}" for i in range(3)
    ]
    rate = np.array([900.0, 800.0, 700.0, 30.0, 20.0, 10.0])
    tput = rate * 1e6
    zeros = np.zeros(6)
    traffic = BundleTraffic(
        rate, zeros, tput, zeros, zeros.astype(int), zeros.astype(int), zeros.astype(int) + 1
    )
    namespaces = ["t/x"] * 3 + ["t/y"] * 3
    reportable = np.array([ns != "t/x" for ns in namespaces])
    broker = SimpleNamespace(top_bundles=None)
    publish = ReportWriter.publish_top_bundles
    publish(None, broker, np.arange(6), traffic, names, 2, None, frozenset({"t/x"}), reportable)  # type: ignore[arg-type]
    assert broker.top_bundles.bundle_names() == [names[4], names[3]]  # Pulsar's order: lightest first
