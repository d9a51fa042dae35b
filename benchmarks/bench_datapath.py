"""Data-path throughput and publish latency through one broker, on loopback.

    .venv/bin/python benchmarks/bench_datapath.py [--seconds 10] [--size 100] [--json]

What runs where (all on 127.0.0.1):

* the **broker**: ``brokerlb standalone --brokers 1`` in its own process (WebSocket data path on);
* the **load generator**: ``brokerlb perf produce`` / ``consume`` in other processes (the perf
  tool of this repository, so the client library is part of what is measured);
* the **baseline**: a "null broker" in its own process -- the same uvicorn WebSocket stack
  answering each send with an ack and doing nothing else (no topic, no dispatch, no stats),
  and answering lookups with its own URL so the same perf tool drives it. The ratio broker /
  null broker is the cost of the data path's own work.

Phases, each ``--seconds`` long:

1. **throughput** -- 4 topics, producers as fast as they can (up to 1000 pending each), no
   consumer: messages/s acknowledged; the same against the null broker;
2. **with consumers** -- a fixed rate the consumer process can follow (``--consumed-rate``,
   default 2500 msg/s) with a consumer on each topic: every message is dispatched and
   acknowledged by a consumer (4 WebSocket frames per message through the broker); what the
   consumers receive (non-persistent: a consumer without permits loses messages);
3. **latency** -- a fixed rate (``--rate``, default 1000 msg/s over 4 topics) with consumers:
   publish latency p50 / p99 / p99.9 (send → ack) and end-to-end latency.

On a 2-core box broker and load generator each get about one core; the figures move with
other load on the machine, so compare each against the baseline of the same run: the throughput
phase runs ``--rounds`` pairs (broker, null broker, alternated, after a warm-up of each) and
the ratio is taken pair by pair.

Goal (the last line): the broker's throughput >= 0.8x the null broker's (median of the pairs):
the data path's own work costs at most a fifth of what the stack under it allows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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


# --------------------------------------------------------------------------- the null broker (own process)

NULL_BROKER = r"""
import asyncio, json, socket, sys
import uvicorn

async def app(scope, receive, send):
    if scope["type"] == "http":
        port = scope["server"][1]
        body = json.dumps({"brokerUrl": "pulsar://127.0.0.1:6650", "httpUrl": f"http://127.0.0.1:{port}"}).encode()
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})
        return
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    n = 0
    while True:
        message = await receive()
        if message["type"] != "websocket.receive":
            return
        frame = json.loads(message.get("text") or message.get("bytes"))
        n += 1
        await send({"type": "websocket.send",
                    "text": json.dumps({"result": "ok", "messageId": f"m{n}", "context": frame.get("context")})})

sock = socket.socket(); sock.bind(("127.0.0.1", 0)); sock.listen(1024)
print(f"ready at http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
config = uvicorn.Config(app, lifespan="off", access_log=False, log_level="warning", http="httptools")
import uvloop  # as the broker's process runs
with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
    runner.run(uvicorn.Server(config).serve(sockets=[sock]))
"""


async def start_null_broker() -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", NULL_BROKER],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert proc.stdout is not None
    line = await asyncio.to_thread(proc.stdout.readline)
    return proc, line.decode().split("ready at ", 1)[1].strip()


sys.path.insert(0, str(Path(__file__).resolve().parent))
from verdict import verdict  # noqa: E402

GOAL = 0.8


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# --------------------------------------------------------------------------- load generator (own processes)


def perf_args(kind: str, url: str, topic: str, seconds: float, **options: Any) -> list[str]:
    args = [
        sys.executable,
        "-m",
        "brokerlb.cli.main",
        "perf",
        kind,
        topic,
        "--service-url",
        url,
        "--num-topics",
        str(TOPICS),
        "--test-duration",
        str(seconds),
        "--json",
    ]
    for key, value in options.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return args


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by process ``pid``."""
    import psutil

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


async def measured(
    pid: int, producer: list[str], consumer: list[str] | None = None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """:func:`run_perf`, adding the server's CPU time per acknowledged message (``serverCpuUsPerMsg``)."""
    before = cpu_seconds(pid)
    produce, consume = await run_perf(producer, consumer)
    used = cpu_seconds(pid) - before
    produce["serverCpuUsPerMsg"] = round(used / max(1, produce["acked"]) * 1e6, 1)
    produce["serverCpuSeconds"] = round(used, 2)
    return produce, consume


async def run_perf(
    producer: list[str], consumer: list[str] | None = None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Run a producer (and a consumer started first) as processes; their JSON summaries."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cons = None
    if consumer is not None:
        cons = await asyncio.create_subprocess_exec(
            *consumer, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
        )
        await asyncio.sleep(2.0)  # subscribed before the producers start
    prod = await asyncio.create_subprocess_exec(
        *producer, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
    )
    out, err = await prod.communicate()
    if prod.returncode != 0:
        raise RuntimeError(f"perf produce failed ({prod.returncode}): {err.decode()[-2000:]}")
    consumed = None
    if cons is not None:
        cout, cerr = await cons.communicate()
        if cons.returncode != 0:
            raise RuntimeError(f"perf consume failed ({cons.returncode}): {cerr.decode()[-2000:]}")
        consumed = json.loads(cout)
    return json.loads(out), consumed


# --------------------------------------------------------------------------- phases


async def main(args: argparse.Namespace) -> dict[str, Any]:
    from brokerlb.admin import AsyncAdminClient
    from brokerlb.testing.standalone_process import StandaloneProcess

    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "loadavg": os.getloadavg()},
        "seconds": args.seconds,
        "size": args.size,
        "topics": TOPICS,
    }
    secs = args.seconds
    null, null_url = await start_null_broker()
    try:
        async with StandaloneProcess(1, BROKER_SETTINGS) as broker:
            url = broker.urls[0]
            pid = broker.process.pid if broker.process is not None else 0
            async with AsyncAdminClient(url) as admin:
                await admin.create_namespace("public/bench", num_bundles=4)
            ns = "persistent://public/bench"
            fast = {"rate": 0, "size": args.size, "max_outstanding": 1000}
            # warm-up of both, then throughput pairs, alternated: broker, null broker, broker, ...
            await run_perf(perf_args("produce", url, f"{ns}/warmup", min(3.0, secs), **fast))
            await run_perf(perf_args("produce", null_url, f"{ns}/null-warmup", min(3.0, secs), **fast))
            pairs = []
            for i in range(args.rounds):
                subject, _ = await measured(pid, perf_args("produce", url, f"{ns}/tput-{i}", secs, **fast))
                baseline, _ = await measured(
                    null.pid, perf_args("produce", null_url, f"{ns}/null-{i}", secs, **fast)
                )
                pairs.append((subject, baseline))
            ratios = sorted((s["rate"] / b["rate"], k) for k, (s, b) in enumerate(pairs) if b["rate"])
            middle = ratios[len(ratios) // 2][1] if ratios else 0
            results["throughputPairs"] = [
                {"broker": s["rate"], "nullBroker": b["rate"], "ratio": s["rate"] / max(b["rate"], 1e-9)}
                for s, b in pairs
            ]
            results["throughput"], results["nullBrokerThroughput"] = pairs[middle]
            results["ratio"] = ratios[len(ratios) // 2][0] if ratios else 0.0
            produce, consume = await measured(
                pid,
                perf_args("produce", url, f"{ns}/tput-c", secs, rate=args.consumed_rate, size=args.size),
                perf_args("consume", url, f"{ns}/tput-c", secs + 6, subscription_type="Shared"),
            )
            results["withConsumers"] = {"rate": args.consumed_rate, "produce": produce, "consume": consume}
            produce, consume = await run_perf(
                perf_args("produce", url, f"{ns}/lat", secs, rate=args.rate, size=args.size),
                perf_args("consume", url, f"{ns}/lat", secs + 6, subscription_type="Shared"),
            )
            results["latency"] = {"rate": args.rate, "produce": produce, "consume": consume}
        produce, _ = await run_perf(
            perf_args(
                "produce",
                null_url,
                "persistent://public/bench/null-lat",
                secs,
                rate=args.rate,
                size=args.size,
            )
        )
        results["nullBrokerLatency"] = produce
    finally:
        stop(null)
    return results


def report(r: dict[str, Any]) -> None:
    def rate(p: dict[str, Any]) -> str:
        return f"{p['rate']:>9,.0f} msg/s"

    def lat(p: dict[str, Any], key: str = "latencyMs") -> str:
        m = p[key]
        return f"p50 {m['p50']:6.2f} ms  p99 {m['p99']:6.2f} ms  p99.9 {m['p999']:6.2f} ms"

    tput, null = r["throughput"], r["nullBrokerThroughput"]
    withc = r["withConsumers"]
    latency = r["latency"]
    print(
        f"data path through one broker -- {r['topics']} topics, {r['size']}-byte messages, {r['seconds']:g} s "
        f"per phase, {r['machine']['cpus']} CPUs, load {r['machine']['loadavg'][0]:.2f}"
    )
    print(f"  throughput (no consumer)          {rate(tput)}   publish {lat(tput)}")
    print(f"  null broker (same stack, no work) {rate(null)}   publish {lat(null)}")
    pairs = ", ".join(f"{p['ratio']:.2f}" for p in r["throughputPairs"])
    print(
        f"    -> broker / null broker, pair by pair: {pairs}; median {r['ratio']:.2f} (the median pair shown)"
    )
    print(
        f"  server CPU per message: broker {tput['serverCpuUsPerMsg']} us, null broker {null['serverCpuUsPerMsg']} us"
        f" -> one core of broker would carry ~{1e6 / tput['serverCpuUsPerMsg']:,.0f} msg/s"
    )
    wc = withc["consume"]
    print(
        f"  with consumers at {withc['rate']:g} msg/s       {rate(withc['produce'])}   consumers received "
        f"{wc['received']:,} of {withc['produce']['acked']:,} ({wc['received'] / max(1, withc['produce']['acked']):.1%}); "
        f"broker CPU {withc['produce']['serverCpuUsPerMsg']} us per message (publish + dispatch + 2 acks)"
    )
    print(f"                                    end to end {lat(wc, 'endToEndLatencyMs')}")
    print(f"  latency at {latency['rate']:g} msg/s              publish {lat(latency['produce'])}")
    print(f"                                    end to end {lat(latency['consume'], 'endToEndLatencyMs')}")
    print(f"  null broker at {latency['rate']:g} msg/s          publish {lat(r['nullBrokerLatency'])}")
    for name in ("throughput", "nullBrokerThroughput"):
        p = r[name]
        assert p["unaccounted"] == 0 and p["sent"] == p["acked"] + p["errored"], p


def conclude(r: dict[str, Any]) -> None:
    verdict(
        f"the broker's data path >= {GOAL}x the null broker's messages/s (median of alternated pairs)",
        f"{r['ratio']:.2f}x",
        r["ratio"] >= GOAL,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--consumed-rate", type=float, default=2500.0)
    parser.add_argument("--rounds", type=int, default=3, help="alternated throughput pairs")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    options = parser.parse_args()
    started = time.monotonic()
    results = asyncio.run(main(options))
    report(results)
    print(f"(benchmark took {time.monotonic() - started:.0f} s)")
    if options.json:
        print(json.dumps(results, indent=2))
    conclude(results)
