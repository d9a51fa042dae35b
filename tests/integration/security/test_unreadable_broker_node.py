"""An unreadable node under ``/loadbalance/brokers/`` (empty, not JSON, not an object) is skipped with a
log line: refreshes, placements and lookups go on as if it were not there.

Reproduces the finding that one such node made every leader refresh fail ("Stored value is not valid
JSON") and every new placement answer 500 until someone deleted it.
"""

from __future__ import annotations

import logging

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.coordination import open_store
from brokerlb.testing import eventually
from brokerlb.testing.clusters import InProcessCluster

from ..broker.helpers import lookup_data, new_namespace, topics_of

JUNK = {"junk-empty:1": b"", "junk-text:2": b"{not json", "junk-list:3": b"[1, 2]", "junk-nan:4": b"NaN"}


@pytest.mark.asyncio
async def test_unreadable_broker_nodes_are_skipped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    cluster = await InProcessCluster(2).start()
    store = open_store(cluster.store_url, session_timeout=10.0)
    await store.start()
    try:
        for broker_id, data in JUNK.items():
            await store.create(f"/loadbalance/brokers/{broker_id}", data, ephemeral=True)

        def skipped() -> list[str]:
            return [r.getMessage() for r in caplog.records if "unreadable broker node" in r.getMessage()]

        # every broker's registry cache has seen (and skipped) every junk node
        await eventually(lambda: len(skipped()) >= len(JUNK) * 2, message="the junk nodes were skipped")
        ns = new_namespace("junk")
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(ns, num_bundles=8)
            assert sorted(await admin.get_active_brokers()) == sorted(cluster.broker_ids)
            load_report = await admin.get_load_report()
        assert load_report["webServiceUrl"] == cluster.urls[0]
        answers = await lookup_data(cluster.urls[1], topics_of(ns, 40))
        real = set(cluster.urls)
        assert {a["httpUrl"] for a in answers.values()} <= real
        messages = [r.getMessage() for r in caplog.records]
        assert not [m for m in messages if "refresh failed" in m or "Unexpected error" in m], messages
        for broker_id in JUNK:
            assert sum(broker_id in m for m in skipped()) == 2, (broker_id, skipped())  # once per broker
    finally:
        await store.close()
        await cluster.stop()
