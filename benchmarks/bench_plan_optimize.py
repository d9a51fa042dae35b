"""Benchmark: ``brokerlb plan optimize`` on 1,000 brokers x 100,000 bundles (goal <= 10 s).

The cluster is ``bench_decision_engine``'s (bundles spread over 1,000 namespaces, about 1 % of
the brokers at 88-99 % cpu, the rest at 35-50 %; ``--wide`` spreads them over 10-60 %), written
as a snapshot file with its bundle histories, then the command is run end to end as a user
would: read and validate the snapshot, plan, write the plan file. Timed phases: reading the
snapshot (``parse``), planning (``optimize``), writing (``plan``); the goal is on the total.

Baseline in the same run: ``brokerlb plan shed --strategy ThresholdShedder`` on the same snapshot
(read + one shedding cycle), so the cost reads as a ratio to an existing command.

Run: ``.venv/bin/python benchmarks/bench_plan_optimize.py [--brokers 1000] [--bundles 100000] [--wide]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_decision_engine import NOW, reports  # noqa: E402

from brokerlb.config import ServiceConfig  # noqa: E402
from brokerlb.loadbalance import StrategyState, new_rng  # noqa: E402
from brokerlb.loadbalance.balancer.optimize import optimize, to_plan  # noqa: E402
from brokerlb.loadbalance.refresh import LeaderLoadState, refresh  # noqa: E402
from brokerlb.loadbalance.shedding.loop import run_shedding_cycle  # noqa: E402
from brokerlb.loadbalance.snapshot import load_snapshot, snapshot_to_json  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdict import verdict  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", type=int, default=1000)
    ap.add_argument("--bundles", type=int, default=100_000)
    ap.add_argument("--wide", action="store_true")
    ap.add_argument("--max-moves", type=int, default=None, help="cap the plan (default: no cap)")
    args = ap.parse_args()
    print(
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
        f"{args.brokers} brokers, {args.bundles} bundles{' (wide)' if args.wide else ''}"
    )
    leader = LeaderLoadState()
    refresh(leader, reports(args.brokers, args.bundles, 0, jitter=0.2, wide=args.wide))
    view = leader.view(ServiceConfig(), NOW)
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = Path(tmp) / "snapshot.json"
        snapshot.write_text(json.dumps(snapshot_to_json(view)))
        print(f"  snapshot file: {snapshot.stat().st_size / 1e6:.0f} MB")

        t0, c0 = time.perf_counter(), time.process_time()
        loaded = load_snapshot(snapshot)
        t1, c1 = time.perf_counter(), time.process_time()
        result = optimize(loaded, max_moves=args.max_moves)
        t2, c2 = time.perf_counter(), time.process_time()
        plan = to_plan(result, loaded)
        plan.save(Path(tmp) / "plan.json")
        t3, c3 = time.perf_counter(), time.process_time()

        b0 = time.perf_counter()
        run_shedding_cycle(load_snapshot(snapshot), StrategyState(), new_rng(0), strategy="ThresholdShedder")
        baseline = time.perf_counter() - b0
    s = result.stats
    print(f"  parse    {t1 - t0:6.2f} s wall {c1 - c0:6.2f} s CPU")
    print(
        f"  optimize {t2 - t1:6.2f} s wall {c2 - c1:6.2f} s CPU  {s['moves']} moves in {s['waves']} waves, "
        f"{len(result.splits)} splits, busiest {s['busiestBefore']:.3f} -> {s['busiestAfter']:.3f}, "
        f"{s['movedMbytes']:.0f} MB/s moved"
    )
    print(f"  plan     {t3 - t2:6.2f} s wall {c3 - c2:6.2f} s CPU  {len(plan.operations)} operations")
    total = t3 - t0
    print(
        f"  TOTAL    {total:6.2f} s wall {c3 - c0:6.2f} s CPU; "
        f"{total / baseline:.1f} x `plan shed --strategy ThresholdShedder` ({baseline:.2f} s)"
    )
    verdict("`plan optimize` <= 10 s in total", f"{total:.2f} s wall, {c3 - c0:.2f} s CPU", total <= 10)


if __name__ == "__main__":
    main()
