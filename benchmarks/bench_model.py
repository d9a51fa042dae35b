"""Benchmark: the load-data model on one large broker report.

What the leader and the simulator do most: parse a broker's ``LocalBrokerData``
JSON, refresh a report from bundle stats, fold samples into bundle histories and
pick the top-K bundles. Baselines measured in the same run, alternated with their subject
(7 pairs, the ratio taken pair by pair): ``json.loads`` of the same document (parsing without
validation), and a plain ``sorted`` of the same stats by throughput (ordering without Pulsar's
resolution keys).

Goal (the last line): a report parsed and validated (``LocalBrokerData.from_json`` of the
parsed document) within 1.5x ``json.loads`` of it -- validation must not cost more than half
the parse. ``top_k_bundles`` (Pulsar's ``TopKBundles``: its comparator's tie-breaking keys and
namespace filters, per bundle in Python) is printed against the plain sort for scale, no goal:
about 10-30x it on this machine.

Run: ``.venv/bin/python benchmarks/bench_model.py [--bundles 10000]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
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


def paired(baseline, subject, rounds: int = 7) -> tuple[float, float, float]:
    """Baseline and subject timed in turn, ``rounds`` pairs: their median times and the median
    of the pair-by-pair ratio subject / baseline."""
    base, subj, ratios = [], [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        baseline()
        t1 = time.perf_counter()
        subject()
        t2 = time.perf_counter()
        base.append(t1 - t0)
        subj.append(t2 - t1)
        ratios.append((t2 - t1) / (t1 - t0))
    return statistics.median(base), statistics.median(subj), statistics.median(ratios)


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

    t_loads, t_from, from_ratio = paired(lambda: json.loads(text), lambda: LocalBrokerData.from_json(doc))
    t_to = best_of(lambda: json.dumps(report.to_json()))
    t_update = best_of(lambda: LocalBrokerData().update(host, stats))
    t_new_stats = best_of(lambda: [NamespaceBundleStats(msg_rate_in=1.0, topics=1) for _ in range(n)])

    histories = {name: BundleData.new_default() for name in stats}
    t_fold = best_of(lambda: [histories[name].update(sample) for name, sample in stats.items()])

    t_sorted, t_topk, topk_ratio = paired(
        lambda: sorted(stats.items(), key=lambda kv: kv[1].msg_throughput_in, reverse=True)[:10],
        lambda: top_k_bundles(stats, 10),
    )

    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"one LocalBrokerData report with {n:,} bundles ({len(text) / 1e6:.1f} MB of JSON)")
    print(f"baseline json.loads          : {t_loads * 1e3:8.1f} ms")
    print(
        f"LocalBrokerData.from_json    : {t_from * 1e3:8.1f} ms ({from_ratio:.2f}x json.loads, median of pairs)"
    )
    print(f"to_json + json.dumps         : {t_to * 1e3:8.1f} ms")
    print(f"LocalBrokerData.update       : {t_update * 1e3:8.1f} ms ({t_update / n * 1e6:.2f} µs/bundle)")
    print(f"NamespaceBundleStats(...)    : {t_new_stats / n * 1e6:8.2f} µs each (validated)")
    print(f"BundleData.update            : {t_fold / n * 1e6:8.2f} µs per sample (both windows)")
    print(f"baseline sorted by tput      : {t_sorted * 1e3:8.1f} ms")
    print(
        f"top_k_bundles(k=10)          : {t_topk * 1e3:8.1f} ms ({topk_ratio:.2f}x the plain sort, median of pairs)"
    )
    verdict("from_json <= 1.5x json.loads of the same report", f"{from_ratio:.2f}x", from_ratio <= 1.5)


if __name__ == "__main__":
    main()
