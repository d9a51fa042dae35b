"""The plan file: JSON round trip and validation naming the operation and field."""

from __future__ import annotations

import json

import pytest

from brokerlb.errors import InvalidPlanError
from brokerlb.plan import MergeOp, Plan, SplitOp, UnloadOp
from brokerlb.ring import NamespaceBundles

OPS = (
    SplitOp(
        "public/default", "0x00000000_0x40000000", (0x10000000, "0x20000000"), True, "hot", [{"range": "x"}]
    ),
    MergeOp("public/default", ("0xc0000000_0xffffffff", "0x80000000_0xc0000000"), "cold"),
    UnloadOp("public/default", "0x40000000_0x80000000", "broker-2:8080"),
)


def test_roundtrip_normalises_and_keeps_order(tmp_path):
    plan = Plan(OPS, 1_700_000_000_000, {"job": "test"}, [{"namespace": "public/default"}])
    doc = plan.to_json()
    assert doc["kind"] == "brokerlb.plan" and doc["version"] == 1
    assert doc["operations"][0]["boundaries"] == ["0x10000000", "0x20000000"]
    assert doc["operations"][1]["bundles"] == ["0x80000000_0xc0000000", "0xc0000000_0xffffffff"]
    assert doc["operations"][2]["destinationBroker"] == "broker-2:8080"
    path = tmp_path / "plan.json"
    plan.save(path)
    assert Plan.load(path) == plan
    assert OPS[0].children == ["0x00000000_0x10000000", "0x10000000_0x20000000", "0x20000000_0x40000000"]
    assert OPS[1].merged == "0x80000000_0xffffffff"


@pytest.mark.parametrize(
    "op, message",
    [
        (
            {
                "op": "split",
                "namespace": "bad name",
                "bundle": "0x00000000_0xffffffff",
                "boundaries": ["0x1"],
            },
            "namespace",
        ),
        (
            {
                "op": "split",
                "namespace": "t/ns",
                "bundle": "0x00000000_0x40000000",
                "boundaries": ["0x50000000"],
            },
            "not strictly inside",
        ),
        (
            {"op": "split", "namespace": "t/ns", "bundle": "0x00000000_0x40000000", "boundaries": []},
            "at least one",
        ),
        (
            {"op": "split", "namespace": "t/ns", "bundle": "nope", "boundaries": ["0x1"]},
            "Invalid bundle range",
        ),
        (
            {
                "op": "split",
                "namespace": "t/ns",
                "bundle": "0x00000000_0x40000000",
                "boundaries": ["0x1"],
                "unload": "yes",
            },
            "unload",
        ),
        (
            {
                "op": "merge",
                "namespace": "t/ns",
                "bundles": ["0x00000000_0x40000000", "0x80000000_0xffffffff"],
            },
            "gap",
        ),
        ({"op": "merge", "namespace": "t/ns", "bundles": ["0x00000000_0x40000000"]}, "at least two"),
        (
            {"op": "unload", "namespace": "t/ns", "bundle": "0x00000000_0x40000000", "destinationBroker": ""},
            "destinationBroker",
        ),
        ({"op": "delete", "namespace": "t/ns"}, "unknown operation"),
    ],
)
def test_bad_operations_are_named(op, message):
    with pytest.raises(InvalidPlanError, match=message) as err:
        Plan.from_json(
            {"operations": [{"op": "unload", "namespace": "t/ns", "bundle": "0x00000000_0xffffffff"}, op]}
        )
    assert "operations[1]" in str(err.value)


def test_bad_documents(tmp_path):
    for doc, message in [
        ([], "JSON object"),
        ({"kind": "other"}, "kind"),
        ({"version": 2}, "version"),
        ({"operations": {}}, "list"),
        ({"createdAt": "now"}, "createdAt"),
    ]:
        with pytest.raises(InvalidPlanError, match=message):
            Plan.from_json(doc)
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(InvalidPlanError, match="not JSON"):
        Plan.load(broken)
    with pytest.raises(InvalidPlanError, match="cannot read"):
        Plan.load(tmp_path / "missing.json")


def test_apply_to_checks_the_layout_offline():
    layout = {"public/default": NamespaceBundles.create("public/default", 4)}
    after = Plan(OPS).apply_to(layout)["public/default"]
    assert after.num_bundles == 5
    with pytest.raises(InvalidPlanError, match=r"operations\[0\] \(split\)"):
        Plan((SplitOp("public/default", "0x00000000_0x20000000", (0x100,)),)).apply_to(layout)
    assert json.loads(json.dumps(Plan(OPS).to_json()))  # JSON-able
