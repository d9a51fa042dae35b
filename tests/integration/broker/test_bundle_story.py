"""Every broker's ownership machine sees every change of a bundle's record; the story endpoint tells
why a bundle is where it is.

A lookup, a transfer, an unload and a split are each transitions of the bundle's one record;
``GET .../{bundle}/story`` (any broker) answers with every change once, told by the broker that made
it (who asked and why), and the leader's decisions, in time order -- on the embedded store and on
real ZooKeeper (broker processes).
"""

from __future__ import annotations

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.testing.waiting import eventually

from .helpers import lookup_data, new_namespace, owners_snapshot, topics_of

pytestmark = pytest.mark.asyncio(loop_scope="package")


def moves(story: dict) -> list[tuple[str, str, str | None, str | None]]:
    """``(from, to, source, destination)`` of each change of the record."""
    return [
        (t["from"], t["to"], t.get("source"), t.get("destination"))
        for t in story["transitions"]
        if t["kind"] == "transition"
    ]


async def test_a_lookup_and_a_transfer_tell_their_story_from_any_broker(cluster, store) -> None:
    ns = new_namespace("story")
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=1)
        await lookup_data(cluster.urls[1], topics_of(ns, 5))
        snap = await owners_snapshot(store, ns, require_all_owned=True)
        (bundle, source), *_ = snap.owners.items()
        destination = next(b for b in cluster.broker_ids if b != source)
        bundle_range = bundle.rpartition("/")[2]

        story = await admin.bundle_story(ns, bundle_range)
        assert story["bundle"] == bundle and story["owner"] == source and story["unreachable"] == []
        assert moves(story) == [("Init", "Assigning", None, source), ("Assigning", "Owned", None, source)]
        assigned, taken = [t for t in story["transitions"] if t["kind"] == "transition"]
        assert assigned["reason"] == "lookup" and taken["by"] == source and taken["version"] == 2

        await admin.unload_bundle(ns, bundle_range, destination_broker=destination)

        async def told_by_their_makers() -> dict | None:
            # each broker's machine sees the record through its own watch: the source tells its
            # release and the destination its take once their views have them (the unload returned
            # when the asked broker's view had the move settled)
            story = await admin.bundle_story(ns, bundle_range)
            by = {t["version"]: t["by"] for t in story["transitions"] if t["kind"] == "transition"}
            return story if by.get(4) == source and by.get(5) == destination else None

        story = await eventually(
            told_by_their_makers, 30, message="the source and destination tell their moves"
        )
        assert story["owner"] == destination
        assert moves(story)[2:] == [
            ("Owned", "Releasing", source, destination),
            ("Releasing", "Assigning", source, destination),
            ("Assigning", "Owned", source, destination),
        ]
        by = [t["by"] for t in story["transitions"] if t["kind"] == "transition"][2:]
        assert by[1:] == [source, destination]  # the source released it, the destination took it
        times = [t["atMs"] for t in story["transitions"]]
        assert times == sorted(times)
        # one broker's own story, as the others ask for it
        local = await AsyncAdminClient(
            next(u for u, b in zip(cluster.urls, cluster.broker_ids, strict=True) if b == destination)
        ).bundle_story(ns, bundle_range, local=True)
        assert {t["recordedBy"] for t in local["transitions"]} == {destination}


async def test_an_unload_and_a_split_are_changes_of_the_records(cluster, store) -> None:
    ns = new_namespace("story-split")
    async with AsyncAdminClient(cluster.urls[2]) as admin:
        await admin.create_namespace(ns, num_bundles=1)
        await lookup_data(cluster.urls[0], topics_of(ns, 20))
        snap = await owners_snapshot(store, ns, require_all_owned=True)
        (bundle, owner), *_ = snap.owners.items()
        bundle_range = bundle.rpartition("/")[2]

        await admin.split_bundle(ns, bundle_range)  # redirected to the owner
        story = await admin.bundle_story(ns, bundle_range)
        assert story["owner"] is None
        assert moves(story)[-2:] == [
            ("Owned", "Splitting", owner, None),
            ("Splitting", "Deleted", owner, None),
        ]
        after = await owners_snapshot(store, ns, require_all_owned=True)
        child = sorted(after.owners)[0]
        child_story = await admin.bundle_story(ns, child.rpartition("/")[2])
        assert moves(child_story) == [("Init", "Owned", None, owner)]
        assert child_story["transitions"][0]["reason"] == f"child of split {bundle}"

        await admin.unload_bundle(ns, child.rpartition("/")[2])
        child_story = await admin.bundle_story(ns, child.rpartition("/")[2])
        assert moves(child_story)[-2:] == [
            ("Owned", "Releasing", owner, None),
            ("Releasing", "Free", owner, None),
        ]


async def test_a_story_of_a_malformed_bundle_is_a_clear_error(cluster) -> None:
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        with pytest.raises(Exception, match="412|Invalid bundle range"):
            await admin.bundle_story("public/default", "0x00000000_nothex")
