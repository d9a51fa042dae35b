"""Benchmark: one simulated day at 1-minute cycles, 100 brokers, 10,000 bundles (goal: <= 5 s wall).

Wall time depends on what else the machine runs; the CPU time of the process is printed
too (on an otherwise idle machine the two agree). The scenario is the library's ``large-day`` (100 namespaces x 100 bundles, 50,000 topics
with Zipf skew, a diurnal curve and noise; one broker restart, one crash and one scale-out
during the day). The run reports:

* wall time and cycles per second;
* the share spent inside the decision engine (refresh, shedding loop, split check,
  placement) -- another part of brokerlb -- as CPU time measured around every engine call,
  and per phase (calls, CPU ms per call);
* with ``--profile``, the 25 most expensive functions and the time per package
  (``brokerlb.sim``, ``brokerlb.loadbalance``, ``brokerlb.model``, ``brokerlb.ownership``, numpy).

Baseline measured in the same run, alternated with the subject (``--rounds`` pairs): the same
day with ``loadBalancerSheddingEnabled=false`` and ``loadBalancerAutoBundleSplitEnabled=false``
(traffic, reports, refreshes and lookups only), so the cost of the strategy itself shows as a
difference.

Goal (the last line): the day in <= 5 s of wall time (median of the subject's runs), scaled to
``--hours``; its CPU time is printed beside it (on a busy machine wall time includes waiting for
a core).

Run: ``.venv/bin/python benchmarks/bench_simulator.py [--strategy ThresholdShedder] [--hours 24] [--profile]
[--set timing.refresh_interval=5m]``
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import statistics
import sys
import time
from collections import defaultdict
from typing import Any

from brokerlb.sim import run_scenario

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdict import verdict  # noqa: E402


def run(
    strategy: str, hours: float, extra: dict[str, str], profile: bool
) -> tuple[float, float, object, object]:
    """Wall seconds, CPU seconds of this process, the result, the profiler."""
    overrides = {"duration": f"{hours}h", **extra}
    profiler = cProfile.Profile() if profile else None
    t0, c0 = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    result = run_scenario("large-day", strategy, overrides)
    if profiler is not None:
        profiler.disable()
    return time.perf_counter() - t0, time.process_time() - c0, result, profiler


def by_package(profiler: cProfile.Profile) -> dict[str, float]:
    stats = pstats.Stats(profiler)
    totals: dict[str, float] = defaultdict(float)
    for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        path = filename.replace(os.sep, "/")
        for package in (
            "brokerlb/sim",
            "brokerlb/loadbalance",
            "brokerlb/model",
            "brokerlb/ownership",
            "brokerlb/ring",
            "brokerlb/config",
            "numpy",
        ):
            if f"/{package}/" in path:
                totals[package] += tottime
                break
        else:
            totals["other (builtins, stdlib)"] += tottime
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--strategy", default="ThresholdShedder")
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--rounds", type=int, default=1, help="subject/baseline pairs, alternated")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="scenario or broker.conf override, e.g. timing.refresh_interval=5m (repeatable)",
    )
    args = ap.parse_args()
    extra = dict(item.split("=", 1) for item in args.set)

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    walls, cpus = [], []
    base_walls, base_cpus = [], []
    baseline_overrides = {
        **extra,
        "loadBalancerSheddingEnabled": "false",
        "loadBalancerAutoBundleSplitEnabled": "false",
    }
    for i in range(args.rounds):
        wall, cpu, result, profiler = run(args.strategy, args.hours, extra, args.profile and i == 0)
        walls.append(wall)
        cpus.append(cpu)
        if i == 0:
            describe(args, wall, cpu, result, profiler)
        if not args.no_baseline:
            base_wall, base_cpu, base, _ = run(args.strategy, args.hours, baseline_overrides, False)
            base_walls.append(base_wall)
            base_cpus.append(base_cpu)
            print(
                f"baseline (no shedding, no split): wall {base_wall:.1f} s, CPU {base_cpu:.1f} s, engine "
                f"{base.engine_seconds:.1f} s CPU, {base.summary['leader_refreshes']} leader refreshes; the "
                f"strategy and splits add {cpu - base_cpu:+.1f} s of CPU ({cpu / base_cpu:.2f}x)"
            )
    goal = 5.0 * args.hours / 24.0
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    verdict(
        f"<= {goal:.3g} s wall for {args.hours:g} h of {args.strategy}",
        f"{wall:.1f} s wall, {cpu:.1f} s CPU (median of {args.rounds})",
        wall <= goal,
    )


def describe(args: argparse.Namespace, wall: float, cpu: float, result: Any, profiler: Any) -> None:
    s = result.summary
    cycles = result.cycles
    print(
        f"{args.strategy}: {cycles} cycles, {len(result.brokers)} brokers, {s['final_bundles']} bundles at the end"
    )
    print(
        f"  wall {wall:.1f} s ({cycles / wall:.1f} cycles/s), CPU {cpu:.1f} s; the simulation loop used "
        f"{result.cpu_seconds:.1f} s CPU, of which {result.engine_seconds:.1f} s in the decision engine "
        f"({100 * result.engine_seconds / max(result.cpu_seconds, 1e-9):.0f}%) and "
        f"{result.cpu_seconds - result.engine_seconds:.1f} s in the simulator"
    )
    for phase, figures in result.extra.get("engine_phases", {}).items():
        calls = figures["calls"]
        print(
            f"    {phase:<8} {calls:6d} calls x {1000 * figures['seconds'] / max(calls, 1):6.2f} ms "
            f"= {figures['seconds']:5.1f} s CPU"
        )
    print(
        f"  moves {s['moves']}, splits {s['splits']}, reports written {s['reports_written']}, "
        f"leader refreshes {s['leader_refreshes']}, "
        f"max load {100 * s['load_max_mean']:.1f}% (mean), distance from bound {100 * s['distance_mean']:.1f}%"
    )
    if profiler is not None:
        print("  time per package (cProfile tottime; profiling slows the run down):")
        for package, seconds in by_package(profiler).items():
            print(f"    {package:<28} {seconds:7.1f} s")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
