"""Benchmark: KIP-848 server-side assignors at 1,000 members x 1,000 topics x 50,000 partitions.

Scenarios, each the best of ``--repeat`` runs (seconds), with the partitions moved:

* ``fresh`` -- nobody owns anything (the coordinator's first target);
* ``join`` -- every member owns its fresh answer (the previous target), one member joins;
* ``leave`` -- the same, one member leaves.

Subscriptions:

* ``homogeneous`` -- every member on every topic (Kafka's fast path; goal <= 200 ms per
  assignment for ``uniform``, Kafka's Java builder takes about 15-20 ms);
* ``heterogeneous`` -- each member on a random ``--het-share`` of the topics: the exact
  balanced-then-sticky flow (no such goal; reported as measured), at ``--het-scale`` of the
  size (members, topics and partitions scaled alike) since it grows faster than linearly.

Baselines in the same run: ``range-server`` (no stickiness, the cheapest possible answer)
and the classic ``sticky`` assignor (Java's constrained fast path) on the homogeneous group.
Every answer is validated with the shared checker (``uniform``: global balance) outside the
timings; inputs are built once and frozen out of the collector's reach (``gc.freeze``).

Run: ``.venv/bin/python benchmarks/bench_server_assignors.py [--members 1000 --topics 1000
--partitions 50000 --repeat 5]``
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from brokerlb.kafka.assignors import GroupAssignment, GroupSnapshot, Member, get_assignor  # noqa: E402
from brokerlb.kafka.checker import check_assignor_result  # noqa: E402


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


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


def run(name: str, group: GroupSnapshot, repeat: int, label: str) -> list[tuple[str, str, str, float, int]]:
    assignor = get_assignor(name)
    rng = random.Random(7)
    rows = []
    seconds, fresh = best_of(lambda: assignor.assign(group), repeat)
    check_assignor_result(assignor, group, fresh)
    rows.append((name, label, "fresh", seconds, fresh.moved))
    for change in ("join", "leave"):
        g = owning(group, fresh, change, rng)
        gc.collect()
        gc.freeze()
        seconds, result = best_of(lambda g=g: assignor.assign(g), repeat)
        check_assignor_result(assignor, g, result)
        rows.append((name, label, change, seconds, result.moved))
    print(f"  {name} {label}: done", file=sys.stderr)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--het-share", type=float, default=0.1, help="heterogeneous: share of topics per member")
    ap.add_argument(
        "--het-scale", type=float, default=0.3, help="heterogeneous: size relative to the full group"
    )
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
        f"{args.het_share:.0%} of the topics; best of {args.repeat}\n"
    )
    rows = []
    rows += run("uniform", homogeneous, args.repeat, "homogeneous")
    rows += run("range-server", homogeneous, args.repeat, "homogeneous")
    rows += run("sticky", homogeneous, args.repeat, "homogeneous")
    rows += run("uniform", heterogeneous, max(1, args.repeat // 2), "heterogeneous")
    base = {(label, sc): sec for name, label, sc, sec, _ in rows if name == "range-server"}
    print(f"{'assignor':<14} {'group':<14} {'scenario':<8} {'ms':>9} {'x range-server':>15} {'moved':>7}")
    for name, label, scenario, seconds, moved in rows:
        ratio = seconds / base[(label, scenario)] if (label, scenario) in base else float("nan")
        print(f"{name:<14} {label:<14} {scenario:<8} {seconds * 1000:>9.1f} {ratio:>15.2f} {moved:>7}")
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
