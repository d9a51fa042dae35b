"""``brokerlb admin`` prints tables on a terminal and JSON when piped (pulsar-admin runbooks pipe
its output to ``jq``): the same command run under a pseudo-terminal of 80 columns and through a
pipe, as separate processes against a live cluster."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.testing.clusters import InProcessCluster

from .helpers import new_namespace

pytestmark = pytest.mark.asyncio(loop_scope="package")

#: colours and styles a terminal gets
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
COMMAND = [sys.executable, "-m", "brokerlb.cli.main", "admin"]


def _on_a_terminal(args: list[str], columns: int = 80) -> str:
    """Run the command with a pseudo-terminal as stdin/stdout/stderr; everything it printed."""
    primary, secondary = os.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "50", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(
        [*COMMAND, *args], stdin=secondary, stdout=secondary, stderr=secondary, env=env, close_fds=True
    )
    os.close(secondary)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: the terminal's other end closed
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(primary)
        assert process.wait(timeout=120) == 0, b"".join(chunks).decode(errors="replace")
    return ANSI.sub("", b"".join(chunks).decode())


def _piped(args: list[str]) -> str:
    done = subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


async def test_tables_on_a_terminal_json_through_a_pipe() -> None:
    cluster = await InProcessCluster(2).start()
    try:
        url = cluster.urls[0]
        ns = new_namespace("tty")
        async with AsyncAdminClient(url) as admin:
            await admin.create_namespace(ns, num_bundles=4)
        for args in (["brokers", "list"], ["namespaces", "bundles", ns], ["brokers", "leader-broker"]):
            argv = ["--admin-url", url, *args]
            table = await asyncio.to_thread(_on_a_terminal, argv)
            with pytest.raises(ValueError):
                json.loads(table)
            assert "┃" in table or "│" in table, table  # a rich table's borders
            lines = table.replace("\r", "").splitlines()
            assert max(len(line) for line in lines) <= 80, table
            data = json.loads(await asyncio.to_thread(_piped, argv))
            if args[0:2] == ["brokers", "list"]:
                assert sorted(data) == sorted(cluster.broker_ids)
                assert all(b in table for b in cluster.broker_ids)
            elif args[0:2] == ["namespaces", "bundles"]:
                assert data["numBundles"] == 4 and "0x40000000_0x80000000" in table
            else:
                assert data["brokerId"] in cluster.broker_ids and data["brokerId"] in table
        # --json on a terminal, --table through a pipe
        forced = await asyncio.to_thread(_on_a_terminal, ["--admin-url", url, "--json", "brokers", "list"])
        assert sorted(json.loads(forced)) == sorted(cluster.broker_ids)
        piped_table = await asyncio.to_thread(_piped, ["--admin-url", url, "--table", "brokers", "list"])
        assert "│" in piped_table
    finally:
        await cluster.stop()
