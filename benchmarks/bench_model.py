"""Benchmark: the load-data model on one large broker report.

What the leader and the simulator do most: parse a broker's ``LocalBrokerData``
JSON, refresh a report from bundle stats, fold samples into bundle histories and
pick the top-K bundles. Baselines measured in the same run: ``json.loads`` of the
same document (parsing without validation), and a plain ``sorted`` of the same
stats by throughput (ordering without Pulsar's resolution keys).

Goals (the last line): a report parsed and validated (``LocalBrokerData.from_json`` of the
parsed document) within 1.5x ``json.loads`` of it -- validation must not cost more than half
the parse -- and ``top_k_bundles`` within 2x the plain sort (Pulsar's tie-breaking keys on top).

Run: ``.venv/bin/python benchmarks/bench_model.py [--bundles 10000]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

from brokerlb.model import (
    BundleData,
    LocalBrokerData,
    NamespaceBundleStats,
    SystemResourceUsage,
    top_k_bundles,
)
from brokerlb.testing import system_usage


def best_of(fn, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdict import verdict  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundles", type=int, default=10_000)
    args = ap.parse_args()
    n = args.bundles

    stats = {
        f"tenant/ns-{i % 50}/0x{i:08x}_0x{i + 1:08x}": NamespaceBundleStats(
            msg_rate_in=float(i % 997),
            msg_throughput_in=float(i * 131 % 1_000_003),
            msg_rate_out=float(i % 13),
            msg_throughput_out=float(i % 7919),
            consumer_count=i % 5,
            producer_count=i % 3,
            topics=1 + i % 4,
        )
        for i in range(n)
    }
    host: SystemResourceUsage = system_usage(cpu=50, bandwidth_in=20)
    report = LocalBrokerData()
    report.update(host, stats)
    text = json.dumps(report.to_json())
    doc = json.loads(text)

    t_loads = best_of(lambda: json.loads(text))
    t_from = best_of(lambda: LocalBrokerData.from_json(doc))
    t_to = best_of(lambda: json.dumps(report.to_json()))
    t_update = best_of(lambda: LocalBrokerData().update(host, stats))
    t_new_stats = best_of(lambda: [NamespaceBundleStats(msg_rate_in=1.0, topics=1) for _ in range(n)])

    histories = {name: BundleData.new_default() for name in stats}
    t_fold = best_of(lambda: [histories[name].update(sample) for name, sample in stats.items()])

    t_sorted = best_of(
        lambda: sorted(stats.items(), key=lambda kv: kv[1].msg_throughput_in, reverse=True)[:10]
    )
    t_topk = best_of(lambda: top_k_bundles(stats, 10))

    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"one LocalBrokerData report with {n:,} bundles ({len(text) / 1e6:.1f} MB of JSON)")
    print(f"baseline json.loads          : {t_loads * 1e3:8.1f} ms")
    print(f"LocalBrokerData.from_json    : {t_from * 1e3:8.1f} ms ({t_from / t_loads:.2f}x json.loads)")
    print(f"to_json + json.dumps         : {t_to * 1e3:8.1f} ms")
    print(f"LocalBrokerData.update       : {t_update * 1e3:8.1f} ms ({t_update / n * 1e6:.2f} µs/bundle)")
    print(f"NamespaceBundleStats(...)    : {t_new_stats / n * 1e6:8.2f} µs each (validated)")
    print(f"BundleData.update            : {t_fold / n * 1e6:8.2f} µs per sample (both windows)")
    print(f"baseline sorted by tput      : {t_sorted * 1e3:8.1f} ms")
    print(f"top_k_bundles(k=10)          : {t_topk * 1e3:8.1f} ms ({t_topk / t_sorted:.2f}x the plain sort)")
    verdict(
        "from_json <= 1.5x json.loads, top_k_bundles <= 2x the plain sort",
        f"{t_from / t_loads:.2f}x, {t_topk / t_sorted:.2f}x",
        t_from / t_loads <= 1.5 and t_topk / t_sorted <= 2.0,
    )


if __name__ == "__main__":
    main()
