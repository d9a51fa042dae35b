"""Vectorised topic → bundle lookup agrees with the ring, across layout versions."""

from __future__ import annotations

import numpy as np

from brokerlb.pipeline.bundle_index import BoundaryIndex
from brokerlb.ring import NamespaceBundles, topic_hash


def test_lookup_matches_find_bundle_for_each_version():
    v1 = NamespaceBundles.create("t/ns", 4)
    v2 = v1.split(v1.bundles[0], [0x20000000])
    other = NamespaceBundles.create("t/other", 3)
    index = BoundaryIndex(
        [("t/ns", 100, v1.boundaries), ("t/ns", 200, v2.boundaries), ("t/other", 50, other.boundaries)]
    )
    assert [(v.namespace, v.valid_from, v.valid_to) for v in index.versions] == [
        ("t/ns", 100, 200),
        ("t/ns", 200, None),
        ("t/other", 50, None),
    ]
    names = [f"persistent://t/ns/topic-{i}" for i in range(300)]
    hashes = np.array([topic_hash(n) for n in names])
    ns = np.full(len(names), index.namespace_id("t/ns"))
    for ts, layout in [(150, v1), (200, v2), (10**12, v2)]:
        versions = index.version_at(ns, np.full(len(names), ts))
        lower, upper = index.bundle_of(versions, hashes)
        for name, lo, hi in zip(names, lower, upper, strict=True):
            bundle = layout.find_bundle(name)
            assert (lo, hi) == (bundle.lower, bundle.upper)


def test_no_version_before_the_first_record_or_for_unknown_namespaces():
    index = BoundaryIndex([("t/ns", 100, [0, 0xFFFFFFFF])])
    versions = index.version_at(np.array([0, 0, -1]), np.array([99, 100, 100]))
    assert versions.tolist() == [-1, 0, -1]
    lower, upper = index.bundle_of(versions, np.array([5, 0xFFFFFFFF, 5]))
    assert lower.tolist() == [-1, 0, -1] and upper.tolist() == [-1, 0xFFFFFFFF, -1]
    assert len(BoundaryIndex([])) == 0 and BoundaryIndex([]).version_at(
        np.array([0]), np.array([1])
    ).tolist() == [-1]


def test_last_bundle_includes_the_top_hash_and_latest():
    index = BoundaryIndex(
        [("a/b", 1, [0, 10, 0xFFFFFFFF]), ("a/b", 1, [0, 20, 0xFFFFFFFF])]
    )  # same key: last wins
    lower, upper = index.bundle_of(np.array([0, 0]), np.array([0xFFFFFFFF, 19]))
    assert lower.tolist() == [20, 0] and upper.tolist() == [0xFFFFFFFF, 20]
    assert index.latest(0) == {} and index.latest()["a/b"].boundaries == (0, 20, 0xFFFFFFFF)
