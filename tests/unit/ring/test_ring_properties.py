"""Property tests: random splits and merges keep the ring whole; mapping is stable; JSON round-trips."""

from hypothesis import given, settings
from hypothesis import strategies as st

from brokerlb import NamespaceBundles
from brokerlb.ring import topic_hash
from brokerlb.testing import assert_ring_covers_keyspace

ops = st.lists(
    st.tuples(st.sampled_from(["split", "merge"]), st.integers(0, 10**9), st.integers(1, 3)), max_size=25
)
names = st.lists(st.text(alphabet="abcdefghij-0123456789", min_size=1, max_size=12), min_size=1, max_size=30)


def apply(nb, op, a, k):
    if op == "split":
        b = nb.bundles[a % len(nb)]
        if not b.can_split:
            return nb
        room = b.upper - b.lower - 1
        points = {b.lower + 1 + (a * (i + 7919)) % room for i in range(min(k, room))}
        return nb.split(b, points)
    if len(nb) < 2:
        return nb
    start = a % (len(nb) - 1)
    return nb.merge(nb.bundles[start : start + 1 + min(k, len(nb) - start - 1)])


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 64), ops, names)
def test_random_splits_and_merges_keep_full_coverage(n, steps, locals_):
    nb = NamespaceBundles.create("t/ns", n)
    topics = [f"persistent://t/ns/{x}" for x in locals_]
    for op, a, k in steps:
        before = {t: nb.find_bundle(t) for t in topics}
        nb = apply(nb, op, a, k)
        assert_ring_covers_keyspace(nb)
        for t in topics:
            after = nb.find_bundle(t)
            assert after.includes_hash(topic_hash(t))
            # a topic moves only into a child of its old bundle (split) or the merged parent (merge)
            old = before[t]
            assert (old.lower <= after.lower and after.upper <= old.upper) or (
                after.lower <= old.lower and old.upper <= after.upper
            )
        assert NamespaceBundles.from_json("t/ns", nb.to_json()) == nb


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 1000), names)
def test_mapping_is_stable_and_matches_batch(n, locals_):
    nb = NamespaceBundles.create("t/ns", n)
    topics = [f"persistent://t/ns/{x}" for x in locals_]
    first = [nb.find_bundle(t) for t in topics]
    assert first == [NamespaceBundles.create("t/ns", n).find_bundle(t) for t in topics]
    assert [nb.bundles[i] for i in nb.find_bundle_indices(topics)] == first


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 64),
    ops,
    st.lists(
        # any character a local name may hold (not "/", not a control character, not only blanks)
        st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=12).filter(
            lambda s: s.strip() and "/" not in s
        ),
        max_size=20,
    ),
)
def test_every_entry_point_finds_the_bundle_of_the_names_crc32(n, steps, locals_):
    """A parsed name (its hash kept from the parse), a full-name string, a short name and the
    batch path agree with the ring's definition: the bundle holding CRC-32 of the full name."""
    import zlib

    from brokerlb import TopicName

    nb = NamespaceBundles.create("public/default", n)
    for op, a, k in steps:
        nb = apply(nb, op, a, k)
    full = [f"persistent://public/default/{x}" for x in locals_]
    for local, name in zip(locals_, full, strict=True):
        expected = nb.bundle_for_hash(zlib.crc32(name.encode("utf-8")))
        topic = TopicName.parse(name)
        assert topic.ring_hash == zlib.crc32(name.encode("utf-8")) == topic_hash(name)
        assert nb.find_bundle(topic) == nb.find_bundle(name) == nb.find_bundle(local) == expected
    if full:
        assert [nb.bundles[i] for i in nb.find_bundle_indices(full)] == [nb.find_bundle(x) for x in full]
