"""The broker process's collector policy: freeze the long-lived state after each leader refresh."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from brokerlb.broker.leader.collector import LongLivedFreezer


@pytest.fixture
def collector() -> Iterator[None]:
    gc.collect()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.collect()


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> Node:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a


def test_disabled_does_nothing(collector: None) -> None:
    freezer = LongLivedFreezer()
    before = gc.get_freeze_count()
    freezer.after_refresh()
    assert gc.get_freeze_count() == before and freezer.freezes == 0


def test_freezes_what_is_alive_and_collects_young_garbage_first(collector: None) -> None:
    freezer = LongLivedFreezer(check_every=1000)
    freezer.enabled = True
    freezer.after_refresh()  # the first time: a full collection, then the freeze
    assert (freezer.freezes, freezer.reclaims) == (1, 1)
    kept = [cycle() for _ in range(100)]
    garbage = [weakref.ref(cycle()) for _ in range(100)]  # cyclic garbage in the young generation
    freezer.after_refresh()
    # the live nodes are frozen (out of the collector's generations); the young garbage was
    # collected, not frozen. (Not a count of the frozen set: objects frozen earlier by the suite die.)
    tracked = {id(o) for o in gc.get_objects()}
    assert not any(id(node) in tracked or id(node.other) in tracked for node in kept)
    assert all(ref() is None for ref in garbage)
    assert not gc.is_finalized(kept[0]) and freezer.freezes == 2


def test_reclaims_frozen_cyclic_garbage_when_the_frozen_set_doubles(collector: None) -> None:
    freezer = LongLivedFreezer(regrow=2.0, check_every=1000)
    freezer.enabled = True
    freezer.after_refresh()
    floor = freezer.floor
    leaked = [cycle() for _ in range(floor)]  # alive at the next refresh: frozen
    freezer.after_refresh()
    assert freezer.reclaims == 1 and gc.get_freeze_count() > 2 * floor
    del leaked  # now frozen cyclic garbage: no collection looks at it
    assert gc.collect() == 0
    freezer.check_every = 1  # count the frozen set at this refresh
    freezer.after_refresh()
    assert freezer.reclaims == 2
    assert gc.get_freeze_count() < 1.5 * floor


def test_regrow_must_be_above_one() -> None:
    with pytest.raises(ValueError, match="regrow"):
        LongLivedFreezer(regrow=1.0)
