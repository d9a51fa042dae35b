"""Benchmark: topic -> bundle, on the path production runs, against a bare ``zlib.crc32`` loop.

What production calls per name: a lookup (HTTP or binary) parses the topic from the request
(``TopicName.parse``: a cache of 100,000 parsed names, as Pulsar's ``TopicName.get``; the
request's validation needs the parsed name anyway) and asks the namespace's bundles for it,
``NamespaceBundles.find_bundle(topic)`` with that ``TopicName``; a publish asks for the bundle of
its topic once per ring version. The subject is that per-name step, ``find_bundle(topic)`` over
a working set of ``--topics`` known topics (within the parse cache, as a broker's topics are);
the parse before it is printed too. The baseline is the floor of any exact mapping:
``zlib.crc32(name.encode())`` over the same names. The two are timed alternately, ``--rounds``
pairs of ``--passes`` passes over the names each, on this thread's CPU time (waiting for a core
on a busy machine is not counted), and the ratio is taken pair by pair (median quoted): the
machine's drift between pairs does not move it.

Also printed, for scale (not goals): ``find_bundle`` on a full-name string and on a new name
(parse cache cold), the vectorised batch path (``find_bundle_indices``, used by tools), and
the constructors of bundles.

Goal: the per-name step, ``find_bundle(topic)``, within 1.5x the bare crc32 loop (median of the pairs).

Run: ``.venv/bin/python benchmarks/bench_ring.py [--topics 50000] [--bundles 64] [--rounds 11] [--passes 5]``
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import time
import zlib
from collections.abc import Callable

from brokerlb import NamespaceBundle, NamespaceBundles, TopicName

GOAL = 1.5


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def cpu_timed(fn: Callable[[], object]) -> float:
    """This thread's CPU seconds in ``fn()``: waiting for a core on a busy machine is not counted."""
    t0 = time.thread_time()
    fn()
    return time.thread_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=50_000, help="working set of known topic names")
    ap.add_argument("--bundles", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=11, help="alternating pairs (baseline, subject)")
    ap.add_argument(
        "--passes", type=int, default=5, help="passes over the working set in each half of a pair"
    )
    args = ap.parse_args()

    nb = NamespaceBundles.create("public/default", args.bundles)
    names = [f"persistent://public/default/topic-{i}-partition-{i % 16}" for i in range(args.topics)]
    crc32 = zlib.crc32
    find_bundle, parse = nb.find_bundle, TopicName.parse

    passes = range(args.passes)

    def baseline() -> None:
        for _ in passes:
            for n in names:
                crc32(n.encode())

    topics = [parse(n) for n in names]  # the parse cache's objects, as lookups get them

    def subject() -> None:
        for _ in passes:
            for t in topics:
                find_bundle(t)

    def parse_and_find() -> None:
        for n in names:
            find_bundle(parse(n))

    # same answers as the hash ring's definition, before anything is timed
    for n in names[:1000]:
        assert find_bundle(parse(n)) == nb.bundle_for_hash(crc32(n.encode()))
    subject()  # the working set is known: parsed once, as a running broker's topics are

    ratios, base_t, subj_t, both = [], [], [], []
    for _ in range(args.rounds):
        b, s = cpu_timed(baseline), cpu_timed(subject)
        base_t.append(b)
        subj_t.append(s)
        ratios.append(s / b)
        both.append(cpu_timed(parse_and_find) * args.passes / b)

    per = args.topics * args.passes
    print(
        f"machine: {platform.machine()}, python {platform.python_version()}, load average "
        f"{os.getloadavg()[0]:.1f}; {args.topics:,} known topics, {args.bundles} bundles, {args.rounds} pairs"
    )
    print(f"baseline crc32(name.encode()) loop      : {statistics.median(base_t) / per * 1e9:8.1f} ns a name")
    print(f"find_bundle(topic)                      : {statistics.median(subj_t) / per * 1e9:8.1f} ns a name")
    print(f"TopicName.parse(name) + find_bundle     : {statistics.median(both):8.2f} x the baseline")

    # for scale: other entry points
    sample = names[: min(len(names), 20_000)]
    t_str = min(timed(lambda: [find_bundle(n) for n in sample]) for _ in range(3)) / len(sample)
    fresh = [f"persistent://public/default/fresh-{i}" for i in range(len(sample))]
    t_cold = timed(lambda: [find_bundle(parse(n)) for n in fresh]) / len(fresh)
    t_batch = min(timed(lambda: nb.find_bundle_indices(names)) for _ in range(3)) / args.topics
    print(f"find_bundle(full-name str)              : {t_str * 1e9:8.1f} ns a name")
    print(f"new name: parse + find_bundle           : {t_cold * 1e9:8.1f} ns a name (parse cache cold)")
    print(f"batch find_bundle_indices (tools)       : {t_batch * 1e9:8.1f} ns a name")

    ns = nb.namespace
    bounds = nb.boundaries
    pairs = list(zip(bounds, bounds[1:], strict=False)) * max(1, 100_000 // args.bundles)
    gc.disable()
    try:
        t_ctor = min(timed(lambda: [NamespaceBundle(ns, lo, hi) for lo, hi in pairs]) for _ in range(3))
        t_create = min(timed(lambda: NamespaceBundles.create(ns, 4096)) for _ in range(3))
        bundle_names = [str(b) for b in nb]
        t_bparse = min(timed(lambda: [NamespaceBundle.parse(n) for n in bundle_names]) for _ in range(3))
    finally:
        gc.enable()
    print(f"NamespaceBundle(ns, lo, hi)             : {t_ctor / len(pairs) * 1e9:8.1f} ns")
    print(f"NamespaceBundles.create(ns, 4096)       : {t_create * 1e3:8.3f} ms")
    print(f"NamespaceBundle.parse                   : {t_bparse / len(bundle_names) * 1e6:8.3f} µs")

    ratio = statistics.median(ratios)
    print(
        f"goal: per-name topic -> bundle <= {GOAL}x a bare crc32 loop: {ratio:.2f}x "
        f"(pairs {min(ratios):.2f}-{max(ratios):.2f}) -> {'met' if ratio <= GOAL else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
