"""`brokerlb perf produce|consume` as a user runs them, against `brokerlb standalone` in another process."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from brokerlb.admin import AsyncAdminClient
from brokerlb.testing.standalone_process import StandaloneProcess
from brokerlb.testing.waiting import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def standalone() -> AsyncIterator[StandaloneProcess]:
    async with StandaloneProcess(1, {"webSocketServiceEnabled": True, "clusterName": "perf"}) as cluster:
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace("public/perf", num_bundles=4)
        yield cluster


@pytest.fixture
def broker_url(standalone: StandaloneProcess) -> str:
    return standalone.urls[0]


async def _cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "brokerlb.cli.main",
        "perf",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode(), err.decode()


#: Messages the run publishes (about 3 s at 300 msg/s); the consumer stops once it has them all.
MESSAGES = 900


async def _subscribed_topics(url: str) -> bool:
    """Each of the 5 topics has its consumer (a non-persistent topic drops what nobody receives)."""
    async with AsyncAdminClient(url) as admin:
        stats = await admin.get_topics_stats()
    consumers = [
        topic_stats.get("consumerCount", 0)
        for bundles in stats.get("public/perf", {}).values()
        for topics in bundles.values()
        for topic_stats in topics.values()
    ]
    return len(consumers) >= 5 and sum(1 for c in consumers if c >= 1) >= 5


async def test_perf_produce_and_consume_account_for_every_message(broker_url: str) -> None:
    url = broker_url
    base = "persistent://public/perf/t"
    consume = asyncio.create_task(
        _cli("consume", base, "-u", url, "-t", "5", "-st", "Key_Shared", "-m", str(MESSAGES), "--json")
    )
    await eventually(
        lambda: _subscribed_topics(url), timeout=90, message="the consumer subscribed to the 5 topics"
    )
    code, out, err = await _cli(
        "produce",
        base,
        "-u",
        url,
        "-t",
        "5",
        "-r",
        "300",
        "-s",
        "64",
        "-m",
        str(MESSAGES),
        "--topic-skew",
        "zipf",
        "--key-skew",
        "zipf",
        "--num-keys",
        "50",
        "--seed",
        "1",
        "--json",
    )
    assert code == 0, err
    produced = json.loads(out)
    assert produced["topics"] == 5 and produced["sent"] == produced["acked"] == MESSAGES
    assert produced["unaccounted"] == 0 and produced["errored"] == 0
    assert set(produced["latencyMs"]) >= {"p50", "p99", "max"} and produced["longestPauseMs"] >= 0
    code, out, err = await consume
    assert code == 0, err
    consumed = json.loads(out)
    assert consumed["received"] == produced["acked"]  # nothing moved: every message delivered once
    assert consumed["topics"] == 5
    # the human summary (no --json): the accounting line and the pause
    code, out, err = await _cli("produce", base, "-u", url, "-r", "50", "-d", "1")
    assert code == 0, err
    assert "sent =" in out and "acked +" in out and "longest publish pause" in out


async def test_perf_reports_a_missing_namespace_as_an_error(broker_url: str) -> None:
    code, _out, err = await _cli("produce", "persistent://public/missing/t", "-u", broker_url, "-d", "1")
    assert code != 0 and "does not exist" in err


async def test_perf_takes_a_pulsar_url_as_pulsar_perf_does(standalone: StandaloneProcess) -> None:
    """``-u pulsar://host:port``: the binary protocol, through Pulsar's official client (it was refused:
    "Request URL has an unsupported protocol 'pulsar://'")."""
    binary = standalone.binary_urls[0]
    assert binary.startswith("pulsar://")
    base = "persistent://public/perf/binary"
    consume = asyncio.create_task(_cli("consume", base, "-u", binary, "-t", "2", "-m", "200", "--json"))
    url = standalone.urls[0]

    async def subscribed() -> bool:
        async with AsyncAdminClient(url) as admin:
            stats = await admin.get_topics_stats()
        names = [
            t for bundles in stats.get("public/perf", {}).values() for ts in bundles.values() for t in ts
        ]
        return sum(1 for t in names if t.startswith(base)) >= 2

    await eventually(subscribed, timeout=90, message="the binary consumers subscribed")
    code, out, err = await _cli("produce", base, "-u", binary, "-t", "2", "-r", "200", "-m", "200", "--json")
    assert code == 0, err
    produced = json.loads(out)
    assert produced["sent"] == produced["acked"] == 200 and produced["errored"] == 0
    code, out, err = await consume
    assert code == 0, err
    assert json.loads(out)["received"] == 200
