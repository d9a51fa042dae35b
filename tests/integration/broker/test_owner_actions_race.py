"""A split and a transfer of the same bundle reaching its owner together run one after the other.

Without the per-bundle lock in :class:`~brokerlb.broker.owner_actions.OwnerActions`, the
transfer hands the parent to the destination while the split gives its children to the
owner: two brokers own overlapping ranges. With it, whichever comes second sees what the
first did (the split is refused as stale; the unload finds nothing to unload).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from brokerlb.admin import AsyncAdminClient
from brokerlb.coordination import MetadataStore, open_store
from brokerlb.errors import StaleBundleError
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


async def test_split_waiting_for_a_transfer_is_refused_as_stale(two_brokers) -> None:
    cluster, store = two_brokers
    ns, bundle, owner = await owned_bundle(cluster)
    actions = cluster.services[owner].actions
    destination = cluster.broker_ids[1 - owner]
    transfer = asyncio.ensure_future(actions.unload(bundle, destination))
    await asyncio.sleep(0)  # the transfer holds the bundle's lock
    assert actions.busy(bundle)
    with pytest.raises(StaleBundleError, match="no longer owned"):
        await actions.split(bundle, algorithm="range_equally_divide")
    assert await transfer is True
    assert not actions.busy(bundle)
    snap = await check_coordination_invariants(store, [ns])
    assert snap.bundles[ns].num_bundles == 1
    assert snap.owner_ids() == {str(bundle): destination}


async def test_transfer_waiting_for_a_split_finds_nothing_to_unload(two_brokers) -> None:
    cluster, store = two_brokers
    ns, bundle, owner = await owned_bundle(cluster)
    actions = cluster.services[owner].actions
    split = asyncio.ensure_future(actions.split(bundle, algorithm="range_equally_divide"))
    await asyncio.sleep(0)
    assert actions.busy(bundle)
    assert await actions.unload(bundle, cluster.broker_ids[1 - owner]) is False
    outcome = await split
    assert outcome.split and len(outcome.children) == 2
    snap = await check_coordination_invariants(store, [ns])
    assert snap.bundles[ns].num_bundles == 2
    assert set(snap.owner_ids()) == set(outcome.children)
    assert set(snap.owner_ids().values()) == {cluster.broker_ids[owner]}
