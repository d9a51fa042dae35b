"""Pulsar's official client through brokerlb's binary protocol: throughput and the pause of planned moves.

    .venv/bin/python benchmarks/bench_binary_protocol.py [--seconds 10] [--size 100] [--moves 10] [--json]

What runs where (all on 127.0.0.1; every party in its own process):

* the **broker**: ``brokerlb standalone --brokers 1`` (throughput) or ``--brokers 3`` (moves);
* the **load generator**: Apache Pulsar's official Python client (``pulsar-client``, C++ core) in
  a process of its own (:data:`LOADGEN`; ``--loadgens``, default 1), producers on 4 topics, as
  fast as 1000 pending messages per producer allow; batching on (the client's defaults: up to
  1000 messages / 128 KB / 10 ms per batch) and off;
* **cores**: on a 2-core machine the broker (and the null broker) is pinned to one core and the
  load generator to the other (``--no-pin``: not). Unpinned, two load generators took both cores
  and the figure measured mostly the client; pinned, the broker has a core of its own, and its
  CPU per message (read from the kernel, not the client) is printed beside the rates: when both
  the broker and the null broker keep up with one client, their rates agree and the CPU per
  message is what tells the broker's cost;
* **baselines of the same run**: the **null broker** (:mod:`brokerlb.testing.null_broker`: the
  same protocol code acking every SEND without storing it -- the protocol's own cost) driven by
  the same load generator; and the **WebSocket path** of the same broker driven by
  ``brokerlb perf produce`` (brokerlb's WebSocket client).

Phases:

1. **throughput** -- after a warm-up of both, ``--rounds`` pairs (broker, null broker,
   alternated) of messages/s acknowledged to the producers and the server's CPU µs per message,
   batching off and on, the ratios taken pair by pair; the WebSocket path for comparison;
2. **with a consumer** -- the same producers plus an official-client consumer per topic
   acknowledging everything: messages/s acknowledged and received;
3. **pause per planned move** -- one official-client producer at ``--pause-rate`` msg/s on a
   topic of a 3-broker cluster; the topic's bundle is unloaded and transferred ``--moves``
   times each, alternately, 1.5 s apart; the pause of a move is the longest gap between two
   consecutive acknowledgements that began while the move ran (from the admin call to its
   answer: the gap in which the topic stopped and came back; p50 / p90 / max per kind). Beside
   it, the same measure over windows as long with no move (the **floor**: what the machine's own
   hiccups cost at this load), and the former measure (the longest gap from the move to the next
   one, hiccups after the move included).

The figures move with other load on the machine: compare each against the baseline of the same
run. **Storage engines** (``--storage sqlite,postgresql``; PostgreSQL is started for the run) are
measured beside the memory path (``brokerlbStorageUrl=memory:``) in the same rounds, alternated;
each engine's bare group-commit limit is in ``bench_storage.py``. The pause phase runs
``--pause-rounds`` times, each round every backlog of ``--backlog-mb`` (e.g. ``0,1024``) on every
engine in turn (a new cluster each), the backlog published to the moved topic for a durable
subscription nobody reads (a move must not carry data: its pause must not grow with the
backlog); the latency
phase publishes at ``--latency-rate`` msg/s. Goal (the last line): the memory path's messages/s >=
0.8x the null broker's, each engine's >= 0.8x the memory path's, batching off and on (medians of
the rounds); publish p99 <= 10 ms at 5,000 msg/s; a transfer's pause p50 <= 50 ms with 1 GB of
backlog.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOPICS = 4
BROKER_SETTINGS = {
    "clusterName": "bench",
    "webSocketServiceEnabled": True,
    "statsUpdateFrequencyInSecs": 5,
    "loadBalancerSheddingEnabled": False,
    "metadataStoreSessionTimeoutMillis": 10000,
}

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verdict import verdict  # noqa: E402

GOAL = 0.8

#: The load generator (its own process): official-client producers (and consumers), JSON out.
LOADGEN = r"""
import json, os, sys, threading, time
import pulsar
from brokerlb.perf.binary import native_logger  # a Python logger can abort this process's exit

spec = json.loads(sys.argv[1])
client = pulsar.Client(spec["url"], operation_timeout_seconds=60, logger=native_logger(errors_only=True),
                       io_threads=1, message_listener_threads=1)
topics = [f"{spec['topic']}-{i}" for i in range(spec["topics"])]
payload = b"x" * spec["size"]
lock = threading.Lock()
acked = [0]
errors = [0]
received = [0]
ack_times = []

latencies = []

def on_ack(res, _mid):
    with lock:
        if res == pulsar.Result.Ok:
            acked[0] += 1
            if spec.get("ack_times"):
                ack_times.append(time.monotonic())
        else:
            errors[0] += 1

def timed(sent_at):
    def done(res, mid):
        on_ack(res, mid)
        if res == pulsar.Result.Ok:
            latencies.append(time.monotonic() - sent_at)
    return done

consumers = []
if spec.get("consume"):
    def listener(consumer, message):
        with lock:
            received[0] += 1
        consumer.acknowledge(message)
    for t in topics:
        consumers.append(client.subscribe(t, "bench", consumer_type=pulsar.ConsumerType.Shared,
                                          message_listener=listener))
producers = [client.create_producer(t, batching_enabled=spec["batching"], block_if_queue_full=True,
                                    max_pending_messages=spec.get("pending", 1000),
                                    send_timeout_millis=0) for t in topics]
for name in spec.get("durable_subscriptions", []):  # a backlog: subscriptions nobody reads
    for t in topics:
        client.subscribe(t, name, consumer_type=pulsar.ConsumerType.Shared).close()
print("ready", flush=True)
sys.stdin.readline()  # go
start = time.monotonic()
deadline = start + spec["seconds"]
rate = spec.get("rate") or 0
limit = spec.get("count") or 0
n = 0
while time.monotonic() < deadline and (not limit or n < limit):
    producer = producers[n % len(producers)]
    producer.send_async(payload, timed(time.monotonic()) if spec.get("latency") else on_ack)
    n += 1
    if rate:
        delay = start + n / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
with lock:
    window_acked = acked[0]
elapsed = time.monotonic() - start
for p in producers:
    p.flush()
drain = time.monotonic() + 10
while spec.get("consume") and time.monotonic() < drain and received[0] < acked[0]:
    time.sleep(0.05)
out = {"sent": n, "acked": acked[0], "ackedInWindow": window_acked, "seconds": elapsed,
       "rate": window_acked / elapsed, "errors": errors[0], "received": received[0]}
if spec.get("ack_times"):
    out["ackTimes"] = ack_times
if latencies:
    latencies.sort()
    out["latencyP50Ms"] = latencies[len(latencies) // 2] * 1000
    out["latencyP99Ms"] = latencies[int(0.99 * (len(latencies) - 1))] * 1000
print(json.dumps(out), flush=True)
client.close()
"""


#: cores of the broker (and the null broker) and of the load generators, when the machine has two
BROKER_CPUS: set[int] = set()
LOADGEN_CPUS: set[int] = set()


def plan_cores(pin: bool) -> str:
    """Give the broker one core and the load generators the other, when there are two to give."""
    cpus = sorted(os.sched_getaffinity(0))
    if not pin or len(cpus) < 2:
        return "not pinned"
    BROKER_CPUS.clear()
    LOADGEN_CPUS.clear()
    BROKER_CPUS.add(cpus[0])
    LOADGEN_CPUS.update(cpus[1:])
    return f"broker on CPU {sorted(BROKER_CPUS)}, load generators on CPU {sorted(LOADGEN_CPUS)}"


def pin(pid: int, cpus: set[int]) -> None:
    if cpus:
        os.sched_setaffinity(pid, cpus)


def cpu_seconds(pid: int) -> float:
    import psutil

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


class LoadGen:
    """The official-client load generator in its own process: started, told to go, its JSON read."""

    def __init__(self, **spec: Any) -> None:
        self.spec = spec
        self.proc: asyncio.subprocess.Process | None = None

    async def ready(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            LOADGEN,
            json.dumps(self.spec),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=1 << 26,  # the pause phase's answer lists every acknowledgement time
        )
        assert self.proc.stdout is not None
        pin(self.proc.pid, LOADGEN_CPUS)
        line = await asyncio.wait_for(self.proc.stdout.readline(), 120)
        if line.strip() != b"ready":
            err = await self.proc.stderr.read() if self.proc.stderr else b""
            raise RuntimeError(f"load generator did not start: {line!r} {err.decode()[-2000:]}")

    async def run(self) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(b"go\n")
        await self.proc.stdin.drain()
        line = await self.proc.stdout.readline()
        await self.proc.wait()
        if not line:
            err = await self.proc.stderr.read() if self.proc.stderr else b""
            raise RuntimeError(f"load generator failed: {err.decode()[-2000:]}")
        return dict(json.loads(line))


async def produce(
    url: str, topic: str, seconds: float, size: int, batching: bool, pid: int, loadgens: int = 1, **extra: Any
) -> dict[str, Any]:
    """``loadgens`` load-generator processes at once (each with its own topics), their sums."""
    gens = [
        LoadGen(
            url=url,
            topic=f"{topic}-g{i}",
            topics=TOPICS,
            seconds=seconds,
            size=size,
            batching=batching,
            **extra,
        )
        for i in range(loadgens)
    ]
    for gen in gens:
        await gen.ready()
    before = cpu_seconds(pid)
    parts = await asyncio.gather(*(gen.run() for gen in gens))
    used = cpu_seconds(pid) - before
    result: dict[str, Any] = {
        key: sum(p[key] for p in parts)
        for key in ("sent", "acked", "ackedInWindow", "rate", "errors", "received")
    }
    result["loadgens"] = loadgens
    result["seconds"] = max(p["seconds"] for p in parts)
    result["serverCpuUsPerMsg"] = round(used / max(1, result["acked"]) * 1e6, 1)
    result["serverCpuSeconds"] = round(used, 2)
    if extra.get("ack_times"):
        result["ackTimes"] = parts[0]["ackTimes"]
    for key in ("latencyP50Ms", "latencyP99Ms"):
        if key in parts[0]:
            result[key] = parts[0][key]
    return result


async def websocket_path(url: str, topic: str, seconds: float, size: int, pid: int) -> dict[str, Any]:
    args = [
        sys.executable, "-m", "brokerlb.cli.main", "perf", "produce", topic, "--service-url", url,
        "--num-topics", str(TOPICS), "--test-duration", str(seconds), "--rate", "0", "--size", str(size),
        "--max-outstanding", "1000", "--json",
    ]  # fmt: skip
    before = cpu_seconds(pid)
    proc = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"perf produce failed: {err.decode()[-2000:]}")
    result = dict(json.loads(out))
    used = cpu_seconds(pid) - before
    result["serverCpuUsPerMsg"] = round(used / max(1, result["acked"]) * 1e6, 1)
    return result


def storage_settings(args: argparse.Namespace) -> dict[str, Any]:
    """``brokerlbStorageUrl`` of each engine compared (``memory`` first: the baseline path)."""
    engines: dict[str, Any] = {"memory": lambda: {"brokerlbStorageUrl": "memory:"}}
    if "sqlite" in args.storage:
        engines["sqlite"] = lambda: {}  # brokerlb standalone's default: its --data-dir
    if "postgresql" in args.storage:
        from brokerlb.testing.postgres import PostgresServer

        server = PostgresServer().start()
        PG_SERVERS.append(server)
        engines["postgresql"] = lambda: {"brokerlbStorageUrl": server.new_database_url()}
    return engines


PG_SERVERS: list[Any] = []


async def throughput(args: argparse.Namespace, engines: dict[str, Any]) -> dict[str, Any]:
    """One broker per storage engine and the null broker, all pinned to the broker's core; pairs
    alternated round by round: every engine, then the null broker."""
    from contextlib import AsyncExitStack

    from brokerlb.admin import AsyncAdminClient
    from brokerlb.testing.standalone_process import StandaloneProcess

    results: dict[str, Any] = {"cores": plan_cores(args.pin), "engines": list(engines)}
    secs, size, gens = args.seconds, args.size, args.loadgens
    null = subprocess.Popen(
        [sys.executable, "-m", "brokerlb.testing.null_broker"], stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert null.stdout is not None
        line = (await asyncio.to_thread(null.stdout.readline)).decode()
        null_url = line.split("ready at ", 1)[1].strip()
        pin(null.pid, BROKER_CPUS)
        async with AsyncExitStack() as stack:
            brokers: dict[str, tuple[str, int]] = {}
            for name, settings in engines.items():
                broker = await stack.enter_async_context(
                    StandaloneProcess(1, {**BROKER_SETTINGS, **settings()})
                )
                pid = broker.process.pid if broker.process is not None else 0
                pin(pid, BROKER_CPUS)
                async with AsyncAdminClient(broker.urls[0]) as admin:
                    await admin.create_namespace("public/bench", num_bundles=4)
                brokers[name] = (broker.binary_urls[0], pid)
                if name == "memory":
                    ws_url = broker.urls[0]
            ns = "persistent://public/bench"
            for batching in (False, True):  # warm-up of each
                for name, (url, pid) in brokers.items():
                    await produce(
                        url, f"{ns}/warmup-{name}-{batching}", min(3.0, secs), size, batching, pid, gens
                    )
                await produce(
                    null_url, f"{ns}/null-warmup-{batching}", min(3.0, secs), size, batching, null.pid, gens
                )
            for kind, batching in (("unbatched", False), ("batched", True)):
                rounds: list[dict[str, Any]] = []
                for i in range(args.rounds):
                    row = {
                        name: await produce(url, f"{ns}/{kind}-{name}-{i}", secs, size, batching, pid, gens)
                        for name, (url, pid) in brokers.items()
                    }
                    row["null"] = await produce(
                        null_url, f"{ns}/null-{kind}-{i}", secs, size, batching, null.pid, gens
                    )
                    rounds.append(row)
                results[kind + "Rounds"] = rounds
                # the round whose memory/null ratio is the median is shown; ratios are taken round by round
                order = sorted(
                    range(len(rounds)),
                    key=lambda k: rounds[k]["memory"]["rate"] / max(rounds[k]["null"]["rate"], 1e-9),
                )
                middle = rounds[order[len(order) // 2]]
                results[kind], results["null" + kind.capitalize()] = middle["memory"], middle["null"]
                results[kind + "Ratios"] = [
                    round(r["memory"]["rate"] / max(r["null"]["rate"], 1e-9), 3) for r in rounds
                ]
                results[kind + "CpuRatios"] = [
                    round(r["memory"]["serverCpuUsPerMsg"] / max(r["null"]["serverCpuUsPerMsg"], 1e-9), 3)
                    for r in rounds
                ]
                for name in brokers:
                    if name != "memory":
                        results[f"{kind}Durable"] = results.get(f"{kind}Durable", {})
                        results[f"{kind}Durable"][name] = [
                            round(r[name]["rate"] / max(r["memory"]["rate"], 1e-9), 3) for r in rounds
                        ]
            url, pid = brokers["memory"]
            results["unbatchedWithConsumers"] = await produce(
                url, f"{ns}/plain-c", secs, size, False, pid, gens, consume=True
            )
            results["batchedWithConsumers"] = await produce(
                url, f"{ns}/batched-c", secs, size, True, pid, gens, consume=True
            )
            results["latency"] = {
                name: await produce(
                    url,
                    f"{ns}/latency-{name}",
                    secs,
                    size,
                    False,
                    pid,
                    1,
                    rate=args.latency_rate,
                    latency=True,
                )
                for name, (url, pid) in brokers.items()
            }
            results["websocket"] = await websocket_path(ws_url, f"{ns}/ws", secs, size, brokers["memory"][1])
    finally:
        null.terminate()
        null.wait(10)
    return results


def _gaps(ack_times: list[float], start: float, end: float) -> list[tuple[float, float]]:
    """``(gap, its first ack)`` between consecutive acknowledgements whose first ack is in
    ``[start, end]`` (and the ack before ``start``, so a gap that began before is counted)."""
    import bisect

    i = max(0, bisect.bisect_left(ack_times, start) - 1)
    out = []
    while i + 1 < len(ack_times) and ack_times[i] <= end:
        out.append((ack_times[i + 1] - ack_times[i], ack_times[i]))
        i += 1
    return out


def _pause(ack_times: list[float], start: float, end: float) -> float:
    """The longest gap between two consecutive acknowledgements that began in ``[start, end]``."""
    gaps = _gaps(ack_times, start, end)
    return max(g for g, _ in gaps) if gaps else float("nan")


def _percentiles(values: list[float]) -> dict[str, Any]:
    """p50 (the median), p90 and p99 by nearest rank (of 10 moves, p99 is the longest), max."""
    values = sorted(v for v in values if v == v)

    def rank(q: float) -> float | None:
        return round(values[max(0, math.ceil(q * len(values)) - 1)], 1) if values else None

    return {
        "moves": len(values),
        "p50Ms": round(statistics.median(values), 1) if values else None,
        "p90Ms": rank(0.9),
        "p99Ms": rank(0.99),
        "maxMs": round(max(values), 1) if values else None,
        "allMs": [round(v, 1) for v in values],
    }


async def move_pauses(args: argparse.Namespace, settings: dict[str, Any], backlog_mb: int) -> dict[str, Any]:
    """One cluster: ``backlog_mb`` MiB of backlog on the moved topic, then ``--moves`` unloads and
    transfers each. The pause of a move is the longest gap between two acknowledgements that began
    while the move ran (from the admin call to its answer: the gap in which the topic stopped and
    came back); the *floor* is the same measure over a window as long, at a time with no move
    (what the machine's own hiccups cost: compare the pause against it)."""
    from brokerlb.admin import AsyncAdminClient
    from brokerlb.testing.standalone_process import StandaloneProcess

    async with StandaloneProcess(3, {**BROKER_SETTINGS, **settings}) as cluster:
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace("public/moves", num_bundles=4)
        url = "pulsar://" + ",".join(u.removeprefix("pulsar://") for u in cluster.binary_urls)
        topic = "persistent://public/moves/paused"
        backlog = 0
        if backlog_mb > 0:  # the moved topic's backlog: a durable subscription nobody reads
            fill_size = 64 * 1024
            fill = LoadGen(
                url=url, topic=topic, topics=1, seconds=3600, size=fill_size, batching=True,
                count=backlog_mb * 1024 * 1024 // fill_size, durable_subscriptions=["backlog"],
            )  # fmt: skip
            await fill.ready()
            filled = await fill.run()
            backlog = filled["acked"] * fill_size
        seconds = 4.0 + args.moves * 2 * 2.5  # 1.5 s apart plus the moves themselves on a loaded machine
        gen = LoadGen(
            url=url, topic=topic, topics=1, seconds=seconds, size=args.size, batching=False,
            rate=args.pause_rate, ack_times=True, pending=10000,
        )  # fmt: skip
        await gen.ready()
        task = asyncio.create_task(gen.run())
        await asyncio.sleep(2.0)  # pacing of the benchmark's own schedule, not synchronisation
        moves: list[tuple[str, float, float]] = []
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            for i in range(args.moves * 2):
                if task.done():  # the traffic ended: a move now would have no pause to measure
                    break
                data = await admin.lookup_topic(f"{topic}-0")
                bundle = await admin.topic_bundle_range(f"{topic}-0")
                owner = data["httpUrl"].removeprefix("http://")
                kind = "unload" if i % 2 == 0 else "transfer"
                destination = None
                if kind == "transfer":
                    destination = next(b for b in cluster.broker_ids if b != owner)
                started = time.monotonic()
                async with AsyncAdminClient(data["httpUrl"]) as owner_admin:
                    await owner_admin.unload_bundle("public/moves", bundle, destination_broker=destination)
                moves.append((kind, started, time.monotonic()))
                await asyncio.sleep(1.5)
        result = await task
    acks = result["ackTimes"]
    out: dict[str, Any] = {
        "rate": args.pause_rate,
        "errors": result["errors"],
        "backlogBytes": backlog,
        "loadavg": os.getloadavg()[0],
    }
    nexts = [t for _, t, _ in moves[1:]] + [moves[-1][2] + 1.4]
    floors = []
    for (_, started, answered), following in zip(moves, nexts, strict=True):
        quiet = answered + 0.3  # a window as long as the move, after it, before the next one
        if quiet + (answered - started) < following - 0.05:
            floors.append(_pause(acks, quiet, quiet + (answered - started)) * 1000)
    out["floor"] = _percentiles(floors)
    for kind in ("unload", "transfer"):
        out[kind] = _percentiles(
            [_pause(acks, started, answered) * 1000 for k, started, answered in moves if k == kind]
        )
        # the former measure: the longest gap from the move to the next one (hiccups included)
        out[kind]["windowMaxMs"] = _percentiles(
            [
                _pause(acks, started, following - 0.05) * 1000
                for (k, started, _), following in zip(moves, nexts, strict=True)
                if k == kind
            ]
        )["p50Ms"]
    return out


def report(r: dict[str, Any]) -> None:
    t = r["throughput"]

    def line(name: str, p: dict[str, Any]) -> str:
        extra = f", received {p['received']:,}" if p.get("received") else ""
        return (
            f"  {name:34s} {p['rate']:>9,.0f} msg/s  broker CPU {p['serverCpuUsPerMsg']:>6.1f} µs/msg"
            f"  (acked {p['acked']:,}, errors {p['errors']}{extra})"
        )

    print(f"machine: {r['machine']['cpus']} CPUs, load {r['machine']['loadavg'][0]:.2f} at start")
    print(
        f"throughput through one broker (official client, {t['unbatched']['loadgens']} load-generator "
        "processes x 4 topics, 1000 pending each):"
    )
    print(line("binary, batching off", t["unbatched"]))
    print(line("binary, batching on", t["batched"]))
    print(line("binary, batching off + consumers", t["unbatchedWithConsumers"]))
    print(line("binary, batching on + consumers", t["batchedWithConsumers"]))
    print(line("null broker, batching off", t["nullUnbatched"]))
    print(line("null broker, batching on", t["nullBatched"]))
    ws = t["websocket"]
    ws_rate = ws["acked"] / max(ws.get("seconds", 1), 1e-9)
    print(
        f"  {'WebSocket path (brokerlb perf)':34s} {ws_rate:>9,.0f} msg/s  broker CPU {ws['serverCpuUsPerMsg']:>6.1f} µs/msg"
    )
    print(f"  cores: {t['cores']}")
    for kind in ("unbatched", "batched"):
        ratios, cpu = t[kind + "Ratios"], t[kind + "CpuRatios"]
        print(
            f"  broker / null broker ({kind}), pair by pair: msg/s {ratios} -> median "
            f"{statistics.median(ratios):.2f}; broker CPU per message {cpu} -> median {statistics.median(cpu):.2f}"
            " (the median pair shown above)"
        )
    for kind in ("unbatched", "batched"):
        for engine, ratios in t.get(kind + "Durable", {}).items():
            rates = [round(row[engine]["rate"]) for row in t[kind + "Rounds"]]
            print(
                f"  storage {engine} / memory ({kind}), round by round: msg/s {rates} -> ratios {ratios}, "
                f"median {statistics.median(ratios):.2f}"
            )
    for engine, lat in t["latency"].items():
        print(
            f"  publish latency at {lat['rate']:,.0f} msg/s, storage {engine}: "
            f"p50 {lat.get('latencyP50Ms', float('nan')):.2f} ms, p99 {lat.get('latencyP99Ms', float('nan')):.2f} ms"
        )
    for backlog, engines in r["moves"].items():
        for engine, rounds in engines.items():
            m = merge_rounds(rounds)
            print(
                f"publish pause per planned move, storage {engine}, {backlog} MiB of backlog on the moved "
                f"topic (official client at {m['rate']:.0f} msg/s; {len(rounds)} rounds, load "
                f"{', '.join(f'{x:.1f}' for x in m['loadavg'])}):"
            )
            for kind in ("unload", "transfer", "floor"):
                k = m[kind]
                label = "no move" if kind == "floor" else kind
                extra = (
                    f"; longest gap to the next move p50 {k['windowMaxMs']} ms" if "windowMaxMs" in k else ""
                )
                print(
                    f"  {label:9s} p50 {k['p50Ms']} ms, p90 {k['p90Ms']} ms, p99 {k['p99Ms']} ms, max {k['maxMs']} ms over "
                    f"{k['moves']} {'windows' if kind == 'floor' else 'moves'}{extra}"
                )


def merge_rounds(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The moves of every round of one engine and backlog together."""
    out: dict[str, Any] = {"rate": rounds[0]["rate"], "loadavg": [r["loadavg"] for r in rounds]}
    for kind in ("unload", "transfer", "floor"):
        out[kind] = _percentiles([ms for r in rounds for ms in r[kind]["allMs"]])
        if kind != "floor":
            windows = [r[kind]["windowMaxMs"] for r in rounds if r[kind]["windowMaxMs"] is not None]
            out[kind]["windowMaxMs"] = round(statistics.median(windows), 1) if windows else None
    return out


async def main(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "loadavg": os.getloadavg()},
        "seconds": args.seconds,
        "size": args.size,
        "topics": TOPICS,
    }
    engines = storage_settings(args)
    try:
        results["throughput"] = await throughput(args, engines)
        # every engine at every backlog, alternated round by round
        moves: dict[int, dict[str, list[dict[str, Any]]]] = {}
        for _ in range(args.pause_rounds):
            for backlog in args.backlog_mb:
                for name, settings in engines.items():
                    row = moves.setdefault(backlog, {}).setdefault(name, [])
                    row.append(await move_pauses(args, settings(), backlog))
        results["moves"] = moves
    finally:
        for server in PG_SERVERS:
            server.close()
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--moves", type=int, default=10, help="unloads and transfers, each")
    parser.add_argument("--pause-rate", type=float, default=200.0)
    parser.add_argument(
        "--loadgens",
        type=int,
        default=1,
        help="load-generator processes at once (on the load generators' core when pinned)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="broker / null broker pairs, alternated")
    parser.add_argument(
        "--no-pin", dest="pin", action="store_false", help="leave the processes to the scheduler"
    )
    parser.add_argument(
        "--storage", default="sqlite", help="storage engines beside the memory path: sqlite,postgresql"
    )
    parser.add_argument("--latency-rate", type=float, default=5000.0, help="msg/s of the latency phase")
    parser.add_argument(
        "--backlog-mb",
        type=lambda v: [int(x) for x in v.split(",")],
        default=[1024],
        help="backlogs on the moved topic (MiB, comma-separated: each is measured; the goal on the last)",
    )
    parser.add_argument(
        "--pause-rounds",
        type=int,
        default=1,
        help="rounds of the pause phase (engines and backlogs alternated)",
    )
    parser.add_argument("--json", action="store_true")
    arguments = parser.parse_args()
    outcome = asyncio.run(main(arguments))
    report(outcome)
    if arguments.json:
        print(json.dumps(outcome, indent=2))
    t = outcome["throughput"]
    medians = {kind: statistics.median(t[kind + "Ratios"]) for kind in ("unbatched", "batched")}
    durable = {
        f"{engine} {kind}": statistics.median(ratios)
        for kind in ("unbatched", "batched")
        for engine, ratios in t.get(kind + "Durable", {}).items()
    }
    p99 = {e: lat.get("latencyP99Ms", float("inf")) for e, lat in t["latency"].items() if e != "memory"}
    biggest = arguments.backlog_mb[-1]
    pauses = {
        e: merge_rounds(rounds)["transfer"]["p50Ms"]
        for e, rounds in outcome["moves"][biggest].items()
        if e != "memory"
    }
    verdict(
        f"messages/s through the broker (memory path) >= {GOAL}x the null broker's; each storage engine >= "
        f"{GOAL}x the memory path, batching off and on (medians of alternated rounds); publish p99 <= 10 ms at "
        f"{arguments.latency_rate:,.0f} msg/s; transfer pause p50 <= 50 ms with {biggest} MiB of backlog",
        ", ".join(
            [f"memory/null {k} {x:.2f}x" for k, x in medians.items()]
            + [f"{k} {x:.2f}x" for k, x in durable.items()]
            + [f"p99 {e} {x:.1f} ms" for e, x in p99.items()]
            + [f"transfer p50 {e} {x} ms" for e, x in pauses.items()]
        ),
        all(x >= GOAL for x in medians.values())
        and all(x >= GOAL for x in durable.values())
        and all(x <= 10 for x in p99.values())
        and all(x is not None and x <= 50 for x in pauses.values()),
    )
