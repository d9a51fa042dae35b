"""Live: brokerlb's balancer against ThresholdShedder on three ``brokerlb broker`` processes and a real
ZooKeeper, with traffic through the data path from the official client.

The same scale-out for each strategy, in a fresh ZooKeeper chroot: one broker serves a namespace of
8 bundles and 16 topics at skewed rates (the official client producing, one subscription per topic
consuming); two empty brokers join; the leader balances. Every 0.5 s the benchmark reads, as an
operator would (:mod:`brokerlb.testing.observe`): the leader's last shedding cycle (``GET
/admin/v2/brokers/balancer``), each topic's owner (lookups) and each broker's modelled CPU (its load
report). Per strategy, over ``--cycles`` shedding cycles after the join:

* **cycles to balance** -- shedding cycles until every broker's CPU is within 10 points of the
  mean (the simulator's fair share), and whether it still is at the end -- over the samples whose
  CPUs account for the whole traffic (:func:`summarise`);
* **moves** -- the leader's carried-out moves (``brokerlb_moves_total``), and **moved msg/s** --
  the traffic (in + out) of the topics whose owner changed, summed over the changes, from the
  owners before the two brokers join (until 2026-11-28: after both had joined, which left out
  the moves a leader made to the first broker before the second joined);
* the busiest broker and the spread (max - min CPU) at the end; messages lost (must be 0);
* the **decision log**: each shedding cycle the samples caught (decisions by ``label/reason``, moves,
  the status's reason), kept in ``--json`` and counted in the output -- why a strategy stopped.

Each side runs as deployed: ``brokerlb`` with brokerlb's defaults (shedding and placement
``brokerlb``), ThresholdShedder with Pulsar's defaults and behaviour (placement
LeastLongTermMessageRate; the ``brokerlb*`` deviations of ``bench_balancer.PULSAR_BEHAVIOUR``
off: an unload plus a one-shot affinity, not a transfer). Both run on the same scaled clock and
scale: shedding every 1.2 s (``loadBalancerSheddingIntervalMinutes=0.02``), grace period 3 s
(brokerlb's swap-back block 12 s, 4x the grace period as with the defaults), CPU modelled from
the message rates (1 core of 600 msg/s), and
``loadBalancerBundleUnloadMinThroughputThreshold=0`` (Pulsar's 10 MB/s minimum is far above this
traffic's bytes), and AvgShedder's ``minUnloadMessage=10``, ``minUnloadMessageThroughput=0``
(Pulsar's 1,000 msg/s and 1 MB/s are above the whole cluster's traffic). brokerlb's merges of cold neighbours are on, as deployed, with its ring-change
cool-downs scaled as the grace period.

Pulsar runs as ThresholdShedder (placement LeastLongTermMessageRate, what Pulsar 2.10-4.x ships) and
as AvgShedder shedding *and* placing (PIP-364; the modular manager's documented default since
apache/pulsar#26609). The verdict: brokerlb balanced (and still balanced at the end) in no more
cycles than each Pulsar configuration that balanced, moving at most 0.5x ThresholdShedder's msg/s,
nothing lost.

Run: ``.venv/bin/python benchmarks/bench_balancer_live.py [--cycles 40] [--json out.json]``
(about 2-3 minutes per strategy on 2 cores). Needs ZooKeeper (``scripts/setup.sh``) and
``pulsar-client``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_balancer import PULSAR_BEHAVIOUR  # noqa: E402
from verdict import verdict  # noqa: E402

NAMESPACE = "public/live-balance"
BUNDLES = 8
#: produced msg/s per topic (zipf-like); each topic has one subscription, so it carries twice that
RATES = [60, 40, 30, 24, 20, 16, 12, 10, 8, 8, 6, 6, 4, 4, 2, 2]
FAIR_POINTS = 10.0
GUARD = 120.0

COMMON = {
    "metadataStoreSessionTimeoutMillis": 10000,
    "statsUpdateFrequencyInSecs": 2,
    "loadBalancerReportUpdateMinIntervalMillis": 500,
    "loadBalancerHostUsageCheckIntervalMinutes": 0.01,
    "loadBalancerSheddingIntervalMinutes": 0.02,
    "loadBalancerSheddingGracePeriodMinutes": 0.05,
    # brokerlb's block on moving a bundle back where it came from, scaled as the grace period:
    # 4x it (the defaults: 120 and 30 minutes)
    "brokerlbBalancerSwapBackBlockMinutes": 0.2,
    "loadBalancerBundleUnloadMinThroughputThreshold": 0,
    # AvgShedder's least message rate / throughput worth moving, scaled likewise (Pulsar's 1,000
    # msg/s and 1 MB/s are twice this whole cluster's traffic: it would never shed)
    "minUnloadMessage": 10,
    "minUnloadMessageThroughput": 0,
    "brokerlbModelCores": 1,
    "brokerlbModelMsgRatePerCore": 600,
    # brokerlb's ring-change cool-downs scaled as the grace period (the defaults: 30 and 10
    # minutes); merges of cold neighbours stay on, as deployed (topics live on the storage tier:
    # a merge carries no data)
    "brokerlbBalancerNoMergeAfterSplitMinutes": 0.05,
    "brokerlbBalancerNoSplitAfterMergeMinutes": 0.02,
}
STRATEGIES: dict[str, dict[str, Any]] = {
    "brokerlb": {
        "loadBalancerLoadSheddingStrategy": "brokerlb",
        "loadBalancerLoadPlacementStrategy": "brokerlb",
    },
    "ThresholdShedder": {"loadBalancerLoadSheddingStrategy": "ThresholdShedder", **PULSAR_BEHAVIOUR},
    # Pulsar's documented default pairing (PIP-364, apache/pulsar#26609): AvgShedder sheds and places
    "AvgShedder": {
        "loadBalancerLoadSheddingStrategy": "AvgShedder",
        "loadBalancerLoadPlacementStrategy": "AvgShedder",
        **PULSAR_BEHAVIOUR,
    },
}


def balanced(cpu: dict[str, float]) -> bool:
    mean = sum(cpu.values()) / len(cpu)
    return all(abs(v - mean) <= FAIR_POINTS for v in cpu.values())


async def run_strategy(zk: Any, name: str, cycles: int) -> dict[str, Any]:
    from brokerlb.admin import AsyncAdminClient
    from brokerlb.perf.binary import native_logger
    from brokerlb.testing.clusters import zookeeper_process_cluster
    from brokerlb.testing.observe import counted, lb_counters, modelled_cpu, topic_owners
    from brokerlb.testing.official_client import OfficialTraffic
    from brokerlb.testing.waiting import eventually

    cluster = await zookeeper_process_cluster(zk, 1, {**COMMON, **STRATEGIES[name]}, prefix="live-balance")
    topics = [f"persistent://{NAMESPACE}/t{i}" for i in range(len(RATES))]
    rate_of = {t: 2.0 * r for t, r in zip(topics, RATES, strict=True)}  # in + out
    traffic = OfficialTraffic(
        "pulsar://" + cluster.binary_urls[0].removeprefix("pulsar://"),
        dict(zip(topics, map(float, RATES), strict=True)),
        timeout=GUARD,
        logger=native_logger(),
    )
    try:
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(NAMESPACE, num_bundles=BUNDLES)
            await asyncio.to_thread(traffic.start)
            await eventually(lambda: all(len(p.acked) >= 20 for p in traffic.producers.values()), GUARD)

            async def loaded() -> bool:  # the lone broker's report shows its traffic
                return max((await modelled_cpu(cluster.urls, cluster.broker_ids)).values()) > 50

            await eventually(loaded, GUARD)
            # every topic's owner before the joins: a leader may move bundles to the first broker
            # that joins before the second has (counted from after both joins, those moves were
            # left out -- of some strategies more than of others)
            owners = await eventually(
                lambda: topic_owners(admin, cluster.urls, cluster.broker_ids, topics), GUARD
            )
            for _ in range(2):
                await cluster.add_broker()
            cycles_seen: set[int] = set()
            moved_rate = 0.0
            samples: list[dict[str, Any]] = []
            decision_log: list[dict[str, Any]] = []
            started = time.monotonic()
            while len(cycles_seen) < cycles and time.monotonic() - started < cycles * 10:
                status = await admin.get_balancer_status()
                if status.get("lastCycleAtMs"):
                    at = int(status["lastCycleAtMs"])
                    if at not in cycles_seen and status.get("lastCycle"):
                        # the leader's last cycle as the status shows it: decisions by
                        # label/reason, its moves, and the status's reason (the last skip's detail)
                        last = status["lastCycle"]
                        decision_log.append(
                            {
                                "atMs": at,
                                "sample": len(samples),
                                "decisions": last.get("decisions", {}),
                                "moves": last.get("moves", []),
                                "state": status.get("state"),
                                "reason": status.get("reason"),
                            }
                        )
                    cycles_seen.add(at)
                now = await topic_owners(admin, cluster.urls, cluster.broker_ids, topics)
                if now is not None:
                    moved_rate += sum(rate_of[t] for t in topics if now[t] != owners[t])
                    owners = now
                cpu = await modelled_cpu(cluster.urls, cluster.broker_ids)
                samples.append({"cycle": len(cycles_seen), "cpu": cpu})
                await asyncio.sleep(0.5)  # the sampling period of a measurement, not a synchronisation
            counters = await lb_counters(cluster.urls)
        await asyncio.to_thread(traffic.stop_producing)
        try:
            await eventually(traffic.all_received, GUARD)
        except AssertionError:
            pass  # counted as lost below
        reports = traffic.reports()
    finally:
        await asyncio.to_thread(traffic.close)
        await cluster.stop()
    return {
        "strategy": name,
        "cycles": len(cycles_seen),
        "moves": counted(counters, "brokerlb_moves_total", kind="transfer")
        + counted(counters, "brokerlb_moves_total", kind="unload"),
        "moved_msg_rate": moved_rate,
        "offered_msg_rate": sum(rate_of.values()),
        "lost": sum(len(r.lost) for r in reports),
        "acked": sum(r.acked for r in reports),
        "samples": samples,
        "decision_log": decision_log,
    }


def summarise(row: dict[str, Any]) -> dict[str, Any]:
    """Balance figures from the samples that account for the whole traffic: right after a move the
    moved topics' rates restart from zero and the reports lag, so a sample whose CPUs sum to less
    than 90 % of the offered load's is left out (every broker would look balanced in it)."""
    offered = 100.0 * row["offered_msg_rate"] / COMMON["brokerlbModelMsgRatePerCore"]
    steady = [s for s in row["samples"] if sum(s["cpu"].values()) >= 0.9 * offered]
    first = next((s["cycle"] for s in steady if balanced(s["cpu"])), None)
    final = steady[-1]["cpu"] if steady else {}
    return {
        **row,
        "steady_samples": len(steady),
        "cycles_to_balance": first,
        "balanced_at_end": bool(final) and balanced(final),
        "final_cpu": final,
        "final_max": max(final.values(), default=float("nan")),
        "final_spread": max(final.values(), default=float("nan")) - min(final.values(), default=float("nan")),
    }


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    from brokerlb.testing.zookeeper import ZooKeeperServer

    zk = ZooKeeperServer().start()
    try:
        return [await run_strategy(zk, name, args.cycles) for name in args.strategies.split(",")]
    finally:
        zk.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cycles", type=int, default=40, help="shedding cycles observed after the join")
    parser.add_argument("--strategies", default="brokerlb,ThresholdShedder,AvgShedder")
    parser.add_argument("--json", help="also write the results (with every sample) to this file")
    parser.add_argument("--from-json", help="summarise the samples of an earlier run instead of running")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    if args.from_json:
        rows = json.loads(Path(args.from_json).read_text())
    else:
        rows = asyncio.run(main_async(args))
    rows = [summarise(r) for r in rows]
    print(
        "| strategy | cycles to balance (within 10 points) | balanced at the end | moves | moved msg/s "
        "(of offered) | busiest CPU % at the end | spread (points) | lost / acknowledged |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['strategy']} | {'-' if r['cycles_to_balance'] is None else r['cycles_to_balance']} "
            f"(of {r['cycles']}) | {'yes' if r['balanced_at_end'] else 'no'} | {r['moves']:.0f} | "
            f"{r['moved_msg_rate']:.0f} ({r['offered_msg_rate']:.0f}) | {r['final_max']:.1f} | "
            f"{r['final_spread']:.1f} | {r['lost']} / {r['acked']} |"
        )
    for r in rows:
        print(f"\n{r['strategy']}: {decisions_seen(r)}")
    print(
        f"\n{platform.system()} {platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} CPUs; "
        f"load average at start {load:.1f}, at end {os.getloadavg()[0]:.1f}"
    )
    if args.json and not args.from_json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    met, measured = judge(rows)
    verdict(
        "brokerlb balanced in no more cycles than each Pulsar configuration, moved msg/s <= 0.5x "
        "ThresholdShedder's, nothing lost",
        measured,
        met,
    )
    return 1 if any(r["lost"] for r in rows) else 0


def decisions_seen(row: dict[str, Any]) -> str:
    """The leader's decisions over the cycles the samples caught (``label/reason`` counted), and
    the last cycle's reason -- why a strategy stopped moving, read from the live run."""
    log = row.get("decision_log")
    if not log:
        return "no decision log (a run before the log was kept)"
    counts: dict[str, int] = {}
    for entry in log:
        for key, n in entry["decisions"].items():
            counts[key] = counts.get(key, 0) + int(n)
    moving = [e["sample"] for e in log if e["moves"]]
    text = ", ".join(f"{key} x{n}" for key, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    last = log[-1]
    return (
        f"{len(log)} of {row['cycles']} cycles logged; decisions {text}; cycles with moves "
        f"{len(moving)} (last at sample {moving[-1] if moving else '-'} of {len(row['samples'])}); "
        f"last cycle: {last['state']}: {last['reason']}"
    )


def judge(rows: list[dict[str, Any]]) -> tuple[bool, str]:
    """The verdict over summarised rows (module docstring); a side not run is not judged."""
    by = {r["strategy"]: r for r in rows}
    parts = [
        f"{r['strategy']} {'-' if r['cycles_to_balance'] is None else r['cycles_to_balance']} cycles"
        f"{'' if r['balanced_at_end'] else ' (not balanced at the end)'}, {r['moved_msg_rate']:.0f} msg/s moved"
        for r in rows
    ]
    met = not any(r["lost"] for r in rows)
    ours = by.get("brokerlb")
    if ours is not None:
        met = met and ours["balanced_at_end"] and ours["cycles_to_balance"] is not None
        for r in rows:
            if r is not ours and r["cycles_to_balance"] is not None and r["balanced_at_end"]:
                met = met and (ours["cycles_to_balance"] or 0) <= r["cycles_to_balance"]
        threshold = by.get("ThresholdShedder")
        if threshold is not None and threshold["moved_msg_rate"] > 0:
            ratio = ours["moved_msg_rate"] / threshold["moved_msg_rate"]
            parts.append(f"moved {ratio:.2f}x ThresholdShedder's")
            met = met and ratio <= 0.5
    return met, "; ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
