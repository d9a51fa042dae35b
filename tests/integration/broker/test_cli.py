"""The command line: ``brokerlb admin`` against a live cluster, ``brokerlb standalone`` started and
stopped with Ctrl-C, and the lookup semaphore."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import pytest

from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.zookeeper import free_port

from .helpers import lookup_many, new_namespace, topics_of

pytestmark = pytest.mark.asyncio(loop_scope="package")


async def brokerlb(*args: str, timeout: float = 60) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "brokerlb.cli.main",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "COLUMNS": "200"},
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_admin_cli_against_a_live_cluster() -> None:
    cluster = await InProcessCluster(2).start()
    try:
        url = cluster.urls[1]
        ns = new_namespace("cli")
        code, out, _ = await brokerlb(
            "admin", "--url", url, "--table", "namespaces", "create", ns, "--bundles", "4"
        )
        assert code == 0 and f"created {ns}" in out
        code, out, _ = await brokerlb("admin", "--url", url, "--json", "namespaces", "bundles", ns)
        assert json.loads(out)["numBundles"] == 4
        code, out, _ = await brokerlb(
            "admin", "--url", url, "--json", "topics", "lookup", f"persistent://{ns}/a"
        )
        assert json.loads(out) in cluster.binary_urls  # pulsar-admin's answer: the pulsar:// URL
        code, out, _ = await brokerlb(
            "admin", "--url", url, "topics", "create-partitioned-topic", f"persistent://{ns}/p", "-p", "3"
        )
        assert code == 0
        code, out, _ = await brokerlb(
            "admin", "--url", url, "--json", "topics", "partitioned-lookup", f"persistent://{ns}/p"
        )
        assert sorted(json.loads(out)) == [f"persistent://{ns}/p-partition-{i}" for i in range(3)]
        code, out, _ = await brokerlb("admin", "--url", url, "topics", "bundle-range", f"persistent://{ns}/a")
        bundle = json.loads(out)  # not a terminal: JSON
        assert bundle.startswith("0x")
        code, out, _ = await brokerlb("admin", "--url", url, "namespaces", "split-bundle", ns, "-b", bundle)
        assert code == 0
        code, out, _ = await brokerlb("admin", "--url", url, "--json", "brokers", "list")
        assert sorted(json.loads(out)) == sorted(cluster.broker_ids)
        code, out, _ = await brokerlb("admin", "--admin-url", url, "brokers", "leader-broker")
        assert json.loads(out)["brokerId"] in cluster.broker_ids
        code, out, _ = await brokerlb(
            "admin", "--url", url, "brokers", "namespaces", "e2e", "--url", url.split("://")[1]
        )
        assert all(s["is_active"] for s in json.loads(out).values())
        code, out, _ = await brokerlb("admin", "--url", url, "--json", "broker-stats", "load-report")
        assert json.loads(out)["webServiceUrl"] == url
        code, out, _ = await brokerlb(
            "admin", "--url", url, "namespaces", "set-anti-affinity-group", ns, "-g", "g1"
        )
        assert code == 0
        # errors: one red line, non-zero exit, no traceback
        code, _, err = await brokerlb(
            "admin",
            "--url",
            url,
            "namespaces",
            "split-bundle",
            ns,
            "-b",
            bundle,
            "--split-algorithm-name",
            "magic",
        )
        assert code == 1 and "412" in err and "Unsupported namespace bundle split algorithm" in err
        assert "Traceback" not in err
        code, _, err = await brokerlb("admin", "--url", "http://127.0.0.1:9", "brokers", "list")
        assert code == 1 and "failed" in err
    finally:
        await cluster.stop()


async def test_standalone_starts_fast_and_ctrl_c_stops_it_cleanly(tmp_path) -> None:
    port = free_port(count=3)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "brokerlb.cli.main",
        "standalone",
        "--brokers",
        "3",
        "--web-port",
        str(port),
        "--metadata-store",
        "memory:cli-test",
        "--data-dir",
        str(tmp_path / "data"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        lines = []
        while not any("standalone cluster" in line for line in lines):
            line = await asyncio.wait_for(proc.stdout.readline(), 60)  # type: ignore[union-attr]
            assert line, "".join(lines)
            lines.append(line.decode())
        answers = await lookup_many(f"http://127.0.0.1:{port + 2}", ["persistent://pulsar/x/t"])
        assert {r.status_code for r in answers.values()} == {404}  # namespace pulsar/x does not exist
        proc.send_signal(signal.SIGINT)
        rest = (await asyncio.wait_for(proc.stdout.read(), 30)).decode()  # type: ignore[union-attr]
        assert await asyncio.wait_for(proc.wait(), 30) == 0, rest
        assert "Traceback" not in rest
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_lookup_semaphore_answers_503_at_once_when_exhausted() -> None:
    cluster = await InProcessCluster(2, {"maxConcurrentLookupRequest": 1}).start()
    try:
        ns = new_namespace("sem")
        from brokerlb.admin import AsyncAdminClient

        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(ns, num_bundles=64)
        answers = await lookup_many(cluster.urls[0], topics_of(ns, 200), concurrency=32)
        codes = {r.status_code for r in answers.values()}
        assert 503 in codes and codes <= {200, 503}
        busy = next(r for r in answers.values() if r.status_code == 503)
        assert "too many pending lookup requests" in busy.json()["reason"]
        assert busy.headers.get("retry-after") == "1"
    finally:
        await cluster.stop()
