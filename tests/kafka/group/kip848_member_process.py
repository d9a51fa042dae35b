"""A KIP-848 member in its own process, for the SIGSTOP test: ``python -m tests.kafka.group.kip848_member_process``.

It records when it starts and stops using partitions as JSON lines in ``LOG`` (``time.monotonic``
is one clock for every process of the machine), blocks its event loop for ``--stall-on-revoke``
seconds the first time it is asked to revoke (a stuck revocation callback), and leaves cleanly
on SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import time
from collections.abc import Iterable

from brokerlb.clock import SYSTEM_CLOCK
from brokerlb.coordination.zookeeper import ZooKeeperMetadataStore
from brokerlb.kafka.assignors import TopicPartition
from brokerlb.kafka.group.reconciliation import ReconcilingConsumer


class Log:
    def __init__(self, path: str) -> None:
        self.file = open(path, "a", buffering=1)  # noqa: SIM115 -- one line per event, flushed

    def write(self, **event: object) -> None:
        self.file.write(json.dumps(event) + "\n")

    def started(self, member: str, partitions: Iterable[TopicPartition]) -> None:
        self.write(ev="start", tps=sorted(partitions), t=time.monotonic())

    def stopped(self, member: str, partitions: Iterable[TopicPartition], at: float | None = None) -> None:
        self.write(ev="stop", tps=sorted(partitions), t=time.monotonic() if at is None else at)


class StallOnce:
    def __init__(self, log: Log, seconds: float) -> None:
        self.log, self.seconds, self.done = log, seconds, False

    def before_releasing_partitions(self, owned) -> None:
        if not self.done and self.seconds > 0:
            self.done = True
            self.log.write(ev="revoking", t=time.monotonic())
            time.sleep(self.seconds)  # blocks the whole member, heartbeats included

    def before_starting_fetchers(self, consumer_id, assignment) -> None:
        pass


async def main(args: argparse.Namespace) -> None:
    log = Log(args.log)
    store = ZooKeeperMetadataStore(
        args.hosts, session_timeout=args.zk_session_timeout, operation_timeout=10.0
    )
    await store.start()
    consumer = ReconcilingConsumer(
        store,
        args.group,
        args.id,
        args.topics.split(","),
        rebalance_timeout_s=args.rebalance_timeout,
        session_timeout_s=args.session_timeout,
        heartbeat_interval_s=args.heartbeat_interval,
        listener=StallOnce(log, args.stall_on_revoke),
        tracker=log,
        clock=SYSTEM_CLOCK,
    )
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await consumer.start()
    log.write(ev="ready", t=time.monotonic())
    await stop.wait()
    await consumer.stop()
    await store.close()
    log.write(ev="left", t=time.monotonic(), rejoins=consumer.rejoins)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("hosts")
    ap.add_argument("group")
    ap.add_argument("id")
    ap.add_argument("log")
    ap.add_argument("--topics", required=True)
    ap.add_argument("--stall-on-revoke", type=float, default=0.0)
    ap.add_argument("--rebalance-timeout", type=float, default=1.5)
    ap.add_argument("--session-timeout", type=float, default=3.0)
    ap.add_argument("--heartbeat-interval", type=float, default=0.05)
    ap.add_argument("--zk-session-timeout", type=float, default=15.0)
    asyncio.run(main(ap.parse_args()))
