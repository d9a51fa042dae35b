"""Ready means ready: a standalone cluster's first broker never answers a lookup of ``public/default``
with 404 (the namespace is written before any broker listens); ``/ready`` and ``/health`` say what is
missing with 503 and turn 200 only when it is there.

Reproduces the finding that ``brokerlb standalone`` answered ``/admin/v2/brokers`` (and lookups) before
``public/default`` existed, so a client polling for the cluster got 404 on its first lookup.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from brokerlb.broker.standalone import StandaloneCluster
from brokerlb.testing import eventually
from brokerlb.testing.clusters import TEST_OVERRIDES
from brokerlb.testing.zookeeper import free_port


@pytest.mark.asyncio
async def test_the_first_answer_of_a_starting_standalone_cluster_is_never_namespace_not_found() -> None:
    port = free_port(count=2)
    cluster = StandaloneCluster(
        2,
        metadata_store=f"memory:ready-{port}",
        web_port=port,
        broker_port=None,
        overrides={**TEST_OVERRIDES, "clusterName": "ready"},
    )
    starting = asyncio.create_task(cluster.start())
    answers: list[int] = []
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:

            async def first_answer() -> bool:
                try:
                    r = await client.get("/lookup/v2/topic/persistent/public/default/t")
                except httpx.TransportError:
                    return starting.done()  # not listening yet
                answers.append(r.status_code)
                return True

            await eventually(first_answer, timeout=30, interval=0.001, message="the first broker answered")
            await starting
            assert answers and answers[0] != 404, answers
            assert (await client.get("/admin/v2/brokers/ready")).text == "ok"
            assert (await client.get("/admin/v2/brokers/health")).text == "ok"
            r = await client.get("/lookup/v2/topic/persistent/public/default/t", follow_redirects=True)
            assert r.status_code == 200, r.text
    finally:
        if not starting.done():
            await asyncio.wait([starting])
        await cluster.stop()


@pytest.mark.asyncio
async def test_health_names_what_is_wrong() -> None:
    port = free_port()
    async with StandaloneCluster(
        1, metadata_store=f"memory:health-{port}", web_port=port, broker_port=None, overrides=TEST_OVERRIDES
    ) as cluster:
        broker = cluster.brokers[0]
        async with httpx.AsyncClient(base_url=broker.url, timeout=10) as client:
            assert (await client.get("/admin/v2/brokers/health")).status_code == 200
            broker.store.drop_connection(60)  # the embedded store's fault injection
            try:
                r = await client.get("/admin/v2/brokers/health")
                assert r.status_code == 503 and "metadata-store session" in r.json()["reason"], r.text
                assert (await client.get("/admin/v2/brokers/ready")).status_code == 200
            finally:
                broker.store.restore_connection()
            await eventually(lambda: broker.store.connected, message="the session is connected again")
            r = await client.get("/admin/v2/brokers/health")
            assert r.status_code == 200, r.text
