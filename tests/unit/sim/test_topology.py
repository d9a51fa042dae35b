import numpy as np
import pytest

from brokerlb.ring import NamespaceBundles
from brokerlb.sim.topology import Topology
from brokerlb.testing import assert_every_topic_in_one_bundle, assert_ring_covers_keyspace


def make(n_topics=400):
    topics = {ns: [f"persistent://{ns}/t-{i}" for i in range(n_topics)] for ns in ("a/x", "a/y")}
    return Topology([("a/x", 4), ("a/y", NamespaceBundles.create("a/y", 8))], topics), topics


def test_topics_map_like_the_ring():
    topo, topics = make()
    for i in range(len(topo.namespaces)):
        ring = topo.ns_bundles[i]
        for t in topo.topics_of_namespace(i)[:50]:
            assert topo.bundle_names[topo.topic_bundle[t]] == str(ring.find_bundle(topo.topic_names[t]))
    assert topo.num_live_bundles == 12 and topo.num_topics == 800


def test_split_remaps_only_that_bundle_and_keeps_the_ring_whole():
    topo, topics = make()
    before = topo.topic_bundle.copy()
    parent = int(topo.ns_bundle_ids[0][1])
    inside = before == parent
    children = topo.split(parent, [0x60000000])
    assert len(children) == 2 and not topo.bundle_live[parent] and topo.num_live_bundles == 13
    assert set(topo.topic_bundle[inside]) <= set(children) and len(set(topo.topic_bundle[inside])) == 2
    assert np.array_equal(topo.topic_bundle[~inside], before[~inside])
    assert_ring_covers_keyspace(topo.ns_bundles[0])
    assert_every_topic_in_one_bundle(topo.ns_bundles[0], topics["a/x"])
    assert [topo.bundle_names[i] for i in topo.bundles_of_namespace(0)] == [
        str(b) for b in topo.ns_bundles[0]
    ]
    with pytest.raises(ValueError, match="not live"):
        topo.split(parent, [0x50000000])


def test_topics_of_unknown_namespace_refused():
    with pytest.raises(ValueError, match="undeclared"):
        Topology([("a/x", 2)], {"a/z": ["persistent://a/z/t"]})
