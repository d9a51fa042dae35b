"""``brokerlb plan apply`` against a real broker cluster (in process, real HTTP): split, merge, unload land."""

from __future__ import annotations

import asyncio

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.broker.data.synthetic import SyntheticClients
from brokerlb.broker.data.topics import TopicStats
from brokerlb.plan import MergeOp, Plan, SplitOp, UnloadOp
from brokerlb.plan.apply import apply_plan
from brokerlb.ring import NamespaceBundles, topic_hash
from brokerlb.testing.clusters import InProcessCluster

pytestmark = pytest.mark.asyncio(loop_scope="function")

NS = "public/plan-apply"


async def test_a_recommended_style_plan_is_applied_by_the_brokers() -> None:
    cluster = await InProcessCluster(2).start()
    try:
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(NS, num_bundles=4)
        layout = NamespaceBundles.create(NS, 4)
        first = layout.bundles[0]
        topics = [t for t in (f"persistent://{NS}/t{i}" for i in range(200)) if first.includes(t)][:6]
        clients = SyntheticClients(cluster.services)
        await clients.add_many({t: TopicStats(msg_rate_in=10) for t in topics})
        hashes = sorted(topic_hash(t) for t in topics)
        cut = hashes[2] + (hashes[3] - hashes[2]) // 2 + 1
        plan = Plan(
            (
                SplitOp(NS, first.range, (cut,), unload=False),
                MergeOp(NS, (layout.bundles[2].range, layout.bundles[3].range)),
                UnloadOp(NS, layout.bundles[1].range),
            )
        )
        report = await asyncio.to_thread(apply_plan, plan, cluster.urls[-1])
        assert report.ok, report.to_json()
        assert [r.status for r in report.results] == ["applied", "applied", "applied"]
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            bundles = await admin.get_bundles(NS)
        assert bundles["boundaries"] == [
            "0x00000000",
            f"0x{cut:08x}",
            "0x40000000",
            "0x80000000",
            "0xffffffff",
        ]
        stale = await asyncio.to_thread(apply_plan, plan, cluster.urls[0])
        assert stale.results[0].status == "skipped" and not stale.ok
        await clients.close()
    finally:
        await cluster.stop()


async def test_plan_apply_shows_progress_on_a_terminal_and_is_quiet_with_json(tmp_path) -> None:
    import json

    from brokerlb.testing.terminal import run_with_terminal_stderr

    cluster = await InProcessCluster(2).start()
    try:
        ns = "public/plan-progress"
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(ns, num_bundles=4)
        layout = NamespaceBundles.create(ns, 4)
        plan_file = tmp_path / "plan.json"
        plan_file.write_text(json.dumps(Plan(tuple(UnloadOp(ns, b.range) for b in layout.bundles)).to_json()))
        args = ["-m", "brokerlb.cli.main", "plan", "apply", str(plan_file), "--url", cluster.urls[1]]
        code, out, terminal = await asyncio.to_thread(run_with_terminal_stderr, args)
        assert code == 0, terminal + out
        assert "4/4" in terminal and "operations" in terminal and "━" in terminal
        assert out.count("applied") == 4
        code, out, terminal = await asyncio.to_thread(run_with_terminal_stderr, [*args, "--json"])
        assert code == 0 and terminal.strip() == ""
        assert json.loads(out)["ok"] is True
    finally:
        await cluster.stop()
