"""Benchmark: consumer-group assignors at 1,000 members x 100,000 partitions.

Scenarios (10 topics x 10,000 partitions by default, every member on every topic):

* ``fresh``  -- nobody owns anything;
* ``join``   -- every member owns its fresh answer, one member joins;
* ``leave``  -- every member owns its fresh answer, one member leaves;
* ``mixed``  -- members subscribe to 5 of the 10 topics (the sticky assignors'
  general algorithm), fresh; run at ``--mixed-scale`` of the size because that
  algorithm is iterative.

Each cell is the best of ``--repeat`` runs (seconds) and the partitions moved.
Baselines in the same run: ``range`` (the cheapest assignor) at full size, and
kafka-python 3.0.12's sticky and round-robin assignors at ``--reference-scale``
of the size (the pure-Python reference; its sticky is quadratic) against ours
at the same size.

Every answer is validated with the shared checker before it is timed again. The inputs are
moved out of the garbage collector's reach (``gc.freeze``) once built; the collector still runs.

Run: ``.venv/bin/python benchmarks/bench_assignors.py [--members 1000 --partitions 100000]``
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

from brokerlb.kafka.assignors import (  # noqa: E402
    ASSIGNORS,
    GroupAssignment,
    GroupSnapshot,
    Member,
    get_assignor,
)
from brokerlb.kafka.checker import check_assignor_result  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdict import verdict  # noqa: E402


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def group_of(
    members: int, partitions: int, topics: int, per_member_topics: int | None, seed: int, rates: bool = False
) -> GroupSnapshot:
    rng = random.Random(seed)
    counts = {f"topic-{i:02d}": partitions // topics for i in range(topics)}
    names = sorted(counts)
    out = {}
    for i in range(members):
        mid = f"consumer-{i:05d}"
        subs = (
            tuple(names) if per_member_topics is None else tuple(sorted(rng.sample(names, per_member_topics)))
        )
        out[mid] = Member(mid, subs)
    measured = (
        {t: tuple(rng.paretovariate(1.5) for _ in range(n)) for t, n in counts.items()} if rates else {}
    )
    return GroupSnapshot(out, counts, measured)


def owning(group: GroupSnapshot, result: GroupAssignment, join: bool, leave: bool) -> GroupSnapshot:
    target = result.target()
    members = {m: Member(m, group.members[m].topics, tuple(target[m]), 1) for m in group.members}
    if leave:
        members.pop(sorted(members)[0])
    if join:
        members["consumer-new"] = Member("consumer-new", next(iter(group.members.values())).topics)
    return GroupSnapshot(members, group.partitions, group.rates)


def validate(name: str, group: GroupSnapshot, result: GroupAssignment) -> None:
    check_assignor_result(get_assignor(name), group, result)


def run_scenarios(args: argparse.Namespace) -> list[tuple[str, str, float, int]]:
    rows = []
    full = group_of(args.members, args.partitions, args.topics, None, 1, rates=True)
    mixed = group_of(
        max(2, int(args.members * args.mixed_scale)),
        int(args.partitions * args.mixed_scale),
        args.topics,
        args.topics // 2,
        2,
        rates=True,
    )
    gc.collect()
    gc.freeze()  # the inputs live all run long: keep the collector from rescanning them in every timing
    for name in ASSIGNORS:
        assignor = get_assignor(name)
        seconds, fresh = best_of(lambda a=assignor: a.assign(full), args.repeat)
        validate(name, full, fresh)
        rows.append((name, "fresh", seconds, fresh.moved))
        for scenario, join, leave in (("join", True, False), ("leave", False, True)):
            g = owning(full, fresh, join, leave)
            seconds, result = best_of(lambda a=assignor, g=g: a.assign(g), args.repeat)
            validate(name, g, result)
            rows.append((name, scenario, seconds, result.moved))
        seconds, result = best_of(lambda a=assignor: a.assign(mixed), args.repeat)
        validate(name, mixed, result)
        rows.append((name, f"mixed x{args.mixed_scale:g}", seconds, result.moved))
        print(f"  {name}: done", file=sys.stderr)
    return rows


def reference(args: argparse.Namespace) -> list[tuple[str, float, float]]:
    """Ours vs kafka-python at a reduced size (same group, same answers for sticky)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from tests.kafka.kafka_python_ref import kafka_python_assign

    m = max(2, int(args.members * args.reference_scale))
    p = int(args.partitions * args.reference_scale)
    group = group_of(m, p, args.topics, None, 3)
    fresh = get_assignor("sticky", constrained=False).assign(group)
    joined = owning(group, fresh, join=True, leave=False)
    out = []
    for name, g, label in (("roundrobin", group, "roundrobin fresh"), ("sticky", joined, "sticky join")):
        ours_assignor = get_assignor(name, **({"constrained": False} if name == "sticky" else {}))
        ours, mine = best_of(lambda a=ours_assignor, g=g: a.assign(g), 1)
        theirs, ref = best_of(lambda g=g, n=name: kafka_python_assign(n, g), 1)
        assert mine.assignment == ref, f"{label}: answers differ"
        out.append((f"{label} ({m} x {p})", ours, theirs))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mixed-scale", type=float, default=0.1)
    ap.add_argument("--reference-scale", type=float, default=0.1)
    args = ap.parse_args()

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"group: {args.members} members, {args.partitions} partitions in {args.topics} topics; "
        f"best of {args.repeat}\n"
    )
    rows = run_scenarios(args)
    baseline = {scenario: seconds for name, scenario, seconds, _ in rows if name == "range"}
    print(f"{'assignor':<20} {'scenario':<12} {'seconds':>9} {'x range':>8} {'moved':>8}")
    for name, scenario, seconds, moved in rows:
        ratio = seconds / baseline[scenario] if baseline.get(scenario) else float("nan")
        print(f"{name:<20} {scenario:<12} {seconds:>9.3f} {ratio:>8.1f} {moved:>8}")
    print("\nreference: ours vs kafka-python 3.0.12 (identical answers checked)")
    ratios = []
    for label, ours, theirs in reference(args):
        print(f"  {label:<34} ours {ours:8.3f} s   kafka-python {theirs:8.3f} s   ({theirs / ours:5.1f}x)")
        ratios.append(theirs / ours)
    verdict(
        "the classic assignors at least as fast as kafka-python's on identical answers",
        ", ".join(f"{r:.1f}x" for r in ratios),
        all(r >= 1.0 for r in ratios),
    )


if __name__ == "__main__":
    main()
