"""A broker frozen past its session must not answer "I own it" when it resumes.

The finding: a broker SIGSTOPped longer than its session timeout, whose bundles other brokers took
meanwhile, answered lookups queued to it "I own it" for 100-200 ms after it resumed (it answered
from its ownership cache before the notification of its lost session reached it). Reproduced here
on a real ZooKeeper with real broker processes: lookups of its topics are queued on its socket
while it is frozen; after SIGCONT none of the answers may name it as the owner, and its topics'
owners as the store has them are other brokers.
"""

from __future__ import annotations

import asyncio
import os
import signal
import uuid

import httpx
import pytest

from brokerlb.naming import TopicName
from brokerlb.testing.clusters import ProcessCluster
from brokerlb.testing.waiting import eventually

pytestmark = [pytest.mark.zookeeper, pytest.mark.slow]

SESSION_MS = 3000


async def _lookup(client: httpx.AsyncClient, url: str, topic: str) -> httpx.Response | Exception:
    try:
        return await client.get(f"{url}/lookup/v2/topic/{TopicName.parse(topic).lookup_name}")
    except httpx.HTTPError as exc:
        return exc


async def _send_lookup(url: str, topic: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    path = f"/lookup/v2/topic/{TopicName.parse(topic).lookup_name}"
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    return reader, writer  # the writer must live: dropping it closes the connection


async def _read_answer(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> tuple[int, str]:
    reader, writer = conn
    raw = (await reader.read()).decode(errors="replace")
    writer.close()
    status = int(raw.split(" ", 2)[1]) if raw.startswith("HTTP/") else -1
    return status, raw.partition("\r\n\r\n")[2]


async def test_a_resumed_broker_does_not_answer_for_bundles_taken_while_it_was_frozen(zk_server) -> None:
    cluster = await ProcessCluster(
        f"zk:{zk_server.hosts}/stale-{uuid.uuid4().hex[:8]}",
        3,
        {"metadataStoreSessionTimeoutMillis": SESSION_MS, "defaultNumberOfNamespaceBundles": 8},
    ).start()
    namespace = f"public/stale-{uuid.uuid4().hex[:6]}"
    topics = [f"persistent://{namespace}/t-{i}" for i in range(40)]
    paused = cluster.processes[2]
    target = cluster.urls[2]
    try:
        async with httpx.AsyncClient(timeout=30, follow_redirects=True) as client:
            created = await client.put(f"{cluster.urls[0]}/admin/v2/namespaces/{namespace}")
            assert created.status_code == 204, created.text
            first = {t: (await _lookup(client, cluster.urls[0], t)) for t in topics}
            theirs = [
                t for t, r in first.items() if isinstance(r, httpx.Response) and r.json()["httpUrl"] == target
            ]
            assert theirs, "broker 2 owns none of the topics; pick more topics"

            before = await _read_answer(await _send_lookup(target, theirs[0]))
            assert before[0] == 200 and f'"httpUrl":"{target}"' in before[1], before
            os.kill(paused.pid, signal.SIGSTOP)
            try:
                # the others take broker 2's bundles once its session expired
                async def moved() -> bool:
                    answers = [await _lookup(client, cluster.urls[0], t) for t in theirs]
                    return all(
                        isinstance(r, httpx.Response)
                        and r.status_code == 200
                        and r.json()["httpUrl"] != target
                        for r in answers
                    )

                await eventually(moved, timeout=60, interval=0.2, message="broker 2's bundles taken over")
                # lookups queued on the frozen broker's socket (written to the kernel before SIGCONT)
                queued = [await _send_lookup(target, t) for t in (theirs * 4)[:40]]
            finally:
                os.kill(paused.pid, signal.SIGCONT)
            answers = await asyncio.gather(*(_read_answer(conn) for conn in queued))
        stale = [a for a in answers if a[0] == 200 and f'"httpUrl":"{target}"' in a[1].replace(" ", "")]
        assert answers and stale == [], (
            f"{len(stale)} of {len(answers)} answers named the resumed broker as the owner"
        )
    finally:
        await cluster.stop()
