"""A client cannot inflate the load figures the leader acts on.

The probe of issue 30: one SEND with ``num_messages = 2**40`` made the leader split the bundle
within 3 s -- load figures trusted the client's count. Now a SEND whose count cannot fit in its
bytes (6 a message at least) is refused with ``SEND_ERROR{NotAllowedError}``, so the topic's rates
and the bundle's load stay what was really sent, and the leader's split checks find nothing to do.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from brokerlb.messaging.frames import payload_frame, payload_section
from brokerlb.messaging.wire import (
    CommandProducer,
    CommandProducerSuccess,
    CommandSend,
    CommandSendError,
    CommandSendReceipt,
    MessageMetadata,
    ServerError,
)
from brokerlb.testing.hostile import Bystanders, RawConnection
from brokerlb.testing.standalone_process import StandaloneProcess

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

FAST = {
    "brokerlbHostUsage": "traffic",
    "statsUpdateFrequencyInSecs": 1,
    "loadBalancerReportUpdateMinIntervalMillis": 200,
    "loadBalancerSplitIntervalMinutes": 0.01,
    "loadBalancerSheddingIntervalMinutes": 0.01,
    "loadBalancerResourceQuotaUpdateIntervalMinutes": 0.01,
}
JSON = {"content-type": "application/json"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def broker() -> AsyncIterator[StandaloneProcess]:
    async with StandaloneProcess(1, FAST) as process:
        yield process


async def _split_cycles_since(http: httpx.AsyncClient, since_ms: int) -> int:
    state = (await http.get("/dashboard/api/state")).json()
    return sum(1 for c in state.get("cycles", []) if c.get("kind") == "split" and c.get("atMs", 0) > since_ms)


async def test_a_send_claiming_more_messages_than_its_bytes_hold_is_refused_and_splits_nothing(
    broker: StandaloneProcess,
) -> None:
    namespace = f"public/liars-{uuid.uuid4().hex[:8]}"
    topic = f"persistent://{namespace}/inflated"
    bystanders = await Bystanders(
        broker.urls[0], broker.binary_urls[0], "persistent://public/default/calm"
    ).start()
    async with httpx.AsyncClient(base_url=broker.urls[0], timeout=60) as http:
        created = await http.put(f"/admin/v2/namespaces/{namespace}", json={"bundles": {"numBundles": 1}})
        assert created.status_code == 204, created.text
        raw = await RawConnection.open(broker.binary_urls[0])
        await raw.lookup(topic)
        raw.send(CommandProducer(topic, 1, 1))
        assert isinstance(await raw.next(), CommandProducerSuccess)
        section = payload_section(MessageMetadata("liar", 0, 1), b"tiny")
        raw.send(payload_frame(CommandSend(1, 0, num_messages=2**40), section))
        refused = await raw.next()
        assert isinstance(refused, CommandSendError) and refused.error == ServerError.NotAllowedError, refused
        assert "num_messages" in refused.message
        for n in range(1, 4):  # honest traffic goes on, on the same connection
            raw.send(payload_frame(CommandSend(1, n), payload_section(MessageMetadata("liar", n, 1), b"ok")))
            assert isinstance(await raw.next(), CommandSendReceipt)
        # a second topic in the bundle: a bundle with a single topic is never split (Pulsar's rule)
        other = await RawConnection.open(broker.binary_urls[0])
        await other.produce(f"persistent://{namespace}/honest", 3, 10)
        other.close()
        lied_at_ms = int(time.time() * 1000) + 2000  # the broker's next reports carry what it counted
        async with asyncio.timeout(60):  # the leader runs several split checks over those reports
            while await _split_cycles_since(http, lied_at_ms) < 3:
                await asyncio.sleep(0.2)
        bundles = (await http.get(f"/admin/v2/namespaces/{namespace}/bundles")).json()
        stats = (await http.get(f"/admin/v2/persistent/{namespace}/inflated/stats")).json()
        raw.close()
    await bystanders.stop()
    bystanders.check()
    assert bundles["numBundles"] == 1, bundles
    assert stats["msgRateIn"] < 100, stats["msgRateIn"]
