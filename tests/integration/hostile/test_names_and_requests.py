"""Names and requests a client cannot use to grow a broker process, on every protocol.

The probes of issue 30: 2,000 lookups of 20,000-character topic names added 144 MB; a 4 MB topic name
was accepted on the binary protocol (``/metrics`` then 32 MB a scrape); names with NUL or CR/LF were
stored; one request for 1,000,000 partitions took a broker to 4.4 GB (100,000: 65.6 s and +400 MB);
1,500 lookups answered 401 still added 110 MB (every path was parsed and cached before the token was
checked). Bystanders (HTTP lookups, binary produce round trips) are served during each probe.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from brokerlb.messaging.wire import (
    CommandError,
    CommandLookupTopic,
    CommandLookupTopicResponse,
    CommandProducer,
    ServerError,
)
from brokerlb.security.tokens import create_secret_key
from brokerlb.testing.hostile import MB, Bystanders, RawConnection, rss_bytes, token_auth_settings
from brokerlb.testing.standalone_process import StandaloneProcess

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

GUARD = 120.0
SECRET = create_secret_key()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def broker() -> AsyncIterator[StandaloneProcess]:
    async with StandaloneProcess(1) as process:
        yield process


async def _many(count: int, request: object, parallel: int = 8) -> list[int]:
    """``count`` calls of ``request(i)`` (an awaitable of a status), ``parallel`` at a time."""
    statuses: list[int] = []
    todo = iter(range(count))

    async def worker() -> None:
        for i in todo:
            statuses.append(await request(i))  # type: ignore[operator]

    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(parallel))), GUARD)
    return statuses


async def test_lookups_of_very_long_names_are_refused_before_anything_is_kept(
    broker: StandaloneProcess, bystanders: Bystanders
) -> None:
    assert broker.process is not None
    pid = broker.process.pid
    before = rss_bytes(pid)
    async with httpx.AsyncClient(base_url=broker.urls[0], timeout=GUARD) as http:

        async def lookup(i: int) -> int:
            name = f"{i:05d}" + "x" * 20_000
            return (await http.get(f"/lookup/v2/topic/persistent/public/default/{name}")).status_code

        statuses = await _many(2000, lookup)
        answer = await http.get("/lookup/v2/topic/persistent/public/default/" + "y" * 20_000)
        await bystanders.serve_more()
        metrics = await http.get("/metrics")
    grown = rss_bytes(pid) - before
    print(f"2,000 lookups of 20,000-character names: RSS {before / MB:.1f} -> +{grown / MB:.1f} MB")
    assert set(statuses) == {412}, sorted(set(statuses))
    assert "brokerlbMaxNameLength" in answer.json()["reason"]
    assert grown < 20 * MB
    assert len(metrics.content) < MB


async def test_binary_commands_with_huge_or_control_character_names_are_refused(
    broker: StandaloneProcess, bystanders: Bystanders
) -> None:
    assert broker.process is not None
    pid = broker.process.pid
    raw = await RawConnection.open(broker.binary_urls[0], source="127.0.0.40")
    before = rss_bytes(pid)
    huge = "persistent://public/default/" + "z" * (4 * MB)
    for request in range(1, 11):
        raw.send(CommandProducer(huge, request, request))
        answer = await raw.next()
        assert isinstance(answer, CommandError) and answer.error == ServerError.InvalidTopicName, answer
        assert "brokerlbMaxNameLength" in answer.message and len(answer.message) < 1000
    raw.send(CommandLookupTopic(huge, 99))
    lookup = await raw.next()
    assert isinstance(lookup, CommandLookupTopicResponse) and lookup.response == 2, lookup
    for n, bad in enumerate(["with\x00nul", "with\r\nheader", "tab\there"]):
        raw.send(CommandProducer(f"persistent://public/default/{bad}", 100 + n, 100 + n))
        answer = await raw.next()
        assert isinstance(answer, CommandError) and "control character" in answer.message, answer
    await bystanders.serve_more()
    grown = rss_bytes(pid) - before
    print(f"10 PRODUCERs of a 4 MB topic name: +{grown / MB:.1f} MB")
    assert grown < 30 * MB
    async with httpx.AsyncClient(base_url=broker.urls[0], timeout=GUARD) as http:
        metrics = (await http.get("/metrics")).text
        lookup_crlf = await http.get("/lookup/v2/topic/persistent/public/default/a%0D%0Ab")
    assert "zzzzzzzzzz" not in metrics and "with\x00nul" not in metrics
    assert lookup_crlf.status_code == 412 and "control character" in lookup_crlf.json()["reason"]
    raw.close()


async def test_a_partitioned_topic_beyond_the_limit_is_refused_at_once(
    broker: StandaloneProcess, bystanders: Bystanders
) -> None:
    assert broker.process is not None
    pid = broker.process.pid
    before = rss_bytes(pid)
    async with httpx.AsyncClient(base_url=broker.urls[0], timeout=GUARD) as http:
        base = "/admin/v2/persistent/public/default"
        name = f"at-the-limit-{uuid.uuid4().hex[:8]}"
        refused = await http.put(f"{base}/million/partitions", json=1_000_000)
        await bystanders.serve_more()
        created = await http.put(f"{base}/{name}/partitions", json=4096)
        await bystanders.serve_more()
        metadata = (await http.get(f"{base}/{name}/partitions")).json()
    grown = rss_bytes(pid) - before
    print(f"1,000,000 partitions refused, 4,096 created: +{grown / MB:.1f} MB")
    assert refused.status_code == 406, refused.text
    assert "maxNumPartitionsPerPartitionedTopic" in refused.json()["reason"]
    assert created.status_code == 204, created.text
    assert metadata == {"partitions": 4096}
    assert grown < 60 * MB


# --------------------------------------------------------------------------- authentication first


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def secured() -> AsyncIterator[StandaloneProcess]:
    settings = token_auth_settings(SECRET)
    async with StandaloneProcess(1, settings) as process:
        yield process


async def test_unauthenticated_lookups_are_refused_before_their_paths_are_parsed_or_kept(
    secured: StandaloneProcess,
) -> None:
    assert secured.process is not None
    pid = secured.process.pid
    async with httpx.AsyncClient(base_url=secured.urls[0], timeout=GUARD) as http:
        # warm up: the paths' code and the connection pool exist before the measurement
        await _many(200, lambda i: _status(http, f"/lookup/v2/topic/persistent/public/default/warm-{i}"))
        before = rss_bytes(pid)

        async def lookup(i: int) -> int:  # distinct names within the bound: before, each was cached
            return await _status(http, f"/lookup/v2/topic/persistent/public/default/{i:06d}{'n' * 240}")

        statuses = await _many(20_000, lookup)
        grown = rss_bytes(pid) - before
    print(f"20,000 unauthenticated lookups of distinct 246-character names: +{grown / MB:.1f} MB")
    assert set(statuses) == {401}
    assert grown < 8 * MB


async def _status(http: httpx.AsyncClient, path: str) -> int:
    return (await http.get(path)).status_code
