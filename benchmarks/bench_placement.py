"""Benchmark: placement and split on a synthetic cluster of 1,000 brokers and 100,000 bundles.

What is timed (each on the same synthetic snapshot):

* building a :class:`~brokerlb.loadbalance.placement.PlacementContext` (once per load-data
  refresh on a leader);
* 10,000 placements through the modular pipeline (``selectBrokerForAssignment``: isolation
  policies, topic counts, anti-affinity with failure domains, even spread, filters,
  ``LeastLongTermMessageRate``, overload re-check), each preallocated so the next one counts it;
* the same with ``LeastResourceUsageWithWeight`` (EMA state) and ``RoundRobinBrokerSelector``;
* 10,000 placements through the extensible pipeline (five filters + its
  ``LeastResourceUsageWithWeight``);
* one split check over all 100,000 bundles (``BundleSplitterTask`` and
  ``DefaultNamespaceBundleSplitStrategyImpl``).

Baseline measured in the same run: a bare ``min`` over the 1,000 brokers' precomputed scores
(the least any placement must do), so the pipeline's cost reads as a ratio.

Goal: a placement in <= 1 ms.

Run: ``.venv/bin/python benchmarks/bench_placement.py [--brokers 1000] [--bundles 100000] [--placements 10000]``
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
import warnings
from pathlib import Path

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance.broker_lookup import BrokerLookupData
from brokerlb.loadbalance.placement import PlacementContext, place_bundle
from brokerlb.loadbalance.policies import (
    AutoFailoverPolicy,
    FailureDomain,
    NamespaceIsolationData,
    NamespacePolicy,
)
from brokerlb.loadbalance.split import find_bundles_to_split
from brokerlb.loadbalance.state import StrategyState, new_rng
from brokerlb.loadbalance.view import ClusterView
from brokerlb.model import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    TimeAverageBrokerData,
    TimeAverageMessageData,
)
from brokerlb.testing import broker_load, system_usage

EXTENSIBLE_LM = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
EXT_LRUWW = "org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight"


sys.path.insert(0, str(Path(__file__).resolve().parent))
from verdict import verdict  # noqa: E402


def synthetic_view(n_brokers: int, n_bundles: int, seed: int = 7) -> ClusterView:
    """Brokers ``broker-i.example:8080`` holding ``n_bundles`` bundles of 1,000 namespaces."""
    rng = random.Random(seed)
    n_namespaces = 1000
    per_ns = max(1, n_bundles // n_namespaces)
    step = 2**32 // per_ns
    brokers = [f"broker-{i}.example:8080" for i in range(n_brokers)]
    stats_of: dict[str, dict[str, NamespaceBundleStats]] = {b: {} for b in brokers}
    histories: dict[str, BundleData] = {}
    for ns in range(n_namespaces):
        for i in range(per_ns):
            upper = 0xFFFFFFFF if i == per_ns - 1 else (i + 1) * step
            bundle = f"tenant-{ns % 50}/ns-{ns}/0x{i * step:08x}_0x{upper:08x}"
            rate = rng.uniform(10, 2000) * (20 if rng.random() < 0.001 else 1)  # a few hot bundles
            tput = rate * rng.uniform(500, 5000)
            sample = NamespaceBundleStats(
                msg_rate_in=rate,
                msg_rate_out=rate / 2,
                msg_throughput_in=tput,
                msg_throughput_out=tput / 2,
                topics=rng.randint(1, 50),
                producer_count=rng.randint(0, 20),
                consumer_count=rng.randint(0, 20),
            )
            stats_of[brokers[rng.randrange(n_brokers)]][bundle] = sample
            histories[bundle] = BundleData(
                TimeAverageMessageData(10, 10, tput, tput / 2, rate, rate / 2),
                TimeAverageMessageData(1000, 1000, tput, tput / 2, rate, rate / 2),
                sample.topics,
            )
    broker_data = {}
    for name in brokers:
        local = LocalBrokerData(
            web_service_url=f"http://{name}",
            broker_version_string="4.0.0",
            load_manager_class_name="org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
        )
        local.update(
            system_usage(
                cpu=rng.uniform(5, 95), bandwidth_in=rng.uniform(5, 60), bandwidth_out=rng.uniform(5, 60)
            ),
            stats_of[name],
        )
        default = NamespaceBundleStats.new_default()
        broker_data[name] = BrokerData(local, TimeAverageBrokerData.of(local.last_stats, histories, default))
    groups = {
        f"tenant-{t}/ns-{ns}": NamespacePolicy(f"group-{ns % 7}")
        for ns in range(0, n_namespaces, 20)
        for t in [ns % 50]
    }
    isolation = {
        "gold": NamespaceIsolationData(
            ("tenant-1/.*",),
            (r"broker-[0-9]\.example",),
            (r"broker-1[0-9]\.example",),
            AutoFailoverPolicy(min_limit=2),
        )
    }
    domains = {f"zone-{z}": FailureDomain(frozenset(brokers[z::10])) for z in range(10)}
    lookup = {
        b: BrokerLookupData(load_manager_class_name=EXTENSIBLE_LM, broker_version="4.0.0") for b in brokers
    }
    loads = {b: broker_load(cpu=rng.uniform(5, 95), topics=rng.randint(0, 5000)) for b in brokers}
    return ClusterView(
        config=ServiceConfig(failureDomainsEnabled=True),
        now_ms=1_700_000_000_000,
        load_data=LoadData(broker_data, histories),
        namespace_policies=groups,
        isolation_policies=isolation,
        failure_domains=domains,
        broker_lookup_data=lookup,
        broker_load_data=loads,
    )


def new_bundles(count: int) -> list[str]:
    """Bundles not in the snapshot, spread over existing and new namespaces (some grouped/isolated)."""
    out = []
    for i in range(count):
        ns = i % 2000  # half the namespaces exist already
        out.append(f"tenant-{ns % 50}/ns-{ns}/0x{i:08x}_0x{i + 1:08x}")
    return out


def time_placements(
    view: ClusterView, bundles: list[str], strategy: str | None
) -> tuple[float, list[float], float]:
    """Context build time, wall time per placement, and CPU seconds of all placements."""
    t0 = time.perf_counter()
    context = PlacementContext(view)
    build = time.perf_counter() - t0
    state, rng = StrategyState(), new_rng(0)
    laps = []
    cpu0 = time.process_time()
    for bundle in bundles:
        t = time.perf_counter()
        decision = place_bundle(context, bundle, state, rng, strategy=strategy, preallocate=True)
        laps.append(time.perf_counter() - t)
        assert decision.broker is not None, decision
    return build, laps, time.process_time() - cpu0


def report(name: str, laps: list[float], cpu: float) -> None:
    laps_ms = sorted(x * 1000 for x in laps)
    p99 = laps_ms[int(len(laps_ms) * 0.99) - 1]
    print(
        f"  {name:<52} wall: median {statistics.median(laps_ms):6.3f} ms, mean "
        f"{statistics.fmean(laps_ms):6.3f} ms, p99 {p99:6.3f} ms; CPU {cpu * 1000 / len(laps):6.3f} ms each"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", type=int, default=1000)
    ap.add_argument("--bundles", type=int, default=100_000)
    ap.add_argument("--placements", type=int, default=10_000)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}; {args.brokers} brokers, {args.bundles} bundles, {args.placements} placements"
    )

    t0 = time.perf_counter()
    view = synthetic_view(args.brokers, args.bundles)
    print(f"  build synthetic snapshot                     {time.perf_counter() - t0:7.2f} s")
    bundles = new_bundles(args.placements)

    context = PlacementContext(view)
    scores = {b: context.long_term_message_rate_score(b) for b in context.modular_brokers}
    names = list(scores)

    def measure_baseline() -> float:
        t0 = time.perf_counter()
        for _ in range(args.placements):
            min(names, key=scores.__getitem__)
        return (time.perf_counter() - t0) / args.placements

    baseline = measure_baseline()
    print(f"  baseline: min over {len(names)} precomputed scores     {baseline * 1000:6.3f} ms per placement")

    medians: dict[str, float] = {}
    for label, strategy in (
        ("modular LeastLongTermMessageRate (default)", None),
        ("modular LeastResourceUsageWithWeight", "LeastResourceUsageWithWeight"),
        ("modular RoundRobinBrokerSelector", "RoundRobinBrokerSelector"),
    ):
        baseline = measure_baseline()  # alternated with the strategies
        build, laps, cpu = time_placements(view, bundles, strategy)
        if strategy is None:
            print(f"  PlacementContext build (once per refresh)    {build:7.2f} s")
        report(label, laps, cpu)
        print(
            f"  {'':<52} median = {statistics.median(laps) / baseline:4.1f} x the baseline measured just before"
        )
        medians[label] = statistics.median(laps)
    extensible = view.with_overrides({"loadManagerClassName": EXTENSIBLE_LM})
    _, laps, cpu = time_placements(extensible, bundles, EXT_LRUWW)
    report("extensible pipeline + its LeastResourceUsageWithWeight", laps, cpu)
    medians["extensible"] = statistics.median(laps)

    for label, strategy in (
        ("split check BundleSplitterTask", "BundleSplitterTask"),
        ("split check DefaultNamespaceBundleSplitStrategyImpl", "DefaultNamespaceBundleSplitStrategyImpl"),
    ):
        t0, cpu0 = time.perf_counter(), time.process_time()
        result = find_bundles_to_split(view, StrategyState(), strategy)
        print(
            f"  {label:<52} wall {time.perf_counter() - t0:5.2f} s, CPU {time.process_time() - cpu0:5.2f} s "
            f"({result.stats['bundlesChecked']} bundles, {len(result.splits)} splits, "
            f"{len(result.decisions)} decisions)"
        )
    slowest = max(medians, key=medians.__getitem__)
    verdict(
        "a placement <= 1 ms (median, every strategy)",
        f"slowest {slowest} {medians[slowest] * 1000:.3f} ms",
        medians[slowest] <= 0.001,
    )


if __name__ == "__main__":
    main()
