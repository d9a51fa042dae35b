"""The balancer is calm by construction: nothing while the cluster is idle, splits only for load
worth a reconnect, ring-change cool-downs, operator actions respected for the grace period.

The property test runs the balancer over many one-minute cycles of a small cluster whose ring
and traffic change under it -- by the balancer's own decisions (carried out at once), by an
operator's splits, unloads, transfers and merges, and by traffic drifting -- and checks after
every cycle what calm means (docs/balancer.md, "Calm").
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerlb.loadbalance import StrategyState, new_rng
from brokerlb.loadbalance.balancer.memory import MEMORY_KEY, BalancerMemory
from brokerlb.loadbalance.decisions import Label, MergeDecision, Reason, SheddingResult
from brokerlb.loadbalance.operator_actions import OperatorAction, OperatorActionKind
from brokerlb.loadbalance.placement.pipeline import select_broker_for_assignment
from brokerlb.loadbalance.split.thresholds import range_bounds
from tests.unit.loadbalance.balancer.helpers import NOW, cluster, cycle, node, watched

MINUTE = 60_000
GRACE = 30 * MINUTE  # loadBalancerSheddingGracePeriodMinutes
NO_MERGE = 30 * MINUTE  # brokerlbBalancerNoMergeAfterSplitMinutes
NO_SPLIT = 10 * MINUTE  # brokerlbBalancerNoSplitAfterMergeMinutes


def ranges(namespace: str, n: int) -> list[str]:
    step = 0x100000000 // n
    bounds = [i * step for i in range(n)] + [0xFFFFFFFF]
    return [f"{namespace}/0x{lo:08x}_0x{hi:08x}" for lo, hi in zip(bounds, bounds[1:], strict=False)]


def overlaps(a: str, b: str) -> bool:
    if a.rpartition("/")[0] != b.rpartition("/")[0]:
        return False
    (lo_a, up_a), (lo_b, up_b) = range_bounds(a), range_bounds(b)  # type: ignore[misc]
    return lo_a < up_b and lo_b < up_a


def covers(outer: str, inner: str) -> bool:
    if outer.rpartition("/")[0] != inner.rpartition("/")[0]:
        return False
    (lo_o, up_o), (lo_i, up_i) = range_bounds(outer), range_bounds(inner)  # type: ignore[misc]
    return lo_o <= lo_i and up_i <= up_o


# ---------------------------------------------------------------------- idle, absolute split


def test_an_idle_cluster_moves_splits_and_merges_nothing() -> None:
    # the standalone: 0.0-0.3 % load, cold bundles, one bundle "above the target"
    cold = {name: 0.05 for name in ranges("public/default", 16)}
    view = cluster([node("b1:8080", {**cold, "t/x/0x00000000_0xffffffff": 0.3}), node("b2:8080", {})])
    state = watched()
    for i in range(60):
        result = cycle(replace(view, now_ms=NOW + i * MINUTE), state)
        assert result.unloads == [] and result.splits == [] and result.merges == []
        (skip,) = result.decisions
        assert skip.reason is Reason.IDLE and "below the idle threshold 0.100" in skip.detail
    busy = cycle(view.with_overrides({"brokerlbBalancerIdleThresholdPercentage": 0}), watched())
    assert busy.unloads or busy.splits or busy.merges  # the same cluster is balanced without the floor


def test_a_split_for_load_needs_an_absolute_load_worth_a_reconnect() -> None:
    hot = "t/hot/0x00000000_0x80000000"
    # b2 has 4 cores: the hot bundle weighs 8 points there (8 %), above the target (the balanced
    # load is 6.4 %) but below the idle threshold: not split; the cluster is not idle (b1 at 33 %)
    view = cluster([node("b1:8080", {hot: 32, "t/a/0x00000000_0xffffffff": 1}), node("b2:8080", {}, cores=4)])
    result = cycle(view)
    assert result.splits == []
    lower = cycle(view.with_overrides({"brokerlbBalancerIdleThresholdPercentage": 5}))
    assert [d.bundle for d in lower.splits] == [hot]


# ---------------------------------------------------------------------- ring-change cool-downs


def test_a_fresh_leader_merges_nothing_until_it_watched_the_ring_for_the_cool_down() -> None:
    cold = {name: 0.5 for name in ranges("t/cold", 8)}
    view = cluster(
        [
            node("b1:8080", {**cold, "t/a/0x00000000_0xffffffff": 30}),
            node("b2:8080", {"t/d/0x00000000_0xffffffff": 34}),
        ]
    )
    state = StrategyState()
    for minutes in range(30):
        assert cycle(replace(view, now_ms=NOW + minutes * MINUTE), state).merges == []
    assert cycle(replace(view, now_ms=NOW + 30 * MINUTE), state).merges


def test_split_children_are_not_merged_back_within_the_cool_down() -> None:
    parents = ranges("t/cold", 4)
    children = ranges("t/cold", 8)  # the first parent split by someone else (its two halves)
    base = {"t/a/0x00000000_0xffffffff": 30}
    before = cluster(
        [
            node("b1:8080", {**{p: 0.5 for p in parents}, **base}),
            node("b2:8080", {"t/d/0x00000000_0xffffffff": 30}),
        ]
    )
    state = watched()
    cycle(before, state)  # seen: the four parents
    after_ring = {**{c: 0.25 for c in children[:2]}, **{p: 0.5 for p in parents[1:]}, **base}
    after = cluster([node("b1:8080", after_ring), node("b2:8080", {"t/d/0x00000000_0xffffffff": 30})])
    for minutes in range(1, 30):
        result = cycle(replace(after, now_ms=NOW + minutes * MINUTE), state)
        assert not any(overlaps(part, parents[0]) for m in result.merges for part in m.bundles)
    later = cycle(replace(after, now_ms=NOW + 32 * MINUTE), state)
    assert any(overlaps(part, parents[0]) for m in later.merges for part in m.bundles)


@pytest.mark.parametrize(("placement", "kept"), [("brokerlb", True), ("LeastLongTermMessageRate", False)])
def test_split_children_kept_by_the_owner_may_move_at_once_unloaded_ones_wait(
    placement: str, kept: bool
) -> None:
    [parent] = ranges("t/h", 1)
    children = ranges("t/h", 2)
    other = "t/x/0x00000000_0xffffffff"
    conf = {"loadBalancerLoadPlacementStrategy": placement}
    state = watched()
    cycle(cluster([node("b1:8080", {parent: 30}), node("b2:8080", {other: 30})], **conf), state)
    # the parent split (its children stay on b1) and its traffic grew while b2's fell
    after = cluster(
        [node("b1:8080", {c: 25 for c in children}), node("b2:8080", {other: 10})],
        now=NOW + MINUTE,
        **conf,
    )
    moved = [d.bundle for d in cycle(after, state).unloads if d.destination == "b2:8080"]
    # kept by the owner (brokerlb places them: the leader does not unload them), a child did not
    # move and may; an unloaded child counts as just moved for the grace period
    assert bool(moved) is kept and set(moved) <= set(children)


def test_a_merged_bundle_is_not_split_for_load_within_the_cool_down() -> None:
    hot = "t/hot/0x00000000_0xffffffff"
    view = cluster(
        [
            node("b1:8080", {hot: 70, "t/a/0x00000000_0xffffffff": 10}),
            node("b2:8080", {"t/d/0x00000000_0xffffffff": 20}),
        ]
    )
    state = watched()
    state.get(MEMORY_KEY, BalancerMemory).merged_ranges[hot] = NOW  # merged just now
    for minutes in range(10):
        assert cycle(replace(view, now_ms=NOW + minutes * MINUTE), state).splits == []
    assert [d.bundle for d in cycle(replace(view, now_ms=NOW + 11 * MINUTE), state).splits] == [hot]


# ---------------------------------------------------------------------- operator actions


def test_an_operator_split_is_respected_and_said_in_the_decisions() -> None:
    parent = ranges("t/cold", 4)[0]
    children = ranges("t/cold", 8)[:2]
    others = {p: 0.5 for p in ranges("t/cold", 4)[1:]}
    view = cluster(
        [
            node("b1:8080", {**{c: 0.25 for c in children}, **others, "t/a/0x00000000_0xffffffff": 30}),
            node("b2:8080", {"t/d/0x00000000_0xffffffff": 30}),
        ]
    )
    action = OperatorAction(OperatorActionKind.SPLIT, parent, NOW, source="b1:8080")
    state = watched()
    state.get(
        MEMORY_KEY, BalancerMemory
    ).seen = set()  # children unknown: only the operator record holds them
    held = replace(view, operator_actions={parent: action})
    result = cycle(held, state)
    assert not any(overlaps(part, parent) for m in result.merges for part in m.bundles)
    (note,) = [d for d in result.decisions if d.reason is Reason.ADMIN]
    assert (
        note.label is Label.SKIP
        and note.bundle == parent
        and "split from b1:8080 by an operator" in note.detail
    )
    assert f"until {NOW + GRACE}" in note.detail
    assert result.stats["operatorActions"][parent]["untilMs"] == NOW + GRACE


def test_an_operator_unload_is_not_moved_nor_placed_back_within_the_grace_period() -> None:
    moved = "t/a/0x00000000_0x40000000"
    view = cluster(
        [
            node("b1:8080", {moved: 30, "t/a/0x40000000_0x80000000": 40}),
            node("b2:8080", {"t/d/0x00000000_0xffffffff": 10}),
        ]
    )
    assert moved in [d.bundle for d in cycle(view).unloads]  # the balancer would move it
    action = OperatorAction(
        OperatorActionKind.TRANSFER, moved, NOW - MINUTE, source="b2:8080", destination="b1:8080"
    )
    held = replace(view, operator_actions={moved: action})
    assert moved not in [d.bundle for d in cycle(held).unloads]
    # placement of a bundle an operator unloaded from b1 avoids b1 (b1 would be chosen otherwise)
    free = "t/new/0x00000000_0xffffffff"
    quiet = cluster(
        [
            node("b1:8080", {"t/a/0x00000000_0xffffffff": 5}),
            node("b2:8080", {"t/d/0x00000000_0xffffffff": 50}),
        ]
    )
    quiet = quiet.with_overrides({"loadBalancerLoadPlacementStrategy": "brokerlb"})
    assert select_broker_for_assignment(quiet, free, StrategyState(), new_rng()).broker == "b1:8080"
    unloaded = OperatorAction(OperatorActionKind.UNLOAD, free, NOW, source="b1:8080")
    chosen = select_broker_for_assignment(
        replace(quiet, operator_actions={free: unloaded}), free, StrategyState(), new_rng()
    )
    assert chosen.broker == "b2:8080"


# ---------------------------------------------------------------------- the property


class Toy:
    """A cluster of one-core brokers -> {bundle: points}, changed as a leader's executor would."""

    def __init__(self, brokers: dict[str, dict[str, float]]) -> None:
        self.brokers = brokers

    def owner(self, bundle: str) -> str:
        return next(b for b, held in self.brokers.items() if bundle in held)

    def bundles(self) -> list[str]:
        return sorted(b for held in self.brokers.values() for b in held)

    def view(self, now: int, actions: dict[str, OperatorAction], recently: dict[str, int]):  # type: ignore[no-untyped-def]
        brokers = [node(b, dict(held)) for b, held in sorted(self.brokers.items())]
        view = cluster(brokers, now=now, recently={b: at for b, at in recently.items() if now - at < GRACE})
        return replace(view, operator_actions=dict(actions))

    def move(self, bundle: str, destination: str) -> None:
        points = self.brokers[self.owner(bundle)].pop(bundle)
        self.brokers[destination][bundle] = points

    def split(self, bundle: str, at: int | None = None) -> tuple[str, str]:
        owner = self.owner(bundle)
        points = self.brokers[owner].pop(bundle)
        lo, up = range_bounds(bundle)  # type: ignore[misc]
        mid = at if at is not None else (lo + up) // 2
        ns = bundle.rpartition("/")[0]
        a, b = f"{ns}/0x{lo:08x}_0x{mid:08x}", f"{ns}/0x{mid:08x}_0x{up:08x}"
        self.brokers[owner][a] = self.brokers[owner][b] = points / 2
        return a, b

    def merge(self, parts: tuple[str, ...]) -> str:
        owner = self.owner(parts[0])
        merged = MergeDecision(parts).merged
        self.brokers[owner][merged] = sum(self.brokers[owner].pop(p) for p in parts)
        return merged

    def carry_out(self, result: SheddingResult) -> None:
        for d in result.unloads:
            self.move(d.bundle or "", d.destination or "")
        for s in result.splits:
            self.split(s.bundle, s.boundaries[0] if s.boundaries else None)
        for m in result.merges:
            self.merge(m.bundles)

    def adjacent_pair(self, pick: int) -> tuple[str, str] | None:
        pairs = []
        for held in self.brokers.values():
            names = sorted(held, key=lambda n: (n.rpartition("/")[0], range_bounds(n)))
            for a, b in zip(names, names[1:], strict=False):
                if a.rpartition("/")[0] == b.rpartition("/")[0] and range_bounds(a)[1] == range_bounds(b)[0]:  # type: ignore[index]
                    pairs.append((a, b))
        return pairs[pick % len(pairs)] if pairs else None


events = st.lists(
    st.tuples(
        st.sampled_from(["none", "none", "none", "split", "unload", "transfer", "merge", "heat", "cool"]),
        st.integers(0, 10_000),
        st.integers(0, 10_000),
    ),
    min_size=50,
    max_size=50,
)


@st.composite
def toys(draw) -> Toy:  # type: ignore[no-untyped-def]
    n = draw(st.integers(2, 4))
    brokers: dict[str, dict[str, float]] = {f"b{i}:8080": {} for i in range(n)}
    names = list(brokers)
    for ns in ("t/a", "t/b"):
        for bundle in ranges(ns, draw(st.sampled_from([4, 6, 8]))):
            brokers[names[draw(st.integers(0, n - 1))]][bundle] = draw(
                st.sampled_from([0.5, 2.0, 6.0, 15.0, 30.0])
            )
    for held in brokers.values():  # a broker reports at most its limit
        while sum(held.values()) > 95:
            held.pop(next(iter(held)))
    return Toy(brokers)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(toys(), events, st.booleans())
def test_calm_over_many_cycles(toy: Toy, script, fresh: bool) -> None:  # type: ignore[no-untyped-def]
    state = StrategyState() if fresh else watched()
    actions: dict[str, OperatorAction] = {}
    splits: list[tuple[str, int]] = []  # (range split, when), by anyone
    merged: list[tuple[str, int]] = []  # (merged range, when), by anyone
    recently: dict[str, int] = {}  # the leader's recentlyUnloadedBundles
    for i, (kind, x, y) in enumerate(script):
        now = NOW + i * MINUTE
        bundles = toy.bundles()
        target = bundles[x % len(bundles)] if bundles else None
        if target is not None and kind in ("split", "unload", "transfer"):
            owner = toy.owner(target)
            if kind == "split":
                toy.split(target)
                actions[target] = OperatorAction(OperatorActionKind.SPLIT, target, now, source=owner)
                splits.append((target, now))
                merged = [(m, at) for m, at in merged if m != target]  # the operator undid that merge
            else:
                others = [b for b in toy.brokers if b != owner]
                destination = others[y % len(others)]
                toy.move(target, destination)
                if kind == "unload":  # placed elsewhere by the next lookup
                    actions[target] = OperatorAction(OperatorActionKind.UNLOAD, target, now, source=owner)
                else:
                    actions[target] = OperatorAction(
                        OperatorActionKind.TRANSFER, target, now, source=owner, destination=destination
                    )
        elif kind == "merge" and (pair := toy.adjacent_pair(x)) is not None:
            into = toy.merge(pair)
            actions[into] = OperatorAction(OperatorActionKind.MERGE, into, now, source=toy.owner(into))
            merged.append((into, now))
            # the operator merged back a whole range that was split: that split is undone by the operator
            splits = [(r, at) for r, at in splits if not covers(into, r)]
        elif target is not None and kind in ("heat", "cool"):
            owner = toy.owner(target)
            toy.brokers[owner][target] = min(60.0, toy.brokers[owner][target] * 3) if kind == "heat" else 0.2
            if sum(toy.brokers[owner].values()) > 95:
                toy.brokers[owner][target] = 0.2
        actions = {b: a for b, a in actions.items() if now < a.at_ms + GRACE}
        view = toy.view(now, actions, recently)
        result = cycle(view, state, seed=i)
        recently.update((d.bundle or "", now) for d in result.unloads)  # as the leader records them
        loads = {b: sum(held.values()) / 100 for b, held in toy.brokers.items()}
        if max(loads.values()) < 0.10:  # idle: nothing at all
            assert not (result.unloads or result.splits or result.merges)
        for d in result.unloads:  # an operator's action is never undone within the grace period
            assert d.bundle not in actions
        for s in result.splits:
            assert s.bundle not in actions
            assert not any(overlaps(s.bundle, m) and now - at < NO_SPLIT for m, at in merged)
        for m in result.merges:
            for part in m.bundles:
                assert part not in actions
                assert not any(overlaps(part, r) and now - at < max(NO_MERGE, GRACE) for r, at in splits)
        if fresh and result.merges:
            started = state.get(MEMORY_KEY, BalancerMemory).started_ms
            assert started is not None and now - started >= NO_MERGE
        toy.carry_out(result)
        splits += [(s.bundle, now) for s in result.splits]
        merged += [(m.merged, now) for m in result.merges]
