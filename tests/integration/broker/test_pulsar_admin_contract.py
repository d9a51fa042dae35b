"""pulsar-admin compatibility as a contract: docs/pulsar-admin.md's tables, run against a standalone.

Every row whose status is ``same``, ``different`` or ``brokerlb`` carries the command the test
runs (in the document's order, so a create comes before its delete); it must exit 0 and print
JSON (standard output is not a terminal here) or nothing. Every ``missing`` verb must be unknown
to ``brokerlb admin``, and every verb ``brokerlb admin`` has must be in the tables.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from brokerlb.admin import AsyncAdminClient
from brokerlb.cli.admin import app
from brokerlb.ring import NamespaceBundles
from brokerlb.testing.clusters import InProcessCluster

from .helpers import lookup_data

DOC = Path(__file__).resolve().parents[3] / "docs" / "pulsar-admin.md"
ROW = re.compile(
    r"^\| `(?P<group>[a-z-]+) (?P<verb>[A-Za-z-]+)` \| (?P<status>\w+) \| (?:`(?P<command>[^`]+)`)? \|"
)


@dataclass(frozen=True)
class Row:
    group: str
    verb: str
    status: str
    command: str | None


def rows() -> list[Row]:
    found = []
    for line in DOC.read_text().splitlines():
        m = ROW.match(line)
        if m:
            found.append(Row(m["group"], m["verb"], m["status"], m["command"]))
    return found


def test_the_tables_are_well_formed() -> None:
    table = rows()
    assert len(table) > 300, "every pulsar-admin verb of the groups is listed"
    assert {r.status for r in table} <= {"same", "different", "missing", "brokerlb"}
    for r in table:
        assert (r.command is None) == (r.status == "missing"), r
        if r.command:
            assert r.command.split()[:2] == [r.group, r.verb], r
    keys = [(r.group, r.verb) for r in table]
    assert len(keys) == len(set(keys)), "one row per verb"


def _registered() -> dict[tuple[str, str], bool]:
    """``(group, verb) -> hidden`` of every verb ``brokerlb admin`` has."""
    root = typer.main.get_command(app)
    out = {}
    for group_name, group in root.commands.items():  # type: ignore[attr-defined]
        for verb, command in group.commands.items():
            out[(group_name, verb)] = command.hidden
    return out


def test_missing_verbs_are_unknown_and_every_verb_is_listed() -> None:
    table = {(r.group, r.verb): r for r in rows()}
    registered = _registered()
    for key, row in table.items():
        if row.status == "missing":
            assert key not in registered, f"{' '.join(key)} exists: its row says missing"
            result = CliRunner().invoke(app, [*key, "--help"])
            assert result.exit_code == 2 and "No such command" in result.output, result.output
        else:
            assert key in registered, f"{' '.join(key)} is listed as {row.status} but does not exist"
    unlisted = [" ".join(k) for k, hidden in registered.items() if not hidden and k not in table]
    assert unlisted == [], f"verbs missing from docs/pulsar-admin.md: {unlisted}"


async def _fixtures(cluster: InProcessCluster) -> dict[str, str]:
    """The objects the rows' commands name (``{ns}``, ``{topic}``, ``{bundle}`` ...)."""
    url = cluster.urls[0]
    tenant = f"adm-{uuid.uuid4().hex[:8]}"
    ns, merge_ns = f"{tenant}/app", f"{tenant}/merge"
    topic, ptopic, gone = (f"persistent://{ns}/{name}" for name in ("t", "p", "gone"))
    async with AsyncAdminClient(url) as admin:
        cluster_name = (await admin.get_clusters())[0]
        await admin.create_tenant(tenant, allowed_clusters=[cluster_name], admin_roles=[])
        await admin.create_namespace(ns, num_bundles=4)
        await admin.create_namespace(merge_ns, num_bundles=2)
        await admin.create_topic(topic)
        await admin.create_topic(gone)
        await admin.create_partitioned_topic(ptopic, 2)
        broker = cluster.broker_ids[0]
        await admin.set_failure_domain(cluster_name, "rack-a", [broker])
        ring = NamespaceBundles.create(ns, 4)
        bundle = ring.find_bundle(topic)
        # a topic of another bundle, so that bundle is owned and can be split
        other = next(
            t for t in (f"persistent://{ns}/s-{i}" for i in range(100)) if ring.find_bundle(t) != bundle
        )
        owners = await lookup_data(url, [topic, other, f"persistent://{merge_ns}/m"])
        owner_url = owners[topic]["httpUrl"].rstrip("/")
        owner = next(
            b for b, u in zip(cluster.broker_ids, cluster.urls, strict=True) if u.rstrip("/") == owner_url
        )
    return {
        "tenant": tenant,
        "cluster": cluster_name,
        "ns": ns,
        "merge_ns": merge_ns,
        "topic": topic,
        "ptopic": ptopic,
        "deleted_topic": gone,
        "bundle": bundle.range,
        "split_bundle": ring.find_bundle(other).range,
        "broker": broker,
        "broker2": cluster.broker_ids[1],
        "broker_regex": re.escape(broker),
        "other_broker": next(b for b in cluster.broker_ids if b != owner),
    }


@pytest.mark.asyncio(loop_scope="package")
async def test_every_listed_verb_runs_against_a_standalone_and_answers_json() -> None:
    cluster = await InProcessCluster(2).start()
    try:
        values = await _fixtures(cluster)
        runner = CliRunner()
        ran = 0
        for row in rows():
            if row.command is None:
                continue
            argv = ["--admin-url", cluster.urls[0], *row.command.format(**values).split()]
            result = await asyncio.to_thread(runner.invoke, app, argv, env={"COLUMNS": "200"})
            assert result.exit_code == 0, f"{row.command}: exit {result.exit_code}\n{result.output}"
            text = result.stdout.strip()
            if text:
                try:
                    json.loads(text)
                except ValueError:
                    raise AssertionError(f"{row.command}: not JSON when piped:\n{text}") from None
            ran += 1
        assert ran == sum(1 for r in rows() if r.command)
    finally:
        await cluster.stop()
