"""Benchmark: topic → bundle mapping, single lookups and a batch of 1,000,000 names.

Goals: ≥ 2,000,000 names/s in batch, ≤ 2 µs per single lookup.
Baselines measured in the same run: a bare ``zlib.crc32`` over the same names
(the floor for any exact mapping) and a naive per-name loop over ``find_bundle``.

Bundle construction (``NamespaceBundle`` validates its range in its constructor) is
timed too: building a namespace's bundles (``NamespaceBundles.create``, what every split and
merge does), ``NamespaceBundle.parse`` of bundle names (lookups by bundle, metadata paths), and a
bare ``NamespaceBundle(...)`` call per bundle, against a plain tuple of the same three values as
the baseline.

Run: ``.venv/bin/python benchmarks/bench_ring.py [--names 1000000] [--bundles 64]``
"""

from __future__ import annotations

import argparse
import gc
import platform
import time
import zlib

from brokerlb import NamespaceBundle, NamespaceBundles, TopicName


def best_of(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--names", type=int, default=1_000_000)
    ap.add_argument("--bundles", type=int, default=64)
    ap.add_argument("--single", type=int, default=200_000)
    args = ap.parse_args()

    nb = NamespaceBundles.create("public/default", args.bundles)
    names = [f"persistent://public/default/topic-{i}-partition-{i % 16}" for i in range(args.names)]

    t_crc = best_of(lambda: [zlib.crc32(n.encode()) for n in names])
    t_batch = best_of(lambda: nb.find_bundle_indices(names))
    t_loop = best_of(lambda: [nb.find_bundle(n) for n in names], repeat=1)

    sample = names[: args.single]
    parsed = [TopicName.parse(n) for n in sample]
    t_single_str = best_of(lambda: [nb.find_bundle(n) for n in sample]) / len(sample)
    t_single_obj = best_of(lambda: [nb.find_bundle(t) for t in parsed]) / len(sample)
    t_parse = best_of(lambda: [TopicName.parse(n) for n in sample], repeat=1) / len(sample)

    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"{args.names:,} names, {args.bundles} bundles")
    print(f"baseline zlib.crc32 loop     : {args.names / t_crc:14,.0f} names/s")
    print(
        f"batch find_bundle_indices    : {args.names / t_batch:14,.0f} names/s "
        f"({t_batch / t_crc:.2f}x the bare crc32 loop)"
    )
    print(f"per-name find_bundle loop    : {args.names / t_loop:14,.0f} names/s")
    print(f"single lookup, full-name str : {t_single_str * 1e6:8.3f} µs")
    print(f"single lookup, TopicName     : {t_single_obj * 1e6:8.3f} µs")
    print(f"TopicName.parse (for scale)  : {t_parse * 1e6:8.3f} µs")

    ns = nb.namespace
    bounds = nb.boundaries
    pairs = list(zip(bounds, bounds[1:], strict=False)) * max(1, 200_000 // args.bundles)

    def as_tuple(namespace: object, lower: int, upper: int) -> tuple[object, int, int]:
        return (namespace, lower, upper)

    gc.disable()
    try:
        t_tuple = best_of(lambda: [as_tuple(ns, lo, hi) for lo, hi in pairs], repeat=5) / len(pairs)
        t_ctor = best_of(lambda: [NamespaceBundle(ns, lo, hi) for lo, hi in pairs], repeat=5) / len(pairs)
        t_create = best_of(lambda: [NamespaceBundles.create(ns, 4096) for _ in range(10)], repeat=5) / 10
        bundle_names = [str(b) for b in nb] * max(1, 100_000 // args.bundles)
        t_bparse = best_of(lambda: [NamespaceBundle.parse(n) for n in bundle_names], repeat=5) / len(
            bundle_names
        )
    finally:
        gc.enable()
    print(
        f"NamespaceBundle(ns, lo, hi)  : {t_ctor * 1e9:8.1f} ns  (a call returning a tuple: {t_tuple * 1e9:.1f} ns)"
    )
    print(f"NamespaceBundles.create 4096 : {t_create * 1e3:8.3f} ms")
    print(f"NamespaceBundle.parse        : {t_bparse * 1e6:8.3f} µs")


if __name__ == "__main__":
    main()
