"""A split and a transfer of the same bundle asked at once: one transition wins, the other is refused.

With ownership nodes and a per-bundle lock, the transfer could hand the parent to the destination
while the split gave its children to the owner: two brokers owning overlapping ranges. With one
ownership record per bundle, both are a compare-and-set of that record from the same version:
whichever comes second sees what the first did (the split is refused as stale; the unload finds
nothing to unload).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from brokerlb.admin import AsyncAdminClient
from brokerlb.coordination import MetadataStore, open_store
from brokerlb.errors import ServiceUnavailableError, StaleBundleError
from brokerlb.ring import NamespaceBundle
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.coordination import check_coordination_invariants

from .helpers import lookup_data, new_namespace, topics_of

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def two_brokers() -> AsyncIterator[tuple[InProcessCluster, MetadataStore]]:
    cluster = await InProcessCluster(2).start()
    store = open_store(cluster.store_url, session_timeout=10.0)
    await store.start()
    try:
        yield cluster, store
    finally:
        await store.close()
        await cluster.stop()


async def owned_bundle(cluster: InProcessCluster) -> tuple[str, NamespaceBundle, int]:
    """A fresh one-bundle namespace, owned after a lookup; the owner's index."""
    ns = new_namespace("race")
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=1)
    answer = next(iter((await lookup_data(cluster.urls[0], topics_of(ns, 1))).values()))
    owner = next(i for i, s in enumerate(cluster.services) if s.identity.web_service_url == answer["httpUrl"])
    bundle = NamespaceBundle.parse(f"{ns}/0x00000000_0xffffffff")
    assert cluster.services[owner].actions.owns(bundle)
    return ns, bundle, owner


async def test_a_split_and_a_transfer_of_one_bundle_at_once_one_wins_cleanly(two_brokers) -> None:
    """Both write one transition of the same record from the same version: the second's
    compare-and-set loses (or its machine refuses: the bundle is no longer Owned), and no two brokers
    ever own overlapping ranges."""
    cluster, store = two_brokers
    for first in ("transfer", "split"):
        ns, bundle, owner = await owned_bundle(cluster)
        actions = cluster.services[owner].actions
        destination = cluster.broker_ids[1 - owner]
        moves = {
            "transfer": actions.unload(bundle, destination),
            "split": actions.split(bundle, algorithm="range_equally_divide"),
        }
        second = "split" if first == "transfer" else "transfer"
        results = await asyncio.gather(moves[first], moves[second], return_exceptions=True)
        snap = await check_coordination_invariants(store, [ns])
        outcome = dict(zip((first, second), results, strict=True))
        if snap.bundles[ns].num_bundles == 1:  # the transfer won
            assert snap.owner_ids() == {str(bundle): destination}
            assert isinstance(outcome["split"], StaleBundleError | ServiceUnavailableError), outcome
        else:  # the split won: the children stay with the owner
            assert set(snap.owner_ids().values()) == {cluster.broker_ids[owner]}
            assert outcome["transfer"] is False or isinstance(outcome["transfer"], ServiceUnavailableError), (
                outcome
            )
