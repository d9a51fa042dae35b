"""A consumer that stops reading cannot make a broker process buffer without bound.

The probe of issue 30: a consumer with consume permission only, a backlog, a large FLOW, then
REDELIVER_UNACKNOWLEDGED_MESSAGES again and again without reading -- each command made the broker
queue the whole backlog once more (+18.9 MB per command, 144 -> 427 MB after 15). Now the
connection turns unwritable above ``pulsarChannelWriteBufferHighWaterMark``: dispatch skips its
consumers and the broker stops reading its requests; after ``keepAliveIntervalSeconds`` without
draining it is closed. Bystanders (HTTP lookups, binary produce round trips) are served all along.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
import websockets

from brokerlb.messaging import consumer_path, encode_message_id
from brokerlb.messaging.wire import (
    CommandFlow,
    CommandRedeliverUnacknowledgedMessages,
    CommandSubscribe,
    CommandSuccess,
)
from brokerlb.testing.hostile import MB, Bystanders, RawConnection, peak_rss_bytes, rss_bytes
from brokerlb.testing.standalone_process import StandaloneProcess

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

#: the backlog the attacker has delivered again and again: 200 messages of 64 KB
BACKLOG_MESSAGES, MESSAGE_BYTES = 200, 64 * 1024
REDELIVERIES = 20
#: what the attack may add to the broker's peak memory (without the bound: ~250 MB)
BOUND = 40 * MB


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def broker() -> AsyncIterator[StandaloneProcess]:
    async with StandaloneProcess(1, {"keepAliveIntervalSeconds": 3}) as process:
        yield process


async def test_a_consumer_that_does_not_read_cannot_grow_the_broker(broker: StandaloneProcess) -> None:
    assert broker.process is not None
    pid = broker.process.pid
    url = broker.binary_urls[0]
    topic = "persistent://public/default/flooded"
    bystanders = await Bystanders(broker.urls[0], url, "persistent://public/default/bystander").start()

    attacker = await RawConnection.open(url, source="127.0.0.2", limit=1024)
    await attacker.lookup(topic)
    attacker.send(CommandSubscribe(topic, "sub", 1, 1, 1))  # Shared, consumer 1, request 1
    assert isinstance(await attacker.next(), CommandSuccess)
    producer = await RawConnection.open(url)
    await producer.produce(topic, BACKLOG_MESSAGES, MESSAGE_BYTES)
    producer.close()

    before, peak_before = rss_bytes(pid), peak_rss_bytes(pid)
    attacker.send(CommandFlow(1, 1_000_000))
    for _ in range(REDELIVERIES):  # and never read what comes back
        attacker.send(CommandRedeliverUnacknowledgedMessages(1))
    await bystanders.serve_more(20)  # served while the attacker holds its connection
    dropped = await attacker.dropped_by_broker()
    await bystanders.serve_more()
    grown = peak_rss_bytes(pid) - peak_before
    print(
        f"RSS before {before / MB:.1f} MB, peak before {peak_before / MB:.1f} MB, peak after "
        f"{peak_rss_bytes(pid) / MB:.1f} MB (+{grown / MB:.1f} MB), now {rss_bytes(pid) / MB:.1f} MB"
    )
    assert grown < BOUND, f"the broker's peak memory grew by {grown / MB:.0f} MB"
    assert dropped, "the broker kept a connection that does not read"
    attacker.close()
    await bystanders.stop()
    bystanders.check()


@pytest_asyncio.fixture(loop_scope="module")
async def fresh_broker() -> AsyncIterator[StandaloneProcess]:
    """A broker of its own: the peak RSS of one that took the binary attack already says nothing."""
    async with StandaloneProcess(1) as process:
        yield process


async def test_a_websocket_consumer_that_does_not_read_cannot_grow_the_broker(
    fresh_broker: StandaloneProcess,
) -> None:
    """The same on the WebSocket API: a consumer that never reads and negatively acknowledges the
    backlog again and again (each nack gives back a permit and redelivers at once: every round was
    queued for it once more, base64-encoded). Now a session whose outbox holds more than 64 KB is
    skipped by dispatch until its writer brings it under 32 KB."""
    broker = fresh_broker
    assert broker.process is not None
    pid = broker.process.pid
    topic = "persistent://public/default/ws-flooded"
    producer = await RawConnection.open(broker.binary_urls[0])
    await producer.lookup(topic)
    bystanders = await Bystanders(
        broker.urls[0], broker.binary_urls[0], "persistent://public/default/calm"
    ).start()
    url = broker.urls[0].replace("http://", "ws://", 1) + consumer_path(
        topic, "ws-sub", subscriptionType="Shared", negativeAckRedeliveryDelay=0
    )
    async with websockets.connect(url, max_queue=1, max_size=None) as ws:
        ids = await producer.produce(topic, BACKLOG_MESSAGES, MESSAGE_BYTES)
        before, peak_before = rss_bytes(pid), peak_rss_bytes(pid)
        for _ in range(REDELIVERIES):  # and never read what comes back
            for ledger, entry in ids:
                nack = {"type": "negativeAcknowledge", "messageId": encode_message_id(ledger, entry, -1)}
                await ws.send(json.dumps(nack))
        await bystanders.serve_more(20)  # served while the consumer holds its session
        grown = peak_rss_bytes(pid) - peak_before
        print(
            f"WebSocket: RSS before {before / MB:.1f} MB, peak before {peak_before / MB:.1f} MB, peak "
            f"after {peak_rss_bytes(pid) / MB:.1f} MB (+{grown / MB:.1f} MB) after {REDELIVERIES} rounds "
            f"of {len(ids)} negative acks"
        )
        assert grown < BOUND, f"the broker's peak memory grew by {grown / MB:.0f} MB"
    producer.close()
    await bystanders.stop()
    bystanders.check()
