"""recommend: a plan that splits hot bundles with hot topics alone, from topic-level history; the CLI."""

from __future__ import annotations

import json

import pytest

from brokerlb.cli.main import main
from brokerlb.pipeline.advisor import AdvisorOptions, BundleLimits
from brokerlb.plan import Plan, SplitOp, UnloadOp
from brokerlb.ring import NamespaceBundles, topic_hash
from brokerlb.testing import assert_ring_covers_keyspace
from tests.pipeline.conftest import HOT_TOPIC

pytestmark = pytest.mark.spark

LIMITS = BundleLimits(max_msg_rate=5_000)  # the hot topic alone fills a bundle


def latest_layouts(history) -> dict[str, NamespaceBundles]:
    out = {}
    for layout in sorted(history.layouts, key=lambda lay: lay.timestamp):
        out[layout.namespace] = layout.bundles()
    return out


def test_hot_bundle_split_isolates_the_hot_topic_and_the_plan_fits_the_layout(spark, history):
    from brokerlb.pipeline.recommend import recommend

    plan = recommend(spark, str(history.warehouse), limits=LIMITS, created_at=1)
    layouts = latest_layouts(history)
    hot_bundle = layouts["t/other"].find_bundle(HOT_TOPIC)
    splits = [op for op in plan.operations if isinstance(op, SplitOp)]
    (split,) = [op for op in splits if op.namespace == "t/other" and op.bundle == hot_bundle.range]
    (alone,) = [child for child in split.expected if child["topics"] == 1 and child["msgRate"] == 5_000.0]
    lo, hi = (int(x, 16) for x in alone["range"].split("_"))
    assert lo <= topic_hash(HOT_TOPIC) < hi
    assert all(child["msgRate"] <= 0.8 * 5_000 + 1e-6 for child in split.expected if child is not alone)
    after = plan.apply_to({ns: layouts[ns] for ns in ("t/ns", "t/other")})
    for layout in after.values():
        assert_ring_covers_keyspace(layout)
    advice = {a["namespace"]: a for a in plan.advice}
    assert set(advice) == {"t/ns", "t/other"}
    assert advice["t/other"]["hotBundles"] >= 1 and advice["t/other"]["bundlesAfterPlan"] == len(
        after["t/other"]
    )
    assert (
        plan.source["statistic"] == "mean"
        and plan.source["limits"]["loadBalancerNamespaceBundleMaxMsgRate"] == 5_000
    )
    assert Plan.from_json(json.loads(json.dumps(plan.to_json()))) == plan
    # the children are placed: the splits keep them, transfers move some to the lightest brokers
    # the brokers the warehouse knows: those that served topics and those that reported (the fixture's
    # reports and topic dumps come from separate generators, with brokers of their own)
    tables = history.warehouse
    brokers = {
        r[0] for r in spark.read.parquet(str(tables / "topic_samples")).select("broker").distinct().collect()
    }
    brokers |= {
        r[0]
        for r in spark.read.parquet(str(tables / "broker_samples")).select("brokerId").distinct().collect()
    }
    transfers = [op for op in plan.operations if isinstance(op, UnloadOp)]
    assert all(not op.unload for op in splits) and transfers
    children = {(op.namespace, child) for op in splits for child in op.children}
    assert all((t.namespace, t.bundle) in children and t.destination_broker in brokers for t in transfers), (
        transfers,
        children,
        brokers,
    )
    kinds = [op.op for op in plan.operations]
    assert kinds == sorted(kinds, key=["split", "unload", "merge"].index)  # splits, transfers, merges
    unplaced = recommend(
        spark, str(history.warehouse), limits=LIMITS, created_at=1, options=AdvisorOptions(place=False)
    )
    assert not [op for op in unplaced.operations if isinstance(op, UnloadOp)]
    assert all(op.unload for op in unplaced.operations if isinstance(op, SplitOp))


def test_default_limits_find_nothing_hot_and_statistic_max(spark, history):
    from brokerlb.pipeline.recommend import recommend

    plan = recommend(spark, str(history.warehouse), statistic="max")
    assert not [op for op in plan.operations if isinstance(op, SplitOp)]
    assert all(a["hotBundles"] == 0 for a in plan.advice)
    # the floor: the history's 4 brokers; no namespace is advised fewer bundles than they can share
    assert plan.source["options"]["brokers"] == 4
    for advice in plan.advice:
        if "currentBundles" in advice:
            assert advice["floor"] == 4 and advice["advisedBundles"] >= 4
            assert advice["bundlesAfterPlan"] >= min(4, advice["currentBundles"]), advice


def test_cli_recommend_writes_a_plan(spark, history, tmp_path, capsys):
    out = tmp_path / "plan.json"

    def run(*flags: str) -> tuple[dict, Plan]:
        argv = ["pipeline", "recommend", "--warehouse", str(history.warehouse), "--out", str(out)]
        argv += ["--set", "loadBalancerNamespaceBundleMaxMsgRate=5000", "--until", "2023-11-14T22:30:00"]
        with pytest.raises(SystemExit) as exit_:
            main([*argv, *flags])
        assert exit_.value.code == 0
        return json.loads(capsys.readouterr().out), Plan.load(out)

    summary, plan = run()
    assert summary["splits"] >= 1 and summary["plan"] == str(out)
    assert plan.source["window"]["until"] == 1_700_001_000_000
    assert summary["transfers"] == sum(1 for op in plan.operations if isinstance(op, UnloadOp)) > 0
    # the switches reach the options by name (--no-unload was once passed as the broker count, ignored)
    for flag, unload in (("--no-placement", True), ("--no-unload", False)):
        summary, switched = run(flag)
        assert summary["transfers"] == 0 and switched.source["options"]["unload"] is unload
        assert all(op.unload is unload for op in switched.operations if isinstance(op, SplitOp))
    with pytest.raises(SystemExit) as exit_:
        main(["pipeline", "recommend", "--warehouse", str(history.warehouse), "--statistic", "median"])
    assert exit_.value.code == 2
    assert spark.range(1).count() == 1  # the CLI left the test's session running
