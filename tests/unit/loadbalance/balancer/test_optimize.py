"""``brokerlb plan optimize``: the balancer offline, as a plan ``brokerlb plan apply`` runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brokerlb.cli.main import build_app
from brokerlb.plan import Plan, UnloadOp

EXAMPLES = Path(__file__).parents[4] / "examples" / "snapshots"
THREE = EXAMPLES / "balancer-three-brokers.json"
runner = CliRunner()


def optimize(*args: str):
    return runner.invoke(build_app(), ["plan", "optimize", "--snapshot", str(THREE), *args])


def plan_of(result) -> Plan:
    assert result.exit_code == 0, result.output
    return Plan.from_json(json.loads(result.stdout))


def test_worked_example_is_a_plan_of_two_transfers_in_one_wave() -> None:
    plan = plan_of(optimize())
    assert [(op.namespace, op.bundle, op.destination_broker) for op in plan.operations] == [
        ("t/a", "0x00000000_0x40000000", "b3:8080"),
        ("t/a", "0x40000000_0x80000000", "b3:8080"),
    ]
    assert all(isinstance(op, UnloadOp) and op.reason.startswith("wave 1:") for op in plan.operations)
    source = plan.source
    assert source["job"] == "optimize" and source["strategy"] == "brokerlb"
    assert (source["busiestBefore"], source["busiestAfter"], source["waves"]) == (0.8, 0.62, 1)
    assert plan.created_at == 1_700_000_000_000


def test_concurrency_caps_spread_the_moves_over_waves() -> None:
    plan = plan_of(optimize("--set", "brokerlbBalancerMaxMovesPerBrokerPerCycle=1"))
    assert [op.reason.split(":")[0] for op in plan.operations] == ["wave 1", "wave 2"]
    assert plan.source["waves"] == 2


def test_target_and_max_moves() -> None:
    # 0.80 <= 1.5 x 0.60, and 0.40 >= 0.5 x 0.60: every broker inside the band, nothing to do
    wide = plan_of(optimize("--target", "1.5", "--set", "brokerlbBalancerUnderloadTolerance=0.5"))
    assert wide.operations == () and wide.source["targetUpper"] == pytest.approx(0.9)
    assert len(plan_of(optimize("--max-moves", "1")).operations) == 1
    bad = optimize("--target", "0.5")
    assert bad.exit_code == 2 and "--target 0.5" in bad.output


def test_exact_oracle_gives_the_least_moved_throughput() -> None:
    pytest.importorskip("highspy")
    plan = plan_of(optimize("--exact"))
    assert plan.source["exact"] is True and plan.source["movedMbytes"] == pytest.approx(18.0)
    assert plan.source["lowestReachable"] == pytest.approx(0.62)


def test_dry_run_by_default_and_execute_needs_a_url(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    written = optimize("--out", str(out))
    assert written.exit_code == 0 and "2 moves in 1 wave(s)" in written.output
    applied = runner.invoke(
        build_app(), ["plan", "apply", str(out), "--url", "http://127.0.0.1:9", "--dry-run"]
    )
    assert applied.exit_code == 0 and "destinationBroker=b3:8080" in applied.output
    refused = optimize("--execute")
    assert refused.exit_code == 2 and "--url" in refused.output


def test_brokerlb_is_a_strategy_of_plan_shed() -> None:
    result = runner.invoke(
        build_app(),
        ["plan", "shed", "--snapshot", str(EXAMPLES / "skewed-cluster.json"), "--strategy", "brokerlb"],
    )
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["strategy"] == "brokerlb.loadbalance.balancer.Balancer"
    assert answer["merge"] == [] and "balancedLoad" in answer["stats"]
    assert all(u["destination"] for u in answer["unload"] if u["label"] == "Success")
