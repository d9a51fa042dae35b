"""Benchmark: the ZooKeeper-era eager rebalance vs the coordinator style vs KIP-848 reconciliation, on a real ZooKeeper.

Five consumers (``--consumers``) join one by one, then leave in a shuffled order.
After each change the group must settle (every partition owned, each member
fetching exactly what it owns); the invariants are checked throughout. For every
change we report:

* ``settle_s`` -- from the change to the last fetch start/stop or rebalance end;
* ``moved`` -- partitions whose owner changed;
* ``paused_partition_s`` / ``max_pause_s`` -- summed / longest time a partition was not fetched;
* ``stop_the_world_s`` -- the longest stretch in which no partition was fetched;
* ``rebalances`` / ``attempts`` -- member rebalances and their attempts (retries after
  "owner node still exists").

Styles: ``zookeeper`` (Kafka 0.8's ZooKeeper consumer, range; every member rebalances
itself, eager), ``coordinator`` (cooperative-sticky, incremental), ``coordinator-eager``
(range, release all) and ``kip-848`` (a group coordinator service computes the target with
the server-side ``uniform`` assignor; members reconcile under member epochs; heartbeat
interval ``--heartbeat-interval``, 0.1 s by default -- Kafka's default is 5 s, and a member
waiting for a released partition learns of it at its next heartbeat, so settle times scale
with it).
The embedded store (``--store memory``) shows the protocol cost without network.

Goal (the last line; the baseline, the ZooKeeper-era eager protocol, runs in the same call):
KIP-848 stops the world on no change after the first join and pauses fewer partition-seconds
in total than the eager protocol.

Run: ``.venv/bin/python benchmarks/bench_group_protocols.py [--store zookeeper|memory] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import random
import statistics
import sys
import uuid
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdict import verdict  # noqa: E402

from brokerlb.coordination import MemoryMetadataStore, MemoryServer, MetadataStore  # noqa: E402
from brokerlb.kafka.group import (  # noqa: E402
    CoordinatedGroupConsumer,
    GroupCoordinatorService,
    GroupRun,
    ZkRebalancingConsumer,
    reconciling_style,
)

TOPICS = {"orders": 24, "payments": 12, "clicks": 12}


def styles(backoff: float, heartbeat: float) -> dict[str, tuple[Callable, Callable | None]]:
    def zookeeper(store, group, cid, tracker):
        return ZkRebalancingConsumer(
            store,
            group,
            cid,
            list(TOPICS),
            assignor="range",
            tracker=tracker,
            rebalance_backoff_s=backoff,
            rebalance_max_retries=50,
        )

    def coordinator(store, group, cid, tracker):
        return CoordinatedGroupConsumer(
            store, group, cid, list(TOPICS), assignor="cooperative-sticky", tracker=tracker
        )

    def eager(store, group, cid, tracker):
        return CoordinatedGroupConsumer(
            store, group, cid, list(TOPICS), assignor="range", incremental=False, tracker=tracker
        )

    def group_coordinator(store, group):
        return GroupCoordinatorService(
            store,
            group,
            assignor="uniform",
            session_timeout_s=max(10.0, 20 * heartbeat),
            heartbeat_interval_s=heartbeat,
        )

    kip848 = reconciling_style(
        list(TOPICS),
        rebalance_timeout_s=30.0,
        session_timeout_s=max(10.0, 20 * heartbeat),
        heartbeat_interval_s=heartbeat,
    )
    return {
        "zookeeper (range)": (zookeeper, None),
        "coordinator (cooperative-sticky)": (coordinator, None),
        "coordinator-eager (range)": (eager, None),
        "kip-848 (uniform)": (kip848, group_coordinator),
    }


async def one_round(new_store, make, consumers: int, seed: int, make_coordinator=None) -> list[dict]:
    run = GroupRun(
        f"bench-{uuid.uuid4().hex[:6]}",
        TOPICS,
        new_store,
        make,
        settle_timeout_s=60.0,
        make_coordinator=make_coordinator,
    )
    await run.setup()
    try:
        ids = [f"consumer-{i}" for i in range(1, consumers + 1)]
        for cid in ids:
            await run.join(cid)
        order = ids[:]
        random.Random(seed).shuffle(order)
        for cid in order[:-1]:  # the last leave empties the group: nothing to measure
            await run.leave(cid)
        assert not run.tracker.violations
        return [r.row() for r in run.reports]
    finally:
        await run.close()


async def main_async(args: argparse.Namespace) -> None:
    stores: list[MetadataStore] = []
    zk = None
    if args.store == "zookeeper":
        from brokerlb.coordination.zookeeper import ZooKeeperMetadataStore
        from brokerlb.testing.zookeeper import ZooKeeperServer

        zk = ZooKeeperServer().start()

        async def new_store() -> MetadataStore:
            store = ZooKeeperMetadataStore(zk.hosts, session_timeout=4.0, operation_timeout=10.0)
            await store.start()
            stores.append(store)
            return store
    else:
        server = MemoryServer(f"bench-{uuid.uuid4().hex[:6]}")

        async def new_store() -> MetadataStore:
            store = MemoryMetadataStore(server, session_timeout=4.0, operation_timeout=10.0)
            await store.start()
            stores.append(store)
            return store

    try:
        print(
            f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"load average {os.getloadavg()[0]:.1f}; store: {args.store}; topics {TOPICS}; "
            f"{args.consumers} consumers; {args.rounds} rounds (median per change)\n"
        )
        header = (
            f"{'style':<34} {'change':<20} {'settle_s':>9} {'moved':>6} {'paused_p_s':>11} "
            f"{'max_pause':>10} {'stw_s':>8} {'rebal':>6} {'attempts':>8}"
        )
        summary: dict[str, dict[str, float]] = {}
        for name, (make, make_coordinator) in styles(args.backoff, args.heartbeat_interval).items():
            rounds = [
                await one_round(new_store, make, args.consumers, seed, make_coordinator)
                for seed in range(args.rounds)
            ]
            print(header)
            totals = {"settle_s": 0.0, "moved": 0, "paused_partition_s": 0.0, "stop_the_world_s": 0.0}
            later_stw = 0.0
            for i, row in enumerate(rounds[0]):
                med = {
                    k: statistics.median(r[i][k] for r in rounds)
                    for k in (
                        "settle_s",
                        "moved",
                        "paused_partition_s",
                        "max_pause_s",
                        "stop_the_world_s",
                        "rebalances",
                        "attempts",
                    )
                }
                change = (
                    row["change"] if row["change"].startswith("join") else f"leave #{i - args.consumers + 1}"
                )
                print(
                    f"{name:<34} {change:<20} {med['settle_s']:>9.4f} {med['moved']:>6.0f} "
                    f"{med['paused_partition_s']:>11.4f} {med['max_pause_s']:>10.4f} "
                    f"{med['stop_the_world_s']:>8.4f} {med['rebalances']:>6.0f} {med['attempts']:>8.0f}"
                )
                for k in totals:
                    totals[k] += med[k]
                if i > 0:
                    later_stw = max(later_stw, med["stop_the_world_s"])
            summary[name] = {**totals, "later_stw_s": later_stw}
            print(
                f"{name:<34} {'TOTAL':<20} {totals['settle_s']:>9.4f} {totals['moved']:>6.0f} "
                f"{totals['paused_partition_s']:>11.4f} {'':>10} {totals['stop_the_world_s']:>8.4f}\n"
            )
        kip = next(v for k, v in summary.items() if k.startswith("kip-848"))
        eager = next(v for k, v in summary.items() if k.startswith("zookeeper"))
        verdict(
            "KIP-848 stops the world on no change after the first join, and pauses fewer partition-seconds "
            "than the ZooKeeper-era eager protocol",
            f"longest stop after the first join {kip['later_stw_s']:.4f} s; paused "
            f"{kip['paused_partition_s']:.2f} against {eager['paused_partition_s']:.2f} partition-s",
            kip["later_stw_s"] == 0.0 and kip["paused_partition_s"] < eager["paused_partition_s"],
        )
    finally:
        for store in stores:
            await store.close()
        if zk is not None:
            zk.stop()


def main() -> None:
    logging.basicConfig(level=logging.ERROR)  # kazoo warns "connection dropped" when sessions close
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", choices=("zookeeper", "memory"), default="zookeeper")
    ap.add_argument("--consumers", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--backoff", type=float, default=0.2, help="zookeeper style: rebalance.backoff.ms, in seconds"
    )
    ap.add_argument(
        "--heartbeat-interval", type=float, default=0.1, help="kip-848 heartbeat interval, in seconds"
    )
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
