"""A client cannot inflate the load figures the leader acts on.

The probe of issue 30: one SEND with ``num_messages = 2**40`` made the leader split the bundle
within 3 s -- load figures trusted the client's count. Now a SEND whose count cannot fit in its
bytes (6 a message at least) is refused with ``SEND_ERROR{NotAllowedError}``, so the topic's rates
and the bundle's load stay what was really sent, and the leader's split checks find nothing to do.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families

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
from brokerlb.testing.waiting import eventually

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
#: against a hung broker only (reports and split checks come about every second)
GUARD = 120.0


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def broker() -> AsyncIterator[StandaloneProcess]:
    async with StandaloneProcess(1, FAST) as process:
        yield process


async def _split_checks(http: httpx.AsyncClient) -> int:
    """The split checks the leader has run (the dashboard collapses those that decided nothing)."""
    for family in text_string_to_metric_families((await http.get("/metrics")).text):
        if family.name == "brokerlb_leader_cycles":
            return sum(
                int(s.value)
                for s in family.samples
                if s.name.endswith("_total") and s.labels.get("kind") == "split"
            )
    raise AssertionError("/metrics has no brokerlb_leader_cycles")


async def _report_written_after(http: httpx.AsyncClient, after_ms: int) -> bool:
    report = (await http.get("/admin/v2/broker-stats/load-report")).json()
    return int(report["lastUpdate"]) > after_ms


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
        refused_at_ms = int(time.time() * 1000)
        assert isinstance(refused, CommandSendError) and refused.error == ServerError.NotAllowedError, refused
        assert "num_messages" in refused.message
        for n in range(1, 4):  # honest traffic goes on, on the same connection
            raw.send(payload_frame(CommandSend(1, n), payload_section(MessageMetadata("liar", n, 1), b"ok")))
            assert isinstance(await raw.next(), CommandSendReceipt)
        # a second topic in the bundle: a bundle with a single topic is never split (Pulsar's rule)
        other = await RawConnection.open(broker.binary_urls[0])
        await other.produce(f"persistent://{namespace}/honest", 3, 10)
        other.close()
        # A report holds the rates of the last statsUpdateFrequencyInSecs (1 s) of completed
        # seconds: one written 2 s after the refusal comes after any that could hold the lie (a
        # report is written when its figures change: a counted lie would have been)...
        counted_by_ms = refused_at_ms + 2000
        # The leader checks splits after each refresh, and refreshes on a changed report; an idle
        # broker writes none (a quiet machine left the test waiting): honest traffic that varies from
        # one poll to the next keeps reports, refreshes and split checks coming.
        sequence = itertools.count(4)
        bursts = itertools.cycle([1, 4, 0, 8])

        async def honest_burst() -> None:
            for _ in range(next(bursts)):
                n = next(sequence)
                raw.send(
                    payload_frame(CommandSend(1, n), payload_section(MessageMetadata("liar", n, 1), b"ok"))
                )
                assert isinstance(await raw.next(), CommandSendReceipt)

        async def report_written_after(after_ms: int) -> bool:
            await honest_burst()
            return await _report_written_after(http, after_ms)

        async def split_checks_at_least(wanted: int) -> bool:
            await honest_burst()
            return await _split_checks(http) >= wanted

        await eventually(
            lambda: report_written_after(counted_by_ms),
            GUARD,
            interval=0.2,
            message="a load report written after the lie's second",
        )
        # ... and the leader checks splits after every refresh from the reports: three more checks
        checks = await _split_checks(http)
        await eventually(
            lambda: split_checks_at_least(checks + 3),
            GUARD,
            interval=0.2,
            message="three split checks by the leader",
        )
        bundles = (await http.get(f"/admin/v2/namespaces/{namespace}/bundles")).json()
        stats = (await http.get(f"/admin/v2/persistent/{namespace}/inflated/stats")).json()
        raw.close()
    await bystanders.stop()
    bystanders.check()
    assert bundles["numBundles"] == 1, bundles
    assert stats["msgRateIn"] < 100, stats["msgRateIn"]
