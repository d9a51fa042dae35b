import dataclasses
import json

import pytest

from brokerlb import NamespaceBundle, NamespaceBundles, NamespaceName, TopicName
from brokerlb.errors import (
    BundleNotFoundError,
    InvalidBundleRangeError,
    InvalidBundlesError,
    InvalidMergeError,
    InvalidNamespaceNameError,
    InvalidSplitError,
)
from brokerlb.ring import equal_boundaries, parse_boundary, parse_range, topic_hash, validate_num_bundles
from brokerlb.testing import assert_every_topic_in_one_bundle, assert_ring_covers_keyspace


def hexes(bounds):
    return [f"0x{b:08x}" for b in bounds]


@pytest.mark.parametrize(
    "n, expected",
    [
        (1, ["0x00000000", "0xffffffff"]),
        (2, ["0x00000000", "0x80000000", "0xffffffff"]),
        (3, ["0x00000000", "0x55555555", "0xaaaaaaaa", "0xffffffff"]),
        (4, ["0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"]),
    ],
)
def test_equal_bundles(n, expected):
    assert hexes(NamespaceBundles.create("t/ns", n).boundaries) == expected


def test_ten_bundles_match_pulsar_example():
    ranges = [b.range for b in NamespaceBundles.create("my-tenant/my-namespace", 10)]
    assert "0x4ccccccb_0x66666664" in ranges


@pytest.mark.parametrize("n", [0, -1, 2**32 + 1, 1.5, True, "4"])
def test_bad_bundle_count(n):
    with pytest.raises(InvalidBundlesError, match=r"range of \(0, 2\^32\]"):
        NamespaceBundles.create("t/ns", n)


def test_count_limits_are_pulsars():
    # 2^32 bundles is allowed by Pulsar (MAX_BUNDLES); checked without materialising the boundaries.
    assert validate_num_bundles(2**32) == 2**32
    b = equal_boundaries(2**20)
    assert b[0] == 0 and b[1] == 2**12 and b[-2] == (2**20 - 1) * 2**12 and b[-1] == 0xFFFFFFFF


@pytest.mark.parametrize(
    "topic, bundle",
    [
        ("persistent://public/default/my-topic", "public/default/0x00000000_0x40000000"),
        ("persistent://public/default/my-topic-partition-0", "public/default/0x00000000_0x40000000"),
        ("persistent://public/default/my-topic-partition-1", "public/default/0x40000000_0x80000000"),
        ("non-persistent://public/default/my-topic", "public/default/0x80000000_0xc0000000"),
        ("my-topic", "public/default/0x00000000_0x40000000"),
    ],
)
def test_reference_vectors(topic, bundle):
    b = NamespaceBundles.create("public/default", 4)
    found = b.find_bundle(topic)
    assert str(found) == bundle
    assert b.find_bundle(TopicName.parse(topic)) == found


def test_reference_vector_other_namespace():
    b = NamespaceBundles.create("my-tenant/my-ns", 4)
    assert topic_hash("persistent://my-tenant/my-ns/topic-1") == 0xC31FB58B
    found = b.find_bundle("persistent://my-tenant/my-ns/topic-1")
    assert found.range == "0xc0000000_0xffffffff"
    assert str(found) == "my-tenant/my-ns/0xc0000000_0xffffffff"


def test_last_bundle_includes_max_hash():
    b = NamespaceBundles.create("t/ns", 4)
    assert b.bundle_for_hash(0xFFFFFFFF).range == "0xc0000000_0xffffffff"
    assert b.bundle_for_hash(0xBFFFFFFF).range == "0x80000000_0xc0000000"
    assert b.bundle_for_hash(0xC0000000).range == "0xc0000000_0xffffffff"
    last = b.bundles[-1]
    assert last.upper_inclusive and last.includes_hash(0xFFFFFFFF)
    assert not b.bundles[0].includes_hash(0x40000000)


def test_topic_of_other_namespace_is_refused():
    b = NamespaceBundles.create("t/ns", 4)
    with pytest.raises(BundleNotFoundError):
        b.find_bundle("persistent://t/other/x")
    with pytest.raises(BundleNotFoundError):
        b.find_bundle("persistent://t/ns/a/b")  # four parts: a v1 name of namespace t/ns/a


def test_json_round_trip():
    b = NamespaceBundles.create("t/ns", 3)
    data = b.to_json()
    assert data == {"boundaries": ["0x00000000", "0x55555555", "0xaaaaaaaa", "0xffffffff"], "numBundles": 3}
    assert NamespaceBundles.from_json("t/ns", json.loads(json.dumps(data))) == b


def test_from_json_pulsar_rules():
    assert len(NamespaceBundles.from_json("t/ns", None)) == 4
    assert len(NamespaceBundles.from_json("t/ns", {"numBundles": 16})) == 16
    assert len(NamespaceBundles.from_json("t/ns", {"numBundles": 0})) == 4
    assert len(NamespaceBundles.from_json("t/ns", {}, default_num_bundles=32)) == 32
    given = NamespaceBundles.from_json(
        "t/ns", {"boundaries": ["0x00000000", "0x80000000", "0x80000000", "0xffffffff"]}
    )
    assert given.num_bundles == 2  # duplicates dropped, numBundles derived


def test_boundaries_must_cover_range():
    with pytest.raises(InvalidBundlesError, match="do not cover the whole hash range. first:0x00000001"):
        NamespaceBundles.from_boundaries("t/ns", [1, 0xFFFFFFFF])
    with pytest.raises(InvalidBundlesError, match="last:0x80000000"):
        NamespaceBundles.from_boundaries("t/ns", ["0x00000000", "0x80000000"])
    with pytest.raises(InvalidBundlesError, match="outside the hash range"):
        NamespaceBundles.from_boundaries("t/ns", ["0x00000000", "0x1ffffffff"])
    with pytest.raises(InvalidBundlesError, match="not a number"):
        NamespaceBundles.from_boundaries("t/ns", ["0x00000000", "zz", "0xffffffff"])


def test_parse_boundary_like_long_decode():
    assert parse_boundary("0x40000000") == 0x40000000
    assert parse_boundary("0X40000000") == 0x40000000
    assert parse_boundary("#40000000") == 0x40000000
    assert parse_boundary("1073741824") == 0x40000000
    assert parse_boundary("010") == 8
    assert parse_boundary(0) == 0
    with pytest.raises(InvalidBundlesError):
        parse_boundary("-1")


def test_parse_range():
    assert parse_range("0x00000000_0x40000000") == (0, 0x40000000)
    for bad in ["0x00000000", "0x40000000_0x00000000", "x_y", "0x1_0x1"]:
        with pytest.raises(InvalidBundleRangeError):
            parse_range(bad)


def test_bundle_parse_and_str():
    b = NamespaceBundle.parse("public/default/0x00000000_0x40000000")
    assert str(b) == "public/default/0x00000000_0x40000000"
    assert b.range == "0x00000000_0x40000000"
    assert NamespaceBundle.parse("t/c/ns/0x00000000_0xffffffff").is_full


def test_get_bundle_by_range_and_name():
    nb = NamespaceBundles.create("t/ns", 4)
    assert nb.get_bundle("0x40000000_0x80000000") == nb.bundles[1]
    assert nb.get_bundle("t/ns/0x40000000_0x80000000") == nb.bundles[1]
    with pytest.raises(BundleNotFoundError, match="0x40000000_0x90000000 not found"):
        nb.get_bundle("0x40000000_0x90000000")
    with pytest.raises(BundleNotFoundError):
        nb.get_bundle("t/other/0x40000000_0x80000000")
    assert "0x40000000_0x80000000" in nb and "0x40000000_0x90000000" not in nb


def test_full_bundle_range_split_at_7fffffff():
    nb = NamespaceBundles.create("t/ns", 1)
    out = nb.split(nb.bundles[0], [0x7FFFFFFF])
    assert [b.range for b in out] == ["0x00000000_0x7fffffff", "0x7fffffff_0xffffffff"]


def test_split_into_many_children():
    nb = NamespaceBundles.create("t/ns", 2)
    out = nb.split("0x00000000_0x80000000", ["0x30000000", "0x10000000", "0x10000000"])
    assert [b.range for b in out][:3] == [
        "0x00000000_0x10000000",
        "0x10000000_0x30000000",
        "0x30000000_0x80000000",
    ]
    assert nb.num_bundles == 2  # immutable
    assert_ring_covers_keyspace(out)


@pytest.mark.parametrize("points", [[0], [0x80000000], [0x90000000], []])
def test_split_rejects_points_not_strictly_inside(points):
    nb = NamespaceBundles.create("t/ns", 2)
    with pytest.raises(InvalidSplitError):
        nb.split("0x00000000_0x80000000", points)


def test_split_needs_room():
    nb = NamespaceBundles.from_boundaries("t/ns", [0, 5, 6, 0xFFFFFFFF])
    tiny = nb.get_bundle((5, 6))
    assert not tiny.can_split
    with pytest.raises(InvalidSplitError, match="too small"):
        nb.split(tiny, [5])


def test_merge_adjacent():
    nb = NamespaceBundles.create("t/ns", 8)
    merged = nb.merge(nb.bundles[2:5])
    assert merged.num_bundles == 6
    assert merged.bundles[2].range == f"0x{nb.boundaries[2]:08x}_0x{nb.boundaries[5]:08x}"
    assert_ring_covers_keyspace(merged)
    assert nb.merged_bundle(nb.bundles[2:5]) == merged.bundles[2]
    everything = nb.merge(nb.bundles)
    assert everything.num_bundles == 1 and everything.bundles[0].is_full


def test_merge_refuses_non_adjacent_or_single():
    nb = NamespaceBundles.create("t/ns", 4)
    with pytest.raises(InvalidMergeError, match="not adjacent"):
        nb.merge([nb.bundles[0], nb.bundles[2]])
    with pytest.raises(InvalidMergeError, match="at least two"):
        nb.merge([nb.bundles[0], nb.bundles[0]])
    with pytest.raises(BundleNotFoundError):
        nb.merge(["0x00000000_0x20000000", "0x20000000_0x40000000"])


def test_batch_mapping_matches_single():
    nb = NamespaceBundles.create("t/ns", 7).split("0x00000000_0x24924924", [0x100])
    names = [f"persistent://t/ns/topic-{i}" for i in range(5000)]
    idx = nb.find_bundle_indices(names)
    bundles = nb.bundles
    assert [bundles[i] for i in idx] == [nb.find_bundle(n) for n in names]
    assert_every_topic_in_one_bundle(nb, names[:500])


# Pulsar rule (NamespaceBundle's constructor): the key range is closed at the lower bound,
# non-empty, and closed at the upper bound only when it is 0xffffffff ("Upper Endpoint should be
# exclusive unless it is 0xffffffff"); the hash ring is [0x00000000, 0xffffffff]. brokerlb
# derives the upper bound type from the value, so a bundle built directly is checked for
# 0 <= lower < upper <= 0xffffffff and cannot be invalid.
@pytest.mark.parametrize(
    "lower, upper, why",
    [
        (0, 0, "lower bound is not below upper bound"),  # an empty range: NamespaceBundle(ns, 0, 0)
        (0x80000000, 0x40000000, "lower bound is not below upper bound"),
        (0xFFFFFFFF, 0xFFFFFFFF, "lower bound is not below upper bound"),
        (-1, 0x40000000, "outside the hash range"),
        (0, 0x100000000, "outside the hash range"),
        (True, 5, "not an integer"),
        ("0x0", 5, "not an integer"),
        (0.0, 5, "not an integer"),
    ],
)
def test_an_invalid_bundle_cannot_be_built(lower, upper, why):
    ns = NamespaceName.parse("t/ns")
    with pytest.raises(InvalidBundleRangeError, match=why) as info:
        NamespaceBundle(ns, lower, upper)
    assert info.value.http_status == 412


def test_a_valid_bundle_built_directly_equals_the_parsed_one():
    ns = NamespaceName.parse("t/ns")
    last = NamespaceBundle(ns, 0xC0000000, 0xFFFFFFFF)
    assert last == NamespaceBundle.parse("t/ns/0xc0000000_0xffffffff") and last.upper_inclusive
    assert last.includes_hash(0xFFFFFFFF) and not NamespaceBundle(ns, 0, 0x40000000).includes_hash(0x40000000)
    # a namespace string is parsed, int-like bounds (numpy) become ints
    import numpy as np

    b = NamespaceBundle("t/ns", np.int64(1), np.uint32(5))
    assert b == NamespaceBundle(ns, 1, 5) and type(b.lower) is int and b.namespace == ns
    with pytest.raises(InvalidNamespaceNameError):
        NamespaceBundle("t/n s", 0, 1)
    with pytest.raises(InvalidBundleRangeError, match="expected a namespace name"):
        NamespaceBundle(None, 0, 1)  # type: ignore[arg-type]
    with pytest.raises(InvalidBundleRangeError):
        dataclasses.replace(last, lower=0xFFFFFFFF)


def test_bundles_order_as_pulsars_compare_to():
    a = NamespaceBundle.parse("t/ns/0x00000000_0x40000000")
    b = NamespaceBundle.parse("t/ns/0x40000000_0xffffffff")
    other = NamespaceBundle.parse("a/ns/0x80000000_0xffffffff")
    assert a.compare_to(b) == -1 and b.compare_to(a) == 1 and a.compare_to(a) == 0
    assert sorted([b, a, other]) == [other, a, b]  # namespace name first, then the lower bound
    parent = NamespaceBundle.parse("t/ns/0x00000000_0xffffffff")
    with pytest.raises(InvalidBundleRangeError, match="overlap"):
        _ = parent < a  # a parent and its child do not compare (Pulsar: IllegalArgumentException)
