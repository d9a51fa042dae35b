"""Decisions are data: labels, reasons and their JSON."""

from brokerlb.loadbalance import (
    Label,
    MergeDecision,
    PlacementDecision,
    Reason,
    SheddingResult,
    SplitDecision,
    SplitResult,
    UnloadDecision,
)
from brokerlb.loadbalance.decisions import SPLIT_REASONS, UNLOAD_REASONS


def test_reason_values_are_pulsar_names() -> None:
    assert {r.value for r in UNLOAD_REASONS} == {
        "Overloaded",
        "Underloaded",
        "Balanced",
        "NoBundles",
        "CoolDown",
        "OutDatedData",
        "NoLoadData",
        "NoBrokers",
        "Unknown",
        "Admin",
        "HitCount",
    }
    assert {r.value for r in SPLIT_REASONS} == {
        "Topics",
        "Sessions",
        "MsgRate",
        "Bandwidth",
        "Admin",
        "Balanced",
        "Unknown",
    }
    assert [label.value for label in Label] == ["Success", "Skip", "Failure"]


def test_unload_decision_json_has_the_output_fields() -> None:
    d = UnloadDecision(
        "b1:8080",
        "t/ns/0x00000000_0x80000000",
        "b2:8080",
        Label.SUCCESS,
        Reason.OVERLOADED,
        "usage 0.9 > 0.85",
    )
    assert d.to_json() == {
        "broker": "b1:8080",
        "bundle": "t/ns/0x00000000_0x80000000",
        "destination": "b2:8080",
        "label": "Success",
        "reason": "Overloaded",
        "detail": "usage 0.9 > 0.85",
    }
    assert d.is_unload


def test_skip_and_failure_are_not_unloads() -> None:
    skip = UnloadDecision.skip(Reason.COOL_DOWN, "wait")
    failure = UnloadDecision.failure(Reason.NO_DESTINATION, broker="b1", bundle="x/y/0x0_0x1")
    assert (skip.label, skip.broker, skip.bundle, skip.is_unload) == (Label.SKIP, None, None, False)
    assert (failure.label, failure.is_unload) == (Label.FAILURE, False)
    result = SheddingResult.of(
        [skip, failure, UnloadDecision("b1", "x/y/0x0_0x1", reason=Reason.OVERLOADED)], {"avg": 0.5}
    )
    assert [d.bundle for d in result.unloads] == ["x/y/0x0_0x1"]
    assert result.to_json()["stats"] == {"avg": 0.5}
    assert [u["label"] for u in result.to_json()["unload"]] == ["Skip", "Failure", "Success"]


def test_split_decision_writes_boundaries_as_pulsar_hex() -> None:
    d = SplitDecision(
        "t/ns/0x00000000_0xffffffff", (0x7FFFFFFF,), Label.SUCCESS, Reason.TOPICS, "1001 > 1000"
    )
    assert d.to_json() == {
        "bundle": "t/ns/0x00000000_0xffffffff",
        "boundaries": ["0x7fffffff"],
        "label": "Success",
        "reason": "Topics",
        "detail": "1001 > 1000",
    }
    result = SplitResult.of([d, SplitDecision("a/b/0x0_0x1", (), Label.SKIP, Reason.SINGLE_TOPIC)])
    assert result.splits == [d]


def test_placement_decision_label_follows_broker() -> None:
    chosen = PlacementDecision("t/ns/0x00000000_0xffffffff", "b2", ("b1", "b2"), Reason.SELECTED)
    none = PlacementDecision("t/ns/0x00000000_0xffffffff", None, (), Reason.NO_BROKERS, "no broker available")
    assert chosen.to_json()["label"] == "Success" and chosen.to_json()["candidates"] == ["b1", "b2"]
    assert none.to_json() == {
        "bundle": "t/ns/0x00000000_0xffffffff",
        "broker": None,
        "candidates": [],
        "label": "Failure",
        "reason": "NoBrokers",
        "detail": "no broker available",
    }


def test_merge_decision_names_the_merged_bundle_and_its_parts() -> None:
    merge = MergeDecision(
        ("t/ns/0x40000000_0x80000000", "t/ns/0x80000000_0xc0000000"),
        reason=Reason.COLD_BUNDLES,
        detail="cold",
    )
    assert merge.is_merge and merge.namespace == "t/ns"
    assert merge.to_json() == {
        "bundles": ["t/ns/0x40000000_0x80000000", "t/ns/0x80000000_0xc0000000"],
        "merged": "t/ns/0x40000000_0xc0000000",
        "label": "Success",
        "reason": "ColdBundles",
        "detail": "cold",
    }
    assert not MergeDecision(merge.bundles, Label.SKIP, Reason.BALANCED).is_merge


def test_shedding_result_carries_ring_changes_beside_its_unloads() -> None:
    split = SplitDecision("t/ns/0x00000000_0x40000000", (0x20000000,), Label.SUCCESS, Reason.OVER_TARGET)
    skipped = SplitDecision("t/ns/0x00000000_0x40000000", (), Label.SKIP, Reason.SINGLE_TOPIC)
    merge = MergeDecision(("t/ns/0x40000000_0x80000000", "t/ns/0x80000000_0xc0000000"))
    result = SheddingResult.of([], {"n": 1}, splits=[split, skipped], merges=[merge])
    assert result.splits == [split] and result.merges == [merge] and result.unloads == []
    doc = result.to_json()
    assert [d["reason"] for d in doc["split"]] == ["OverTarget", "SingleTopic"]
    assert doc["merge"][0]["merged"] == "t/ns/0x40000000_0xc0000000" and doc["stats"] == {"n": 1}
    assert SheddingResult.of([]).to_json() == {"unload": [], "split": [], "merge": [], "stats": {}}
