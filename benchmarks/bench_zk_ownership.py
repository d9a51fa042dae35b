"""Benchmark: bundle ownership records (assign, take, read) on a real ZooKeeper (memory store as baseline).

Per backend, in the same run:

* ``acquire``        -- one broker takes N free bundles one at a time: the assignment (a create
  of the record) and the take (a compare-and-set to Owned): latency per bundle;
* ``acquire-busy``   -- a second broker tries to assign the same N bundles: each compare-and-set
  loses (the record exists): latency per bundle;
* ``acquire-many``   -- a third namespace's N bundles assigned and taken with 64 in flight:
  throughput;
* ``lookup-cached``  -- owner lookup from the watch-fed table view (a memory read), as lookups
  do: latency per lookup;
* ``lookup-store``   -- owner lookup that reads the record from the store.

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
    OwnershipTable,
)
from brokerlb.errors import RecordConflictError  # noqa: E402
from brokerlb.ownership import BundleState, OwnershipMachine, OwnershipRecord, Write, owner_of  # noqa: E402
from brokerlb.ring import NamespaceBundles  # noqa: E402
from brokerlb.testing.zookeeper import ZooKeeperServer  # noqa: E402


async def take(table: OwnershipTable, broker: str, session: int, bundle: str) -> None:
    """Assign ``bundle`` to ``broker`` and take it (two compare-and-sets, as a lookup and the broker do)."""
    machine = OwnershipMachine()
    assign = machine.assign(bundle, broker, at_ms=0)
    await table.write(assign)
    assert assign.record is not None
    owned = assign.record.next(BundleState.OWNED, at_ms=0, dst=broker, dst_session=session)
    await table.write(Write(bundle=bundle, record=owned, expected=0))


async def lose(table: OwnershipTable, broker: str, bundle: str) -> None:
    try:
        await table.write(OwnershipMachine().assign(bundle, broker, at_ms=0))
    except RecordConflictError:
        return
    raise AssertionError(f"{bundle} was assigned twice")


def owner(record: OwnershipRecord | None) -> str | None:
    return owner_of(record).broker


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
        tables = [await OwnershipTable(x).start() for x in (a, b, c)]
        results["acquire"] = summary(
            await timed_each(bundles, lambda x: take(tables[0], "broker-1:8080", a.session_id or 0, x))
        )
        results["acquire-busy"] = summary(
            await timed_each(bundles, lambda x: lose(tables[1], "broker-2:8080", x))
        )

        many = [str(x) for x in NamespaceBundles.create(f"{ns}/two", n)]
        gate = asyncio.Semaphore(64)

        async def one(bundle: str) -> None:
            async with gate:
                await take(tables[2], "broker-3:8080", c.session_id or 0, bundle)

        t0 = time.perf_counter()
        await asyncio.gather(*(one(x) for x in many))
        elapsed = time.perf_counter() - t0
        results["acquire-many"] = {"n": n, "total_s": elapsed, "per_s": n / elapsed}

        view = await OwnershipTable(reader).start()
        deadline = time.monotonic() + 60
        while len(view) < 2 * n and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert len(view) == 2 * n, len(view)
        cached = []
        for bundle in bundles * 5:
            t0 = time.perf_counter()
            stored = view.get(bundle)
            cached.append(time.perf_counter() - t0)
            assert stored is not None and owner(stored.record) == "broker-1:8080"
        results["lookup-cached"] = summary(cached)
        results["lookup-store"] = summary(await timed_each(bundles, view.read))
        for table in (*tables, view):
            table.close()
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
