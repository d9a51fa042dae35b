"""Benchmark: bundle ownership acquisition and owner lookup on a real ZooKeeper (memory store as baseline).

Per backend, in the same run:

* ``acquire``        -- one broker takes N free bundles one at a time (create the
  ephemeral ownership node + arm its watch): latency per bundle;
* ``acquire-busy``   -- a second broker asks for the same N bundles: each answer is
  the current owner (failed create + read): latency per bundle;
* ``acquire-many``   -- a third namespace's N bundles taken with 64 claims in flight:
  throughput;
* ``lookup-cached``  -- owner lookup from the watch-fed ownership cache (a memory
  read), as lookups do: latency per lookup;
* ``lookup-store``   -- owner lookup that misses the cache and reads the store.

ZooKeeper is Debian's 3.8 package started by ``brokerlb.testing.zookeeper`` on a
loopback port; kazoo's client runs in the same process.

Goal (the last line): lookups are answered from the watch-fed cache, as fast as a memory read,
whatever the store -- on every backend the ``lookup-cached`` p50 is at most 10 µs.

Run: ``.venv/bin/python benchmarks/bench_zk_ownership.py [--bundles 2000] [--json out.json]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdict import verdict  # noqa: E402

from brokerlb.coordination import (  # noqa: E402
    MemoryMetadataStore,
    MemoryServer,
    MetadataStore,
    NamespaceEphemeralData,
    OwnershipCache,
    OwnershipManager,
)
from brokerlb.ring import NamespaceBundles  # noqa: E402
from brokerlb.testing.zookeeper import ZooKeeperServer  # noqa: E402


def broker(n: int) -> NamespaceEphemeralData:
    return NamespaceEphemeralData(f"pulsar://broker-{n}:6650", http_url=f"http://broker-{n}:8080")


def summary(samples_s: list[float]) -> dict[str, float]:
    ordered = sorted(samples_s)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]

    return {
        "n": len(ordered),
        "p50_us": pct(50) * 1e6,
        "p99_us": pct(99) * 1e6,
        "mean_us": statistics.fmean(ordered) * 1e6,
        "max_us": ordered[-1] * 1e6,
    }


async def timed_each(items, op) -> list[float]:
    out = []
    for item in items:
        t0 = time.perf_counter()
        await op(item)
        out.append(time.perf_counter() - t0)
    return out


async def run_backend(name: str, new_store, n: int) -> dict[str, dict[str, float]]:
    stores: list[MetadataStore] = [new_store() for _ in range(4)]
    for s in stores:
        await s.start()
    a, b, c, reader = stores
    ns = f"bench-{uuid.uuid4().hex[:6]}"
    bundles = [str(x) for x in NamespaceBundles.create(f"{ns}/one", n)]
    results: dict[str, dict[str, float]] = {}
    try:
        owner_a = OwnershipManager(a, broker(1))
        results["acquire"] = summary(await timed_each(bundles, owner_a.try_acquire))
        owner_b = OwnershipManager(b, broker(2))
        busy = await timed_each(bundles, owner_b.try_acquire)
        assert not owner_b.owned_bundles()
        results["acquire-busy"] = summary(busy)

        many = [str(x) for x in NamespaceBundles.create(f"{ns}/two", n)]
        owner_c = OwnershipManager(c, broker(3))
        t0 = time.perf_counter()
        got = await owner_c.acquire_many(many, concurrency=64)
        elapsed = time.perf_counter() - t0
        assert all(r.acquired for r in got)
        results["acquire-many"] = {"n": n, "total_s": elapsed, "per_s": n / elapsed}

        cache = await OwnershipCache(reader).start()
        deadline = time.monotonic() + 60
        while len(cache.owners()) < 2 * n and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert len(cache.owners()) == 2 * n, len(cache.owners())
        cached = []
        for bundle in bundles * 5:
            t0 = time.perf_counter()
            info = cache.get_owner(bundle)
            cached.append(time.perf_counter() - t0)
            assert info is not None and info.broker_id == "broker-1:8080"
        results["lookup-cached"] = summary(cached)
        cold = OwnershipCache(reader)  # never started: every lookup reads the store
        results["lookup-store"] = summary(await timed_each(bundles, cold.lookup_owner))
        cache.close()
        for manager in (owner_a, owner_c):
            await manager.close(release=False)
    finally:
        for s in stores:
            await s.close()
    return results


def print_table(all_results: dict[str, dict[str, dict[str, float]]]) -> None:
    print(
        f"{'backend':<10} {'metric':<14} {'ops':>6} {'p50 µs':>10} {'p99 µs':>10} {'mean µs':>10} {'ops/s':>10}"
    )
    for backend, results in all_results.items():
        for metric, r in results.items():
            if "p50_us" in r:
                print(
                    f"{backend:<10} {metric:<14} {r['n']:>6} {r['p50_us']:>10.1f} {r['p99_us']:>10.1f} "
                    f"{r['mean_us']:>10.1f} {1e6 / r['mean_us']:>10.0f}"
                )
            else:
                print(
                    f"{backend:<10} {metric:<14} {r['n']:>6} {'':>10} {'':>10} {'':>10} {r['per_s']:>10.0f}"
                )
    if {"zookeeper", "memory"} <= set(all_results):
        print("\nZooKeeper / memory (p50):")
        for metric in ("acquire", "acquire-busy", "lookup-cached", "lookup-store"):
            zk, mem = all_results["zookeeper"][metric]["p50_us"], all_results["memory"][metric]["p50_us"]
            print(f"  {metric:<14} {zk / mem:8.1f}x")


async def main_async(args: argparse.Namespace) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    server = MemoryServer(f"bench-{uuid.uuid4().hex[:6]}")
    out["memory"] = await run_backend(
        "memory", lambda: MemoryMetadataStore(server, session_timeout=10), args.bundles
    )
    if not args.memory_only:
        from brokerlb.coordination.zookeeper import ZooKeeperMetadataStore

        with ZooKeeperServer() as zk:
            out["zookeeper"] = await run_backend(
                "zookeeper", lambda: ZooKeeperMetadataStore(zk.hosts, session_timeout=10), args.bundles
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bundles", type=int, default=2000)
    parser.add_argument("--memory-only", action="store_true")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args()
    print(
        f"# {platform.node()} {platform.machine()} {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"{args.bundles} bundles"
    )
    results = asyncio.run(main_async(args))
    print_table(results)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"bundles": args.bundles, "cpus": os.cpu_count(), "results": results}, fh, indent=2)
    cached = {b: r["lookup-cached"]["p50_us"] for b, r in results.items()}
    verdict(
        "lookup-cached p50 <= 10 µs on every backend",
        ", ".join(f"{b} {x:.1f} µs" for b, x in cached.items()),
        all(x <= 10.0 for x in cached.values()),
    )


if __name__ == "__main__":
    main()
