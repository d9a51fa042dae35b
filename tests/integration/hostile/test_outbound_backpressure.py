"""A consumer that stops reading cannot make a broker process buffer without bound.

The probe of issue 30: a consumer with consume permission only, a backlog, a large FLOW, then
REDELIVER_UNACKNOWLEDGED_MESSAGES again and again without reading -- each command made the broker
queue the whole backlog once more (+18.9 MB per command, 144 -> 427 MB after 15). Now the
connection turns unwritable above ``pulsarChannelWriteBufferHighWaterMark``: dispatch skips its
consumers and the broker stops reading its requests; after ``keepAliveIntervalSeconds`` without
draining it is closed. Bystanders (HTTP lookups, binary produce round trips) are served all along.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

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
