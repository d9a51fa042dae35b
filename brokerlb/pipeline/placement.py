"""Where the children of a recommended split go: a transfer per child, to the lightest broker (pure).

Pulsar unloads a split's children (``loadBalancerAutoUnloadSplitBundlesEnabled``) and lets the
clients' lookups place them again: where they land is the placement strategy's choice at that
moment, and all of them can land on one broker (seen with three children of a hot bundle on a live
cluster). The pipeline knows each child's expected load (the topics' recorded rates) and each
broker's (the topics it served last), so a plan can say where each child goes instead.

:func:`place_children` takes the brokers' loads (message rate in + out of the topics each broker
served last), and for each split, in plan order: the parent's load leaves its owner; the children,
heaviest first, each go to the broker with the least load so far (the owner on a tie: no move;
then the broker id) and add their load there. A child that goes elsewhere becomes an ``unload``
with ``destinationBroker`` (a transfer, after the split); the split itself then keeps its children
(``unload: false``). Splits whose owner is unknown keep their own ``unload`` setting.

>>> from brokerlb.plan import SplitOp
>>> split = SplitOp("t/ns", "0x00000000_0x80000000", (0x40000000,), True, "",
...                 [{"range": "0x00000000_0x40000000", "msgRate": 60.0},
...                  {"range": "0x40000000_0x80000000", "msgRate": 40.0}])
>>> splits, moves = place_children([split], {"t/ns/0x00000000_0x80000000": "b1"}, {"b1": 110.0, "b2": 20.0})
>>> splits[0].unload, [(m.bundle, m.destination_broker) for m in moves]
(False, [('0x40000000_0x80000000', 'b2')])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from brokerlb.plan.format import SplitOp, UnloadOp

__all__ = ["place_children"]


def _rate(expected: Any) -> float:
    if isinstance(expected, Mapping):
        value = expected.get("msgRate")
        if isinstance(value, int | float):
            return float(value)
    return 0.0


def place_children(
    splits: Sequence[SplitOp], owners: Mapping[str, str], loads: Mapping[str, float]
) -> tuple[list[SplitOp], list[UnloadOp]]:
    """``(splits, transfers)``: the splits (``unload`` off where their children are placed) and the
    transfers of the children that go to another broker (module docstring). ``owners`` maps
    ``namespace/range`` of a split bundle to the broker serving it; ``loads`` maps every broker that
    may take a child to its load (message rate in + out)."""
    load = {broker: float(value) for broker, value in loads.items()}
    out_splits: list[SplitOp] = []
    moves: list[UnloadOp] = []
    for split in splits:
        owner = owners.get(f"{split.namespace}/{split.bundle}")
        expected = list(split.expected) if isinstance(split.expected, list) else []
        if owner is None or owner not in load or len(expected) != len(split.children) or len(load) < 2:
            out_splits.append(split)
            continue
        rates = [_rate(child) for child in expected]
        load[owner] -= sum(rates)
        for index in sorted(range(len(rates)), key=lambda i: (-rates[i], i)):
            target = min(load, key=lambda b: (load[b], b != owner, b))
            load[target] += rates[index]
            if target != owner:
                moves.append(
                    UnloadOp(
                        split.namespace,
                        split.children[index],
                        target,
                        f"child of the split of {split.bundle} ({rates[index]:.1f} msg/s) to the lightest "
                        f"broker ({load[target] - rates[index]:.1f} msg/s before it)",
                    )
                )
        out_splits.append(replace(split, unload=False))
    return out_splits, moves
