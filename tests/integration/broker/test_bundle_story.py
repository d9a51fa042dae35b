"""Every broker runs its ownership state machine; the story endpoint tells why a bundle is where it is.

A lookup, a transfer, an unload and a split each go through the machines of the brokers taking
part, and ``GET .../{bundle}/story`` (any broker) answers with the transitions every broker
recorded, in time order -- on the embedded store and on real ZooKeeper (broker processes).
"""

from __future__ import annotations

import pytest

from brokerlb.admin import AsyncAdminClient

from .helpers import lookup_data, new_namespace, owners_snapshot, topics_of

pytestmark = pytest.mark.asyncio(loop_scope="package")


def moves(story: dict) -> list[tuple[str, str, str, str | None]]:
    """``(recorded by, from, to, destination)`` of each transition."""
    return [
        (t["recordedBy"], t["from"], t["to"], t.get("destination"))
        for t in story["transitions"]
        if t["kind"] == "transition"
    ]


async def test_a_lookup_and_a_transfer_tell_their_story_from_any_broker(cluster, store) -> None:
    ns = new_namespace("story")
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=1)
        await lookup_data(cluster.urls[1], topics_of(ns, 5))
        snap = await owners_snapshot(store, ns, require_all_owned=True)
        (bundle, info), *_ = snap.owners.items()
        source = info.broker_id
        destination = next(b for b in cluster.broker_ids if b != source)
        bundle_range = bundle.rpartition("/")[2]

        story = await admin.bundle_story(ns, bundle_range)
        assert story["bundle"] == bundle and story["owner"] == source and story["unreachable"] == []
        assert moves(story) == [
            (source, "Init", "Assigning", source),
            (source, "Assigning", "Owned", source),
        ]
        assert story["transitions"][0]["stimulusId"].startswith("lookup-")

        await admin.unload_bundle(ns, bundle_range, destination_broker=destination)
        story = await admin.bundle_story(ns, bundle_range)
        assert story["owner"] == destination
        on_source = [m for m in moves(story) if m[0] == source]
        on_destination = [m for m in moves(story) if m[0] == destination]
        assert on_source[2:] == [
            (source, "Owned", "Releasing", destination),
            (source, "Releasing", "Assigning", destination),
            (source, "Assigning", "Owned", destination),
        ]
        assert on_destination == [
            (destination, "Init", "Assigning", destination),
            (destination, "Assigning", "Owned", destination),
        ]
        times = [t["atMs"] for t in story["transitions"]]
        assert times == sorted(times)
        # one broker's own story, as the others ask for it
        local = await AsyncAdminClient(
            next(u for u, b in zip(cluster.urls, cluster.broker_ids, strict=True) if b == destination)
        ).bundle_story(ns, bundle_range, local=True)
        assert {t["recordedBy"] for t in local["transitions"]} == {destination}


async def test_an_unload_and_a_split_go_through_the_owners_machine(cluster, store) -> None:
    ns = new_namespace("story-split")
    async with AsyncAdminClient(cluster.urls[2]) as admin:
        await admin.create_namespace(ns, num_bundles=1)
        await lookup_data(cluster.urls[0], topics_of(ns, 20))
        snap = await owners_snapshot(store, ns, require_all_owned=True)
        (bundle, info), *_ = snap.owners.items()
        owner = info.broker_id
        bundle_range = bundle.rpartition("/")[2]

        await admin.split_bundle(ns, bundle_range)  # redirected to the owner
        story = await admin.bundle_story(ns, bundle_range)
        assert story["owner"] is None
        assert [m for m in moves(story) if m[0] == owner][-2:] == [
            (owner, "Owned", "Splitting", owner),
            (owner, "Splitting", "Deleted", None),
        ]
        after = await owners_snapshot(store, ns, require_all_owned=True)
        child = sorted(after.owners)[0]
        child_story = await admin.bundle_story(ns, child.rpartition("/")[2])
        assert moves(child_story) == [(owner, "Init", "Owned", owner)]
        assert child_story["transitions"][0]["reason"] == f"child of split {bundle}"

        await admin.unload_bundle(ns, child.rpartition("/")[2])
        child_story = await admin.bundle_story(ns, child.rpartition("/")[2])
        assert [m for m in moves(child_story) if m[0] == owner][-2:] == [
            (owner, "Owned", "Releasing", None),
            (owner, "Releasing", "Free", None),
        ]


async def test_a_story_of_a_malformed_bundle_is_a_clear_error(cluster) -> None:
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        with pytest.raises(Exception, match="412|Invalid bundle range"):
            await admin.bundle_story("public/default", "0x00000000_nothex")
