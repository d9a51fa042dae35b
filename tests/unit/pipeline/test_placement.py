"""Placing a split's children: the lightest broker per child, heaviest child first, the owner on a tie."""

from __future__ import annotations

import doctest

import brokerlb.pipeline.placement
from brokerlb.pipeline.placement import place_children
from brokerlb.plan import SplitOp

PARENT = "0x00000000_0x80000000"


def split(rates: list[float], unload: bool = True) -> SplitOp:
    step = 0x80000000 // len(rates)
    points = tuple(step * i for i in range(1, len(rates)))
    children = [f"0x{a:08x}_0x{b:08x}" for a, b in zip((0, *points), (*points, 0x80000000), strict=True)]
    return SplitOp(
        "t/ns",
        PARENT,
        points,
        unload,
        "",
        [{"range": c, "msgRate": r} for c, r in zip(children, rates, strict=True)],
    )


def test_doctest() -> None:
    assert doctest.testmod(brokerlb.pipeline.placement).failed == 0


def test_three_children_spread_over_three_brokers_heaviest_first() -> None:
    hot = split([100.0, 90.0, 80.0])
    splits, moves = place_children([hot], {f"t/ns/{PARENT}": "b1"}, {"b1": 300.0, "b2": 20.0, "b3": 10.0})
    assert splits[0].unload is False
    # b1 keeps 30 once the parent's 270 leave: the 100 goes to b3 (10), the 90 to b2 (20), the 80 stays
    # on b1 (30): 110 on each, two transfers
    assert [(m.bundle, m.destination_broker) for m in moves] == [
        (hot.children[0], "b3"),
        (hot.children[1], "b2"),
    ]
    assert all("to the lightest broker" in m.reason for m in moves)


def test_ties_keep_the_child_home_and_unknown_owners_or_a_single_broker_change_nothing() -> None:
    even = split([10.0, 10.0])
    _, moves = place_children([even], {f"t/ns/{PARENT}": "b1"}, {"b1": 20.0, "b2": 0.0})
    assert [(m.bundle, m.destination_broker) for m in moves] == [(even.children[1], "b2")]
    _, moves = place_children([even], {f"t/ns/{PARENT}": "b2"}, {"b2": 20.0, "b1": 0.0})
    assert [m.destination_broker for m in moves] == ["b1"]
    # b1 (0 once the parent leaves) takes the first child; the second ties b1 (10) with b2 (10): it stays
    kept, moves = place_children([even], {f"t/ns/{PARENT}": "b1"}, {"b1": 20.0, "b2": 10.0})
    assert not moves and kept[0].unload is False
    kept, moves = place_children([even], {}, {"b1": 20.0, "b2": 0.0})
    assert kept == [even] and not moves  # whose bundle it is is unknown: the split keeps its unload
    kept, moves = place_children([even], {f"t/ns/{PARENT}": "b1"}, {"b1": 20.0})
    assert kept == [even] and not moves
    kept, moves = place_children([even], {f"t/ns/{PARENT}": "gone"}, {"b1": 20.0, "b2": 0.0})
    assert kept == [even] and not moves  # its owner is no candidate (it left)
