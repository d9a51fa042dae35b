"""Lookup throughput of a cluster's owned bundles against a constant ASGI app, on both stores.

    .venv/bin/python benchmarks/bench_lookup.py [--store memory|zk|both] [--seconds 4] [--rounds 4]
        [--connections 16]

What runs where (all on 127.0.0.1):

* **memory** -- ``brokerlb standalone --brokers 3`` in one process (the embedded store lives in
  that process, so all three brokers share it), on the standalone's default metadata store in a
  new temporary ``--data-dir`` (a kept data directory would hold the last run's namespace);
* **zk** -- a ZooKeeper server and three ``brokerlb broker`` processes;
* **baseline** -- a process serving a constant ASGI app (every request answers the body of a real
  lookup answer, as ``application/json``) through the broker's own server class
  (:class:`brokerlb.broker.http.server.HttpServer`: the same uvicorn settings, on uvloop as the
  broker process runs): what the HTTP stack costs with no lookup behind it;
* the **load generator** is a separate process: a raw asyncio HTTP/1.1 keep-alive client
  (httpx would be the bottleneck), ``--connections`` connections, following 307 redirects.

Every server process (the standalone, each broker, the constant app) starts in a session of its
own, as :class:`brokerlb.testing.clusters.ProcessCluster` starts brokers: with Linux's scheduler
autogroups (``/proc/sys/kernel/sched_autogroup_enabled``) a session is a scheduling group, and a
baseline sharing the load generator's group while the brokers each had one of their own was
favoured on a busy machine (same run at load 10-15: the constant app 11-18k requests/s in the
generator's session, 5-6k in its own; the brokers' figures unchanged).

Phases:

1. **first-time assignment** (reported, no goal) -- one lookup per unowned bundle of a namespace
   of ``loadBalancerNamespaceMaximumBundles`` (128) bundles, sent to a broker that is *not* the
   leader: 307 to the leader, placement, 307 to the chosen broker, which takes ownership and
   answers 200;
2. **owned lookups against the baseline** -- lookups of random topics of that namespace (every
   bundle owned), sent to one broker that is not the leader (an answer for a bundle another
   broker owns is a 307 there, followed: what clients see), for ``--seconds``; then the constant
   app for ``--seconds``; ``--rounds`` such pairs, alternated (subject, baseline, subject, ...),
   the ratio taken pair by pair (median quoted);
3. **latency** (reported, no goal) -- owned lookups with one connection (no queueing).

Goal: owned lookups >= 0.8x the constant app's requests per second on each store (median of the
pairs). The last line prints it with ``met`` / ``NOT met``; ``--json`` prints every figure as
JSON before it.
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

GOAL = 0.8
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
        self.data = tempfile.TemporaryDirectory(prefix="bench-standalone-data-")
        args = [
            sys.executable,
            "-m",
            "brokerlb.cli.main",
            "standalone",
            "--brokers",
            str(brokers),
            "--data-dir",
            self.data.name,
            "--web-port",
            str(self.base),
            "--broker-port",
            "0",  # free pulsar:// ports (the default 6650 may be another cluster's)
        ]
        for k, v in SETTINGS.items():
            args += ["--set", f"{k}={v}"]
        self.proc = subprocess.Popen(
            args, stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True
        )
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
        self.data.cleanup()


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
    """Create the namespace with as many bundles as a namespace may have; one topic per bundle
    (for assignment) and 20,000 topics (for owned lookups)."""
    from brokerlb.admin import AdminClient
    from brokerlb.config import ServiceConfig
    from brokerlb.naming import TopicName
    from brokerlb.ring import NamespaceBundles

    count = ServiceConfig().loadBalancerNamespaceMaximumBundles
    with AdminClient(url) as admin:
        admin.create_namespace(namespace, num_bundles=count)
    bundles = NamespaceBundles.create(namespace, count)
    first: dict[str, str] = {}
    i = 0
    while len(first) < count:
        topic = f"persistent://{namespace}/t-{i}"
        first.setdefault(str(bundles.find_bundle(topic)), topic)
        i += 1
    per_bundle = [f"/lookup/v2/topic/{TopicName.parse(t).lookup_name}" for t in first.values()]
    owned = [
        f"/lookup/v2/topic/{TopicName.parse(f'persistent://{namespace}/o-{i}').lookup_name}"
        for i in range(20_000)
    ]
    return per_bundle, owned


class ConstantApp:
    """The baseline: a process serving one constant answer through the broker's HTTP server class."""

    def __init__(self, body: bytes) -> None:
        self.log = tempfile.NamedTemporaryFile(prefix="bench-constant-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--constant-app"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            cwd=ROOT,
            start_new_session=True,  # scheduled as the brokers are (see the module docstring)
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(body)
        self.proc.stdin.close()
        line = self.proc.stdout.readline().decode()
        if not line.startswith("port "):
            raise RuntimeError(f"constant app did not start: {line!r} {Path(self.log.name).read_text()}")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        os.unlink(self.log.name)


def serve_constant_app() -> None:
    """``--constant-app``: read the body from stdin, serve it to every request, print the port."""
    from brokerlb.broker.http.server import HttpServer, bind_socket

    body = sys.stdin.buffer.read()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    start = {"type": "http.response.start", "status": 200, "headers": headers}
    answer = {"type": "http.response.body", "body": body}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send(start)
        await send(answer)

    async def main() -> None:
        server = HttpServer(app, bind_socket("127.0.0.1", 0))
        await server.start()
        print(f"port {server.port}", flush=True)
        await asyncio.Event().wait()

    try:
        import uvloop

        uvloop.run(main())
    except ImportError:  # pragma: no cover - the server extra installs uvloop
        asyncio.run(main())


def _one_answer(url: str, path: str) -> bytes:
    import httpx

    with httpx.Client(follow_redirects=True) as client:
        response = client.get(url + path)
        response.raise_for_status()
        return response.content


def bench_store(
    name: str, cluster: Any, seconds: float, rounds: int, connections: int, pool: ProcessPoolExecutor
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
    constant = ConstantApp(_one_answer(target, owned[0]))
    try:
        pool.submit(run_load, target, owned[:2000], 8, min(2.0, seconds)).result()  # warm-up, both
        pool.submit(run_load, constant.url, owned[:2000], 8, min(2.0, seconds)).result()
        pairs = []
        for _ in range(rounds):
            subject = _summary(pool.submit(run_load, target, owned, connections, seconds).result())
            baseline = _summary(pool.submit(run_load, constant.url, owned, connections, seconds).result())
            pairs.append((subject, baseline))
    finally:
        constant.stop()
    results["owned_pairs"] = pairs
    ratios = [s["per_second"] / b["per_second"] for s, b in pairs if s["requests"] and b["requests"]]
    results["ratio"] = round(statistics.median(ratios), 3) if ratios else 0.0
    results["ratios"] = [round(r, 3) for r in ratios]
    results["owned_latency_1conn"] = _summary(pool.submit(run_load, target, owned, 1, seconds / 2).result())
    return results


def _machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": sys.version.split()[0],
    }


def _print(results: list[dict[str, Any]]) -> None:
    print(f"machine: {_machine()}")
    head = f"{'store':8} {'phase':28} {'requests':>9} {'per s':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} statuses"
    print(head)
    print("-" * len(head))

    def row(store: str, phase: str, s: dict[str, Any]) -> None:
        if not s.get("requests"):
            print(f"{store:8} {phase:28} {0:>9}")
            return
        print(
            f"{store:8} {phase:28} {s['requests']:>9} {s['per_second']:>9} {s['p50_ms']:>8} "
            f"{s['p99_ms']:>8} {s['max_ms']:>8} {s['statuses']} redirects={s['redirects']}"
        )

    for r in results:
        row(r["store"], "first_time_assignment", r["first_time_assignment"])
        for i, (subject, baseline) in enumerate(r["owned_pairs"], 1):
            row(r["store"], f"owned lookups, pair {i}", subject)
            row(r["store"], f"constant app, pair {i}", baseline)
        row(r["store"], "owned lookups, 1 connection", r["owned_latency_1conn"])
        print(f"{r['store']:8} owned / constant app, pair by pair: {r['ratios']} -> median {r['ratio']}")


def main() -> None:
    if sys.argv[1:] == ["--constant-app"]:
        serve_constant_app()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=["memory", "zk", "both"], default="both")
    parser.add_argument("--seconds", type=float, default=4.0, help="each half of a pair")
    parser.add_argument(
        "--rounds", type=int, default=4, help="alternating pairs (owned lookups, constant app)"
    )
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    stores = ["memory", "zk"] if args.store == "both" else [args.store]
    results = []
    with ProcessPoolExecutor(max_workers=1) as pool:
        for store in stores:
            cluster = MemoryCluster() if store == "memory" else ZooKeeperCluster()
            try:
                results.append(bench_store(store, cluster, args.seconds, args.rounds, args.connections, pool))
            finally:
                cluster.stop()
    if args.json:
        print(json.dumps({"machine": _machine(), "results": results}, indent=2))
    else:
        _print(results)
    verdicts = [f"{r['store']} {r['ratio']:.2f}x" for r in results]
    met = all(r["ratio"] >= GOAL for r in results)
    print(
        f"goal: owned lookups >= {GOAL}x a constant ASGI app on the broker's uvicorn settings "
        f"(median of {args.rounds} alternating pairs, load average {os.getloadavg()[0]:.1f}): "
        f"{', '.join(verdicts)} -> {'met' if met else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
