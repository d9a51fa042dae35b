"""What a bundle move costs a producer: publish pause of a plain unload vs a transfer (PIP-307).

    .venv/bin/python benchmarks/bench_moves.py [--moves 10] [--scenario-runs 1] [--json]

Both parts run ``brokerlb standalone --brokers 3`` in its own process; the clients run here.

1. **quiet** -- one topic, one producer sending 200 msg/s (and a consumer): its bundle is moved
   ``--moves`` times by a plain unload (clients back off 100 ms and look the topic up) and
   ``--moves`` times by a transfer to another broker (clients are told the new owner and
   reconnect at once), alternating, 1.5 s apart. Each move's pause is the producer's longest
   wait for an ack around it (:mod:`brokerlb.perf.pauses`).
2. **loaded** -- the end-to-end scenario (:mod:`brokerlb.testing.move_scenario`): 200 topics at
   Zipf-skewed 300 msg/s with consumers, the leader shedding every 3 s, 5 plain unloads and 5
   transfers of the hottest bundles; pauses per admin move, and around every close any producer
   saw (admin and shedding moves), by close reason.

Figures move with the load on the machine (2-core VM); both kinds are measured in the same run,
alternated (the plain unload is the baseline of the transfer).

Goal (the last line): a transfer pauses the producer at most half as long as a plain unload
(quiet medians), and no send of either part is lost (every one acknowledged or failed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def stats_ms(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"n": 0, "median": None, "p90": None, "max": None}
    ordered = sorted(v * 1e3 for v in values)
    return {
        "n": len(ordered),
        "median": round(statistics.median(ordered), 1),
        "p90": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 1),
        "max": round(ordered[-1], 1),
    }


sys.path.insert(0, str(Path(__file__).resolve().parent))
from verdict import verdict  # noqa: E402


async def quiet(moves: int) -> dict[str, Any]:
    from brokerlb.admin import AsyncAdminClient
    from brokerlb.client import Client
    from brokerlb.perf import PauseTracker
    from brokerlb.ring import NamespaceBundles
    from brokerlb.testing.standalone_process import StandaloneProcess

    settings = {
        "webSocketServiceEnabled": True,
        "loadBalancerSheddingEnabled": False,
        "clusterName": "moves",
        "metadataStoreSessionTimeoutMillis": 10000,
    }
    async with StandaloneProcess(3, settings) as cluster, AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace("public/quiet", num_bundles=4)
        ring = NamespaceBundles.from_json("public/quiet", await admin.get_bundles("public/quiet"))
        topic = "persistent://public/quiet/one"
        bundle = ring.find_bundle(topic)
        async with Client(cluster.urls[0]) as client:
            consumer = await client.subscribe(topic, "s", subscription_type="Shared")
            producer = await client.create_producer(topic)
            tracker = PauseTracker(keep_above=0.0)
            producer.listeners.append(lambda _e, _q, now: tracker.on_done(topic, now))
            stop = asyncio.Event()

            async def send() -> None:
                while not stop.is_set():
                    await producer.send_async(b"x" * 100)
                    tracker.on_send(topic, time.monotonic())
                    await asyncio.sleep(0.005)

            async def receive() -> None:
                while True:
                    await consumer.acknowledge(await consumer.receive())

            tasks = [asyncio.create_task(send()), asyncio.create_task(receive())]
            pauses: dict[str, list[float]] = {"unload": [], "transfer": []}
            await asyncio.sleep(1.0)
            for i in range(2 * moves):
                kind = "unload" if i % 2 == 0 else "transfer"
                owner = str((await admin.lookup_topic(topic))["httpUrl"]).split("://", 1)[1]
                destination = (
                    next(b for b in cluster.broker_ids if b != owner) if kind == "transfer" else None
                )
                start = time.monotonic()
                await admin.unload_bundle("public/quiet", bundle.range, destination_broker=destination)
                await asyncio.sleep(1.5)
                around = [p.seconds for p in tracker.kept if p.overlaps(start, start + 1.5)]
                pauses[kind].append(max(around, default=0.0))
            stop.set()
            tasks[1].cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await producer.flush(5)
            accounted = producer.sent == producer.acked + producer.failed
            return {
                "unload": stats_ms(pauses["unload"]),
                "transfer": stats_ms(pauses["transfer"]),
                "sent": producer.sent,
                "acked": producer.acked,
                "failed": producer.failed,
                "accounted": accounted,
                "reconnects": producer.stats.to_json(),
            }


async def loaded(runs: int) -> list[dict[str, Any]]:
    from brokerlb.testing.move_scenario import MoveScenario, run_move_scenario

    out = []
    for seed in range(runs):
        result = await run_move_scenario(
            MoveScenario(rate=300.0, seed=seed + 1, plain_unloads=5, transfers=5, move_gap=1.5),
            log=lambda _m: None,
        )
        produce = result.produce
        out.append(
            {
                "adminMoves": result.admin_pauses,
                "closes": result.close_pauses,
                "sent": produce.sent,
                "acked": produce.acked,
                "errored": produce.errored,
                "unaccounted": produce.unaccounted,
                "shedCloses": result.shed_closes,
                "reconnects": produce.reconnects,
                "directReconnects": produce.direct_reconnects,
                "longestPauseMs": round(produce.longest_pause.seconds * 1e3, 1),
            }
        )
    return out


def report(r: dict[str, Any]) -> None:
    q = r["quiet"]
    print(f"bundle moves -- {r['machine']['cpus']} CPUs, load {r['machine']['loadavg'][0]:.2f}")
    print("quiet (one topic at 200 msg/s, moves 1.5 s apart):")
    for kind in ("unload", "transfer"):
        s = q[kind]
        print(
            f"  {kind:8s}  pause median {s['median']} ms  p90 {s['p90']} ms  max {s['max']} ms  ({s['n']} moves)"
        )
    print(
        f"  sent {q['sent']} = acked {q['acked']} + failed {q['failed']}: {q['accounted']}; {q['reconnects']}"
    )
    for i, run in enumerate(r["loaded"]):
        print(
            f"loaded run {i + 1} (200 topics, 300 msg/s Zipf, shedding every 3 s; "
            f"{run['shedCloses']} closes from shedding):"
        )
        for kind, s in run["adminMoves"].items():
            print(
                f"  admin {kind:8s}  longest pause of the move's topics: median {s['medianMs']} ms, "
                f"max {s['maxMs']} ms ({s['moves']} moves)"
            )
        for reason, s in run["closes"].items():
            print(
                f"  every {reason:16s} close: pause median {s['medianMs']} ms, p90 {s['p90Ms']} ms, "
                f"max {s['maxMs']} ms ({s['measured']} of {s['closes']} with sends pending)"
            )
        print(
            f"  sent {run['sent']} = acked {run['acked']} + errored {run['errored']} "
            f"(unaccounted {run['unaccounted']}); reconnects {run['reconnects']} "
            f"({run['directReconnects']} direct); longest pause {run['longestPauseMs']} ms"
        )


async def main(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "machine": {"cpus": os.cpu_count(), "loadavg": os.getloadavg()},
        "quiet": await quiet(args.moves),
        "loaded": await loaded(args.scenario_runs),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--moves", type=int, default=10, help="moves of each kind in the quiet part")
    parser.add_argument("--scenario-runs", type=int, default=1, help="runs of the loaded scenario (0: none)")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    started = time.monotonic()
    results = asyncio.run(main(options))
    report(results)
    print(f"(benchmark took {time.monotonic() - started:.0f} s)")
    if options.json:
        print(json.dumps(results, indent=2))
    q = results["quiet"]
    ratio = (q["transfer"]["median"] or 0.0) / max(q["unload"]["median"] or 0.0, 1e-9)
    whole = q["accounted"] and all(run["unaccounted"] == 0 for run in results["loaded"])
    verdict(
        "transfer pause <= 0.5x plain unload pause (quiet medians), no send unaccounted",
        f"{q['transfer']['median']} ms against {q['unload']['median']} ms ({ratio:.2f}x); "
        f"{'every send accounted for' if whole else 'SENDS UNACCOUNTED'}",
        ratio <= 0.5 and whole,
    )
