"""Benchmark: KIP-848 server-side assignors at 1,000 members x 1,000 topics x 50,000 partitions.

Scenarios, each timed ``--repeat`` times (median quoted, min-max beside it), with the partitions
moved:

* ``fresh`` -- nobody owns anything (the coordinator's first target);
* ``join`` -- every member owns its fresh answer (the previous target), one member joins;
* ``leave`` -- the same, one member leaves.

Subscriptions, both at the full size by default:

* ``homogeneous`` -- every member on every topic (Kafka's fast path; Kafka's Java builder takes
  about 15-20 ms);
* ``heterogeneous`` -- each member on a random ``--het-share`` (10 %) of the topics: the exact
  balanced-then-sticky min-cost flow (``brokerlb/kafka/assignors/balanced_flow.py``).

Baseline, measured alternately with the subject (``uniform``, ``range-server``, ``uniform``, ...)
on the same input: ``range-server`` (no stickiness, no global balance: the cheapest KIP-848
answer; a yardstick, not a floor), and once per group the classic ``sticky`` assignor. Every
answer is validated with the shared checker (``uniform``: global balance) outside the timings;
inputs are built once and frozen out of the collector's reach (``gc.freeze``).

Goal: ``uniform`` <= 200 ms per assignment in every scenario of both groups, judged on the median
CPU time (one thread: its wall time on an idle core; the wall medians are printed beside it).

Run: ``.venv/bin/python benchmarks/bench_server_assignors.py [--members 1000 --topics 1000
--partitions 50000 --repeat 5]``
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from brokerlb.kafka.assignors import GroupAssignment, GroupSnapshot, Member, get_assignor  # noqa: E402
from brokerlb.kafka.checker import check_assignor_result  # noqa: E402


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall and CPU seconds of ``fn()``, and its result."""
    t0, c0 = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - t0, time.process_time() - c0, result


def build(members: int, topics: int, partitions: int, share: float | None, seed: int) -> GroupSnapshot:
    rng = random.Random(seed)
    per_topic, extra = divmod(partitions, topics)
    counts = {f"topic-{i:04d}": per_topic + (1 if i < extra else 0) for i in range(topics)}
    names = tuple(sorted(counts))
    out = {}
    for i in range(members):
        mid = f"consumer-{i:05d}"
        subs = names if share is None else tuple(sorted(rng.sample(names, max(1, int(len(names) * share)))))
        out[mid] = Member(mid, subs)
    return GroupSnapshot(out, counts)


def owning(group: GroupSnapshot, result: GroupAssignment, change: str, rng: random.Random) -> GroupSnapshot:
    target = result.target()
    members = {m: Member(m, group.members[m].topics, tuple(target[m]), 1) for m in group.members}
    if change == "leave":
        members.pop(sorted(members)[len(members) // 2])
    elif change == "join":
        some = group.members[sorted(group.members)[0]].topics
        members["consumer-new"] = Member("consumer-new", some)
    return GroupSnapshot(members, group.partitions)


def alternate(
    group: GroupSnapshot, repeat: int, label: str, scenario: str, names: tuple[str, ...]
) -> list[Row]:
    """Each assignor ``repeat`` times on ``group``, in turn (A B A B ...); answers checked once."""
    assignors = [get_assignor(n) for n in names]
    seconds: list[list[tuple[float, float]]] = [[] for _ in names]
    answers: list[Any] = [None] * len(names)
    for _ in range(repeat):
        for k, assignor in enumerate(assignors):
            wall, cpu, answers[k] = timed(lambda a=assignor: a.assign(group))
            seconds[k].append((wall, cpu))
    for assignor, answer in zip(assignors, answers, strict=True):
        check_assignor_result(assignor, group, answer)
    return [(n, label, scenario, seconds[k], answers[k].moved) for k, n in enumerate(names)]


Row = tuple[str, str, str, list[tuple[float, float]], int]


def run(group: GroupSnapshot, repeat: int, label: str, sticky: bool) -> list[Row]:
    rng = random.Random(7)
    rows = alternate(group, repeat, label, "fresh", ("uniform", "range-server"))
    fresh = get_assignor("uniform").assign(group)
    for change in ("join", "leave"):
        g = owning(group, fresh, change, rng)
        gc.collect()
        gc.freeze()
        rows += alternate(g, repeat, label, change, ("uniform", "range-server"))
    if sticky:  # the classic assignor's general (heterogeneous) algorithm takes tens of seconds here
        rows += alternate(group, max(1, repeat // 2), label, "fresh", ("sticky",))
    print(f"  {label}: done", file=sys.stderr)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--het-share", type=float, default=0.1, help="heterogeneous: share of topics per member")
    ap.add_argument(
        "--het-scale", type=float, default=1.0, help="heterogeneous: size relative to the full group"
    )
    ap.add_argument("--goal-ms", type=float, default=200.0)
    args = ap.parse_args()

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}"
    )
    homogeneous = build(args.members, args.topics, args.partitions, None, 1)
    s = args.het_scale
    het_size = (max(2, int(args.members * s)), max(1, int(args.topics * s)), int(args.partitions * s))
    heterogeneous = build(*het_size, args.het_share, 2)
    gc.collect()
    gc.freeze()
    print(
        f"homogeneous: {args.members} members x {args.topics} topics x {args.partitions} partitions; "
        f"heterogeneous: {het_size[0]} x {het_size[1]} x {het_size[2]}, each member on "
        f"{args.het_share:.0%} of the topics; {args.repeat} alternating runs each\n"
    )
    rows = run(homogeneous, args.repeat, "homogeneous", True) + run(
        heterogeneous, args.repeat, "heterogeneous", False
    )
    base = {
        (label, sc): statistics.median(c for _, c in t)
        for name, label, sc, t, _ in rows
        if name == "range-server"
    }
    print(
        f"{'assignor':<14} {'group':<14} {'scenario':<8} {'CPU ms':>8} {'wall ms':>8} {'wall min-max':>13} "
        f"{'CPU x range-server':>19} {'moved':>7}"
    )
    worst = worst_wall = 0.0
    for name, label, scenario, t, moved in rows:
        wall, cpu = statistics.median(w for w, _ in t), statistics.median(c for _, c in t)
        key = (label, scenario)
        ratio = cpu / base[key] if name != "range-server" and key in base else float("nan")
        spread = f"{min(w for w, _ in t) * 1000:.0f}-{max(w for w, _ in t) * 1000:.0f}"
        print(
            f"{name:<14} {label:<14} {scenario:<8} {cpu * 1000:>8.1f} {wall * 1000:>8.1f} {spread:>13} "
            f"{ratio:>19.2f} {moved:>7}"
        )
        if name == "uniform":
            worst, worst_wall = max(worst, cpu), max(worst_wall, wall)
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    print(
        f"goal: uniform <= {args.goal_ms:.0f} ms (median CPU; the machine is shared) in every scenario of "
        f"both groups: slowest {worst * 1000:.0f} ms CPU ({worst_wall * 1000:.0f} ms wall) -> "
        f"{'met' if worst * 1000 <= args.goal_ms else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
