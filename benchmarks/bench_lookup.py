"""Lookup latency and throughput of a standalone cluster, on the embedded store and on ZooKeeper.

    .venv/bin/python benchmarks/bench_lookup.py [--store memory|zk|both] [--seconds 8] [--connections 16]

What runs where (all on 127.0.0.1):

* **memory** -- ``brokerlb standalone --brokers 3`` in one process (the embedded store lives in
  that process, so all three brokers share it);
* **zk** -- a ZooKeeper server and three ``brokerlb broker`` processes;
* the **load generator** is a separate process: a raw asyncio HTTP/1.1 keep-alive client
  (httpx would be the bottleneck), ``--connections`` connections, following 307 redirects.

Measurements (each a separate phase):

1. **first-time assignment** -- one lookup per unowned bundle of a 512-bundle namespace, sent to a
   broker that is *not* the leader: 307 to the leader, placement (decision engine), 307 to the
   chosen broker, which takes ownership (a store write) and answers 200;
2. **owned bundles, throughput** -- lookups of random topics of that namespace (every bundle
   owned) against one broker process for ``--seconds``, ``--connections`` at once;
3. **owned bundles, latency** -- the same with 4 connections, and with one (no queueing);
4. **baseline** -- ``GET /admin/v2/brokers/health`` (the FastAPI stack, no work) with one
   connection: the framework's floor on the same box, for a ratio.

Figures are printed as a table and as JSON (``--json``), with the machine (CPUs, load average):
on a busy 2-core box the numbers move with the other load; compare against the baseline of the
same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BUNDLES = 512
SETTINGS = {
    "brokerlbHostUsage": "traffic",
    "clusterName": "bench",
    "loadBalancerSheddingIntervalMinutes": 60,
    "metadataStoreSessionTimeoutMillis": 10000,
}


# --------------------------------------------------------------------------- load generator (own process)


async def _request(conns: dict[tuple[str, int], Any], host: str, port: int, path: str) -> tuple[int, bytes]:
    key = (host, port)
    conn = conns.get(key)
    if conn is None:
        conn = conns[key] = await asyncio.open_connection(host, port)
    reader, writer = conn
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    location = b""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        lname = name.lower()
        if lname == b"content-length":
            length = int(value)
        elif lname == b"location":
            location = value.strip()
    body = await reader.readexactly(length) if length else b""
    return status, (location if status == 307 else body)


async def _lookup(
    conns: dict[tuple[str, int], Any], url: str, path: str, max_redirects: int = 20
) -> tuple[int, int]:
    """GET with redirects; returns (final status, redirects followed)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    for hop in range(max_redirects + 1):
        status, payload = await _request(conns, host, port, path)
        if status != 307:
            return status, hop
        target = urlsplit(payload.decode())
        host, port = target.hostname or host, target.port or port
        path = target.path + (f"?{target.query}" if target.query else "")
    return 599, max_redirects


async def _load(url: str, paths: list[str], connections: int, seconds: float | None) -> dict[str, Any]:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    redirects = 0
    queue = iter(paths)
    deadline = time.perf_counter() + seconds if seconds else None

    async def worker() -> None:
        nonlocal redirects
        conns: dict[tuple[str, int], Any] = {}
        rng = random.Random()
        try:
            while True:
                if deadline is not None:
                    if time.perf_counter() >= deadline:
                        return
                    path = paths[rng.randrange(len(paths))]
                else:
                    path = next(queue, None)
                    if path is None:
                        return
                start = time.perf_counter()
                status, hops = await _lookup(conns, url, path)
                latencies.append(time.perf_counter() - start)
                statuses[status] = statuses.get(status, 0) + 1
                redirects += hops
        finally:
            for _reader, writer in conns.values():
                writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    elapsed = time.perf_counter() - started
    return {"latencies": latencies, "statuses": statuses, "redirects": redirects, "elapsed": elapsed}


def run_load(url: str, paths: list[str], connections: int, seconds: float | None) -> dict[str, Any]:
    try:
        import uvloop

        return uvloop.run(_load(url, paths, connections, seconds))
    except ImportError:
        return asyncio.run(_load(url, paths, connections, seconds))


# --------------------------------------------------------------------------- clusters


def _free_base_port(count: int) -> int:
    from brokerlb.testing.zookeeper import free_port

    for _ in range(50):
        base = free_port()
        if all(_port_free(base + i) for i in range(count)):
            return base
    raise RuntimeError("no run of free ports found")


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


class MemoryCluster:
    def __init__(self, brokers: int = 3) -> None:
        self.base = _free_base_port(brokers)
        self.urls = [f"http://127.0.0.1:{self.base + i}" for i in range(brokers)]
        self.log = tempfile.NamedTemporaryFile(prefix="bench-standalone-", suffix=".log", delete=False)
        args = [
            sys.executable,
            "-m",
            "brokerlb.cli.main",
            "standalone",
            "--brokers",
            str(brokers),
            "--web-port",
            str(self.base),
        ]
        for k, v in SETTINGS.items():
            args += ["--set", f"{k}={v}"]
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT)
        deadline = time.monotonic() + 60
        while "standalone cluster" not in Path(self.log.name).read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(Path(self.log.name).read_text())
            time.sleep(0.1)
        self.pids = [self.proc.pid]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        os.unlink(self.log.name)


class ZooKeeperCluster:
    def __init__(self, brokers: int = 3) -> None:
        from brokerlb.testing.clusters import ProcessCluster
        from brokerlb.testing.zookeeper import ZooKeeperServer

        self.zk = ZooKeeperServer().start()
        self.cluster = ProcessCluster(self.zk.url, brokers, SETTINGS)
        asyncio.run(self.cluster.start())
        self.urls = self.cluster.urls
        self.pids = [p.pid for p in self.cluster.processes]

    def stop(self) -> None:
        asyncio.run(self.cluster.stop())
        self.zk.stop()


# --------------------------------------------------------------------------- phases


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    lat = sorted(result["latencies"])
    if not lat:
        return {"requests": 0}

    def q(p: float) -> float:
        return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 3)

    return {
        "requests": len(lat),
        "per_second": round(len(lat) / result["elapsed"], 1),
        "p50_ms": q(0.50),
        "p99_ms": q(0.99),
        "max_ms": round(lat[-1] * 1000, 3),
        "mean_ms": round(statistics.fmean(lat) * 1000, 3),
        "statuses": result["statuses"],
        "redirects": result["redirects"],
    }


def _setup_namespace(url: str, namespace: str) -> tuple[list[str], list[str]]:
    """Create the namespace; one topic per bundle (for assignment) and 20,000 topics (for owned lookups)."""
    from brokerlb.admin import AdminClient
    from brokerlb.naming import TopicName
    from brokerlb.ring import NamespaceBundles

    with AdminClient(url) as admin:
        admin.create_namespace(namespace, num_bundles=BUNDLES)
    bundles = NamespaceBundles.create(namespace, BUNDLES)
    first: dict[str, str] = {}
    i = 0
    while len(first) < BUNDLES:
        topic = f"persistent://{namespace}/t-{i}"
        first.setdefault(str(bundles.find_bundle(topic)), topic)
        i += 1
    per_bundle = [f"/lookup/v2/topic/{TopicName.parse(t).lookup_name}" for t in first.values()]
    owned = [
        f"/lookup/v2/topic/{TopicName.parse(f'persistent://{namespace}/o-{i}').lookup_name}"
        for i in range(20_000)
    ]
    return per_bundle, owned


def bench_store(
    name: str, cluster: Any, seconds: float, connections: int, pool: ProcessPoolExecutor
) -> dict[str, Any]:
    from brokerlb.admin import AdminClient

    with AdminClient(cluster.urls[0]) as admin:
        leader = admin.get_leader_broker()["serviceUrl"].rstrip("/")
    target = next(u for u in cluster.urls if u != leader)
    namespace = f"public/bench-{name}"
    per_bundle, owned = _setup_namespace(target, namespace)
    results: dict[str, Any] = {"store": name, "target": target, "leader": leader}
    assign = pool.submit(run_load, target, per_bundle, 8, None).result()
    results["first_time_assignment"] = _summary(assign)
    pool.submit(run_load, target, owned[:2000], 8, 2.0).result()  # warm up
    results["owned_throughput"] = _summary(
        pool.submit(run_load, target, owned, connections, seconds).result()
    )
    results["owned_4conn"] = _summary(pool.submit(run_load, target, owned, 4, seconds / 2).result())
    results["owned_latency_1conn"] = _summary(pool.submit(run_load, target, owned, 1, seconds / 2).result())
    results["baseline_health_1conn"] = _summary(
        pool.submit(run_load, target, ["/admin/v2/brokers/health"], 1, seconds / 2).result()
    )
    return results


def _machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": sys.version.split()[0],
    }


def _print(results: list[dict[str, Any]]) -> None:
    print(f"machine: {_machine()}")
    head = f"{'store':8} {'phase':24} {'requests':>9} {'per s':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} statuses"
    print(head)
    print("-" * len(head))
    for r in results:
        for phase in (
            "first_time_assignment",
            "owned_throughput",
            "owned_4conn",
            "owned_latency_1conn",
            "baseline_health_1conn",
        ):
            s = r[phase]
            print(
                f"{r['store']:8} {phase:24} {s['requests']:>9} {s['per_second']:>9} {s['p50_ms']:>8} "
                f"{s['p99_ms']:>8} {s['max_ms']:>8} {s['statuses']} redirects={s['redirects']}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=["memory", "zk", "both"], default="both")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    stores = ["memory", "zk"] if args.store == "both" else [args.store]
    results = []
    with ProcessPoolExecutor(max_workers=1) as pool:
        for store in stores:
            cluster = MemoryCluster() if store == "memory" else ZooKeeperCluster()
            try:
                results.append(bench_store(store, cluster, args.seconds, args.connections, pool))
            finally:
                cluster.stop()
    if args.json:
        print(json.dumps({"machine": _machine(), "results": results}, indent=2))
    else:
        _print(results)


if __name__ == "__main__":
    main()
