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
