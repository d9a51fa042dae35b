"""The storage tier on its own: each engine's bare group-commit limit, and re-opening a big topic.

Goal (the last line): re-opening a topic of 1M entries takes <= 1 s on every durable engine.

    .venv/bin/python benchmarks/bench_storage.py [--seconds 5] [--entries 1000000] [--bundle-topics 1000]
        [--postgresql] [--json]

Phases (all in this process, one engine at a time, alternated ``--rounds`` times):

1. **bare group commit** -- the engine's own limit: one writer appends groups of ``--group``
   100-byte entries to 8 topics (one group per topic per commit, as the broker's committer does)
   as fast as the engine commits them, for ``--seconds``; entries/s and commit p50/p99. This is
   the ceiling the broker's publish path sits under (docs/storage.md); the broker-level figures
   are in ``bench_binary_protocol.py``;
2. **re-open a topic of ``--entries`` entries** -- the topic's managed ledger is written through
   the committer (ledgers rolling over every 50,000 entries), closed, and opened again with a
   new epoch (what the next owner of its bundle does): the time to fence and open it (its ledger
   list and cursors, never its entries);
3. **a bundle's move** -- ``--bundle-topics`` topics with two durable cursors each are closed
   together on one broker (what a move's source does: the cursors persisted and the ledgers
   closed, one transaction for all) and fenced by the next (the fence opens them all: one
   transaction), then claimed by their topics (no storage call); beside it, in the same round,
   the same topics opened one transaction each (how a topic the fence did not open is opened).

Engines: ``memory:`` (the baseline: no I/O), ``sqlite:`` (a temporary directory) and, with
``--postgresql``, a PostgreSQL server started for the run (Debian's package, as the tests do).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verdict import verdict  # noqa: E402

from brokerlb.mledger import ManagedLedgerConfig  # noqa: E402
from brokerlb.storage import AppendGroup, open_storage  # noqa: E402
from brokerlb.storage.managed_ledger import ManagedLedgerFactory  # noqa: E402

NS = "bench/storage"


async def bare_commit(url: str, seconds: float, group: int, topics: int = 8) -> dict[str, Any]:
    engine = open_storage(url)
    await engine.start()
    try:
        epoch = (await engine.fence(NS, 0, 1 << 32, "bench", 0)).epoch
        ledgers = {}
        for i in range(topics):
            name = f"{NS}/persistent/bare-{uuid.uuid4().hex[:6]}-{i}"
            record = await engine.open_topic(name, NS, i, epoch, 0)
            assert record is not None
            ledgers[name] = [record.ledgers[-1].ledger_id, 0]
        payload = b"x" * 100
        entries = [(0, 1, payload)] * group
        latencies: list[float] = []
        done = 0
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            groups = [AppendGroup(n, lid, first, entries, 100 * group) for n, (lid, first) in ledgers.items()]
            started = time.perf_counter()
            results = await engine.append(groups)
            latencies.append(time.perf_counter() - started)
            assert all(results)
            for state in ledgers.values():
                state[1] += group
            done += group * topics
        elapsed = seconds + (time.perf_counter() - deadline)
        latencies.sort()
        return {
            "entriesPerSecond": round(done / elapsed),
            "commits": len(latencies),
            "entriesPerCommit": group * topics,
            "commitP50Ms": round(statistics.median(latencies) * 1e3, 2),
            "commitP99Ms": round(latencies[int(0.99 * (len(latencies) - 1))] * 1e3, 2),
        }
    finally:
        await engine.close()


async def reopen(url: str, count: int) -> dict[str, Any]:
    from brokerlb.messaging import Topic

    config = ManagedLedgerConfig(min_rollover_ms=0)
    writer = await ManagedLedgerFactory(open_storage(url), config, owner="writer").start()
    name = f"{NS}/persistent/big-{uuid.uuid4().hex[:6]}"
    try:
        epoch = await writer.fence(NS, 0, 1 << 32)
        ledger = await writer.open(name, NS, 7, epoch)
        assert ledger is not None
        payload = b"y" * 100
        written = time.perf_counter()
        batch = 10_000
        for start in range(0, count, batch):
            for _ in range(min(batch, count - start)):
                ledger.append(payload, 1, 0, None)
            while ledger.pending_adds:
                await asyncio.sleep(0.001)
        write_seconds = time.perf_counter() - written
        await ledger.close()
    finally:
        await writer.close()
    reader = await ManagedLedgerFactory(open_storage(url), config, owner="next-owner").start()
    try:
        started = time.perf_counter()
        epoch = await reader.fence(NS, 0, 1 << 32)
        opened = await reader.open(name, NS, 7, epoch)
        assert opened is not None
        topic = Topic(f"persistent://{NS}/big", window=5, now=time.monotonic, now_ms=lambda: 0, log=opened)
        for info in opened.stored_cursors.values():
            topic.restore_subscription(info.name, info.subscription_type, info.state(opened.ledgers))
        seconds = time.perf_counter() - started
        assert opened.next_seq == count
        return {
            "entries": count,
            "ledgers": len(opened.ledgers),
            "writeSeconds": round(write_seconds, 2),
            "reopenMs": round(seconds * 1e3, 1),
        }
    finally:
        await reader.close()


async def bundle_move(url: str, topics: int) -> dict[str, Any]:
    """The storage side of a bundle's move (phase 3 of the module docstring)."""
    from brokerlb.mledger.cursor import CursorState

    ns = f"{NS}-{uuid.uuid4().hex[:6]}"
    names = [f"{ns}/persistent/t{i}" for i in range(topics)]
    source = await ManagedLedgerFactory(open_storage(url), owner="source").start()
    try:
        epoch = await source.fence(ns, 0, 1 << 32)
        ledgers = []
        for i, name in enumerate(names):
            ledger = await source.open(name, ns, i, epoch)
            assert ledger is not None
            ledger.append(b"z" * 100, 1, 0, None)
            ledger.cursor_source = lambda sub: ("Shared", CursorState(0))
            ledger.cursor_changed("a")
            ledger.cursor_changed("b")
            ledgers.append(ledger)
        await source.committer.drain()
        batches = source.closer.batches
        started = time.perf_counter()
        await asyncio.gather(*(ledger.close() for ledger in ledgers))
        close_ms = (time.perf_counter() - started) * 1e3
        close_batches = source.closer.batches - batches
    finally:
        await source.close()
    destination = await ManagedLedgerFactory(open_storage(url), owner="destination").start()
    try:
        started = time.perf_counter()
        epoch = await destination.fence(ns, 0, 1 << 32)
        fence_ms = (time.perf_counter() - started) * 1e3
        opened = len(destination.unclaimed)
        cursors = sum(len(ml.stored_cursors) for ml, _, _ in destination.unclaimed.values())
        started = time.perf_counter()
        for i, name in enumerate(names):
            assert await destination.open(name, ns, i, epoch) is not None
        claim_ms = (time.perf_counter() - started) * 1e3
        # beside it: the same topics opened one transaction each
        for ledger in list(destination.ledgers.values()):
            destination.forget(ledger)
        started = time.perf_counter()
        for i, name in enumerate(names):
            assert await destination.open(name, ns, i, epoch) is not None
        one_by_one_ms = (time.perf_counter() - started) * 1e3
    finally:
        await destination.close()
    return {
        "topics": topics,
        "cursors": cursors,
        "opened": opened,
        "closeMs": round(close_ms, 1),
        "closeTransactions": close_batches,
        "fenceAndOpenMs": round(fence_ms, 1),
        "claimMs": round(claim_ms, 1),
        "openOneByOneMs": round(one_by_one_ms, 1),
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    tmp = tempfile.TemporaryDirectory(prefix="bench-storage-")
    pg = None
    engines = {
        "memory": lambda: f"memory:bench-{uuid.uuid4().hex[:6]}",
        "sqlite": lambda: f"sqlite:{tmp.name}/{uuid.uuid4().hex[:6]}",
    }
    if args.postgresql:
        from brokerlb.testing.postgres import PostgresServer

        pg = PostgresServer().start()
        engines["postgresql"] = pg.new_database_url
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "loadavg": os.getloadavg()},
        "bare": {},
        "reopen": {},
        "bundle": {},
    }
    try:
        for _ in range(args.rounds):
            for name, url in engines.items():
                results["bare"].setdefault(name, []).append(
                    await bare_commit(url(), args.seconds, args.group)
                )
        for name, url in engines.items():
            if name != "memory":
                results["reopen"][name] = await reopen(url(), args.entries)
        for _ in range(args.rounds):
            for name, url in engines.items():
                results["bundle"].setdefault(name, []).append(await bundle_move(url(), args.bundle_topics))
    finally:
        if pg is not None:
            pg.close()
        tmp.cleanup()
    return results


def report(r: dict[str, Any]) -> None:
    print(f"machine: {r['machine']['cpus']} CPUs, load {r['machine']['loadavg'][0]:.2f} at start")
    print("bare group commit (8 topics, one group each per commit, 100-byte entries), per round:")
    for name, rounds in r["bare"].items():
        for b in rounds:
            print(
                f"  {name:10s} {b['entriesPerSecond']:>10,} entries/s  {b['entriesPerCommit']} per commit, "
                f"commit p50 {b['commitP50Ms']} ms p99 {b['commitP99Ms']} ms"
            )
    for name, o in r["reopen"].items():
        print(
            f"re-open {name}: {o['entries']:,} entries in {o['ledgers']} ledgers (written in {o['writeSeconds']} s): "
            f"fence + open {o['reopenMs']} ms"
        )
    for name, rounds in r["bundle"].items():
        for b in rounds:
            print(
                f"a bundle's move, {name}: {b['topics']:,} topics, {b['cursors']:,} cursors: source close "
                f"{b['closeMs']} ms ({b['closeTransactions']} transaction), destination fence + open of "
                f"{b['opened']:,} topics {b['fenceAndOpenMs']} ms, claimed by their topics {b['claimMs']} ms; "
                f"opened one transaction each instead: {b['openOneByOneMs']} ms"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--group", type=int, default=64, help="entries per topic per commit")
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--bundle-topics", type=int, default=1000, help="topics of the moved bundle (phase 3)"
    )
    parser.add_argument("--postgresql", action="store_true")
    parser.add_argument("--json", action="store_true")
    arguments = parser.parse_args()
    outcome = asyncio.run(main(arguments))
    report(outcome)
    if arguments.json:
        print(json.dumps(outcome, indent=2))
    reopened = {name: o["reopenMs"] for name, o in outcome["reopen"].items()}
    verdict(
        f"re-opening a topic of {arguments.entries:,} entries (fence + open, what a move's next owner does) "
        "<= 1 s on every durable engine",
        ", ".join(f"{name} {ms:.0f} ms" for name, ms in reopened.items()),
        all(ms <= 1000 for ms in reopened.values()),
    )
