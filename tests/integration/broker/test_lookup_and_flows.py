"""End to end over real HTTP: lookups, placement, unload, transfer, split, merge -- on both stores.

Each test uses its own namespace on a 3-broker cluster shared by the module: in-process
brokers on the embedded store, and separate ``brokerlb broker`` processes on ZooKeeper.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.naming import TopicName
from brokerlb.ring import NamespaceBundles
from brokerlb.testing import eventually

from .helpers import (
    assert_answers_match_owners,
    lookup_data,
    lookup_many,
    lookups_converge_to_owners,
    new_namespace,
    owned_counts,
    owners_snapshot,
    topics_of,
)

pytestmark = pytest.mark.asyncio(loop_scope="package")


async def test_thousand_lookups_are_answered_with_their_owners_urls(cluster, store) -> None:
    ns = new_namespace("lookup")
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=12)
    topics = topics_of(ns, 1000)
    answers = await lookup_data(cluster.urls[0], topics, concurrency=16)
    snap = await owners_snapshot(store, ns, require_all_owned=True)
    assert_answers_match_owners(answers, snap, ns)
    counts = owned_counts(snap)
    assert set(counts) == set(cluster.broker_ids), f"every broker owns bundles: {counts}"
    assert max(counts.values()) - min(counts.values()) <= 1, f"idle bundles spread evenly: {counts}"
    # repeated lookups are stable and answered directly (200, no redirect) by every broker
    for url in cluster.urls:
        direct = await lookup_many(url, topics[:300], follow_redirects=False)
        assert {r.status_code for r in direct.values()} == {200}
        assert {t: r.json() for t, r in direct.items()} == {t: answers[t] for t in topics[:300]}


async def test_concurrent_lookups_of_one_bundle_share_one_assignment(cluster, store) -> None:
    ns = new_namespace("burst")
    async with AsyncAdminClient(cluster.urls[1]) as admin:
        await admin.create_namespace(ns, num_bundles=1)
    answers = await lookup_data(cluster.urls[1], topics_of(ns, 200), concurrency=32)
    assert len({(a["httpUrl"], a["brokerUrl"]) for a in answers.values()}) == 1
    snap = await owners_snapshot(store, ns, require_all_owned=True)
    (record,) = snap.records.values()
    assert record.version == 2  # assigned once (Assigning v1) and taken (Owned v2), nothing more
    assert_answers_match_owners(answers, snap, ns)


async def test_unload_then_the_next_lookup_places_the_bundle_again(cluster, store) -> None:
    ns = new_namespace("unload")
    async with AsyncAdminClient(cluster.urls[2]) as admin:
        await admin.create_namespace(ns, num_bundles=4)
        topics = topics_of(ns, 100)
        await lookup_data(cluster.urls[2], topics)
        bundles = NamespaceBundles.from_json(ns, await admin.get_bundles(ns))
        target = bundles.bundles[1]
        await admin.unload_bundle(ns, target.range)
        snap = await owners_snapshot(store, ns)
        assert str(target) not in snap.owners, "unloaded: no owner until the next lookup"
        in_target = [t for t in topics if target.includes(t)]
        # the broker that unloaded it has seen the record settle (another may answer from a view one
        # notification behind: its client would be refused by the old owner and look up again)
        again = await lookup_data(cluster.urls[2], in_target)
        snap = await owners_snapshot(store, ns, require_all_owned=True)
        assert_answers_match_owners(again, snap, ns)
        # unloading an unowned bundle is a no-op (204), as in Pulsar
        await admin.unload_bundle(ns, target.range)
        await admin.unload_bundle(ns, target.range)


async def test_unload_with_destination_transfers_the_bundle(cluster, store) -> None:
    ns = new_namespace("transfer")
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=2)
        topics = topics_of(ns, 50)
        await lookup_data(cluster.urls[0], topics)
        snap = await owners_snapshot(store, ns, require_all_owned=True)
        bundle, info = sorted(snap.owners.items())[0]
        destination = next(b for b in cluster.broker_ids if b != info)
        await admin.unload_bundle(ns, bundle.rpartition("/")[2], destination_broker=destination)
        snap = await owners_snapshot(store, ns, require_all_owned=True)
        assert snap.owners[bundle] == destination, "owned by the destination when the call returns"
        answers = await lookup_data(
            cluster.urls[1],
            [
                t
                for t in topics
                if NamespaceBundles.from_json(ns, await admin.get_bundles(ns)).find_bundle(t).range
                == bundle.rpartition("/")[2]
            ],
        )
        assert {a["httpUrl"] for a in answers.values()} == {f"http://{destination}"}


async def test_split_grows_the_bundle_count_and_topics_stay_resolvable(cluster, store) -> None:
    ns = new_namespace("split")
    async with AsyncAdminClient(cluster.urls[1]) as admin:
        await admin.create_namespace(ns, num_bundles=2)
        topics = topics_of(ns, 200)
        await lookup_data(cluster.urls[1], topics)
        before = await owners_snapshot(store, ns, require_all_owned=True)
        parent = before.bundles[ns].bundles[0]
        parent_owner = before.owners[str(parent)]
        await admin.split_bundle(ns, parent.range)  # redirected to the owner
        after = await owners_snapshot(store, ns, require_all_owned=True)
        assert after.bundles[ns].num_bundles == 3
        children = [b for b in after.bundles[ns] if parent.lower <= b.lower and b.upper <= parent.upper]
        assert len(children) == 2 and {after.owners[str(c)] for c in children} == {parent_owner}
        answers = await lookup_data(cluster.urls[0], topics)
        assert_answers_match_owners(answers, after, ns)
        # split with unload: the children are released, then placed again by lookups
        second = after.bundles[ns].bundles[-1]
        await admin.split_bundle(ns, second.range, unload=True, algorithm="range_equally_divide")
        assert (await admin.get_bundles(ns))["numBundles"] == 4

        async def children_released() -> bool:
            snap = await owners_snapshot(store, ns)
            return not any(
                second.lower <= b.lower and b.upper <= second.upper
                for b in (NamespaceBundles.from_json(ns, await admin.get_bundles(ns))).bundles
                if str(b) in snap.owners
            )

        await eventually(children_released, timeout=10, message="split children unloaded")
        # cluster.urls[2] may answer from its view before the release reached it: the answers converge
        await lookups_converge_to_owners(cluster.urls[2], topics, store, ns)
        await owners_snapshot(store, ns, require_all_owned=True)


async def test_merge_extension_assigns_the_merged_bundle(cluster, store) -> None:
    ns = new_namespace("merge")
    async with AsyncAdminClient(cluster.urls[2]) as admin:
        await admin.create_namespace(ns, num_bundles=4)
        topics = topics_of(ns, 100)
        await lookup_data(cluster.urls[2], topics)
        bundles = NamespaceBundles.from_json(ns, await admin.get_bundles(ns))
        result = await admin.merge_bundles(ns, [bundles.bundles[1].range, bundles.bundles[2].range])
        assert (
            result["bundle"]
            == f"{bundles.bundles[1].range.split('_')[0]}_{bundles.bundles[2].range.split('_')[1]}"
        )
        snap = await owners_snapshot(store, ns, require_all_owned=True)
        assert snap.bundles[ns].num_bundles == 3
        assert snap.owners[f"{ns}/{result['bundle']}"] == result["broker"]
        assert_answers_match_owners(await lookup_data(cluster.urls[0], topics), snap, ns)


async def test_partitioned_topics_and_bundle_range(cluster, store) -> None:
    ns = new_namespace("parts")
    topic = f"persistent://{ns}/orders"
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=4)
        await admin.create_partitioned_topic(topic, 6)
        assert await admin.get_partitioned_topic_metadata(topic) == {"partitions": 6}
        assert await admin.get_partitioned_topic_metadata(f"persistent://{ns}/plain") == {"partitions": 0}
        partitions = [str(TopicName.parse(topic).partition(i)) for i in range(6)]
        answers = await lookup_data(cluster.urls[1], partitions)
        snap = await owners_snapshot(store, ns)
        assert_answers_match_owners(answers, snap, ns)
        for p in partitions:
            assert await admin.topic_bundle_range(p) == snap.bundles[ns].find_bundle(p).range


async def test_lookups_survive_a_lookup_storm_without_5xx(cluster) -> None:
    ns = new_namespace("storm")
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=8)
    results = await asyncio.gather(
        *(
            lookup_many(url, topics_of(ns, 150, prefix=f"s{i}"), concurrency=16)
            for i, url in enumerate(cluster.urls)
        )
    )
    statuses = {r.status_code for answers in results for r in answers.values()}
    assert statuses == {200}


async def test_openapi_document_lists_the_endpoints(cluster) -> None:
    async with httpx.AsyncClient(base_url=cluster.urls[0]) as client:
        doc = (await client.get("/openapi.json")).json()
    paths = doc["paths"]
    for path in (
        "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}",
        "/admin/v2/namespaces/{tenant}/{namespace}/{bundle}/split",
        "/admin/v2/namespaces/{tenant}/{namespace}/merge",
        "/admin/v2/brokers/leaderBroker",
        "/admin/v2/broker-stats/load-report",
        "/admin/v2/clusters/{cluster}/failureDomains/{name}",
    ):
        assert path in paths, path
