"""The move planner: which bundle moves bring the cluster into its target band, for the least moved
throughput, within the cycle's budget. Pure arithmetic over a
:class:`~brokerlb.loadbalance.balancer.model.ClusterModel`; what may move where comes in as
callbacks (the placement filters, grace periods and swap-back rule live with the caller).

**Balanced load** ``L``: the load every broker would have if the work were spread in
proportion to capacity -- per resource ``w_r x sum(usage_r) / sum(limit_r)``, the largest over the
resources -- raised by water-filling where a broker cannot go that low (its heap-memory floor,
or a bundle bigger than ``L`` that it holds: that broker's own floor is then that bundle).

**Target band**: a broker is over target above ``U_b = max(L, floor_b) x (1 + tolerance)`` and
under target below ``L x (1 - underloadTolerance)``. The **objective** is the brokers' summed
distance outside the band, ``J = sum(max(0, x_b - U_b) + max(0, lower - x_b))``; ``J = 0`` is
balanced.

**Greedy, worst broker first**: repeatedly take the broker furthest outside the band. Over target:
among its movable bundles and their allowed destinations, the move with the best objective
gain per byte moved, the gain counted up to the load moved (bundles that fit the excess come first,
the largest of them -- the fewest moves; then the smallest bundle covering the rest). Under target: the best such move onto it from
the brokers above the balanced load. A move must gain at least ``minImprovement x L`` (hysteresis)
and at least half the load it moves (a big bundle is not moved to fix a small excess), and fit
the budgets (moves and MB/s, per broker and per cycle); a broker no move helps is left
with the reason.

Worked example: brokers of 8 cores at 0.80, 0.60, 0.40 (one resource, no floor), tolerance 0.03:
``L = 0.60``, band ``[0.54, 0.618]``; b1 is 0.182 over, b3 0.14 under: ``J = 0.322``. b1's bundles
of 0.10, 0.08 and 0.05: 0.10 fits the excess and moves to b3 (gain 0.2: b1 0.70, b3 0.50), then
0.08 (b1 0.62 -> excess 0.002; b3 0.58 in band; gain 0.118), leaving ``J = 0.002``, under the
margin of the last candidate move (0.05 would gain 0.002 < 0.003): done, two moves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brokerlb.loadbalance.balancer.model import ClusterModel

__all__ = [
    "Budget",
    "Targets",
    "PlannedMove",
    "MovePlan",
    "plan_moves",
    "planned_loads",
    "compute_targets",
    "MB",
]

MB = 1024 * 1024
#: a move must gain at least this fraction of the load it moves (no big bundle for a small excess)
USEFUL_FRACTION = 0.5
#: bundles of an over-target broker evaluated per move, best source relief first (the largest
#: that fit the excess come first; the rest could only relieve less)
MAX_CANDIDATES = 24
#: valid moves compared per over-target broker before the best of them is taken
ENOUGH_MOVES = 6
#: destinations evaluated per bundle: the least loaded allowed brokers
MAX_DESTINATIONS = 64


@dataclass(frozen=True, slots=True)
class Budget:
    """Per-cycle move budget (``0`` MB/s = no limit)."""

    moves: int = 100
    moves_per_broker: int = 20
    mbytes: float = 0.0
    mbytes_per_broker: float = 0.0

    @classmethod
    def from_config(cls, conf: Any) -> Budget:
        return cls(
            conf.brokerlbBalancerMaxMovesPerCycle,
            conf.brokerlbBalancerMaxMovesPerBrokerPerCycle,
            conf.brokerlbBalancerMaxMovedMbytesPerCycle,
            conf.brokerlbBalancerMaxMovedMbytesPerBrokerPerCycle,
        )


@dataclass(frozen=True, slots=True)
class Targets:
    """The balanced load, each broker's upper target and the common lower target."""

    balanced: float
    upper: np.ndarray
    lower: float

    def violation(self, loads: np.ndarray) -> np.ndarray:
        return np.asarray(np.maximum(loads - self.upper, 0.0) + np.maximum(self.lower - loads, 0.0))


@dataclass(frozen=True, slots=True)
class PlannedMove:
    bundle: int
    source: int
    destination: int
    #: loads of source and destination before and after, the objective gain
    source_before: float
    source_after: float
    destination_before: float
    destination_after: float
    gain: float
    throughput: float
    demand: tuple[float, float, float, float]
    #: "over" (off an over-target broker) or "under" (onto an under-target broker)
    kind: str


@dataclass(slots=True)
class MovePlan:
    moves: list[PlannedMove] = field(default_factory=list)
    #: broker index -> why it stays outside the band
    unresolved: dict[int, str] = field(default_factory=dict)
    objective_before: float = 0.0
    objective_after: float = 0.0
    busiest_before: float = 0.0
    busiest_after: float = 0.0
    moved_bytes: float = 0.0
    budget_exhausted: str | None = None


def compute_targets(
    model: ClusterModel, fixed_floor: np.ndarray, tolerance: float, underload_tolerance: float
) -> Targets:
    """The balanced load and the band (module docstring); ``fixed_floor`` is each broker's load
    that moving bundles cannot lower (heap floor, or a bundle too hot to move usefully)."""
    n = len(model.brokers)
    if n == 0:
        return Targets(0.0, np.zeros(0), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        total_limit = model.limit.sum(axis=0)
        averages = np.where(total_limit > 0, model.usage.sum(axis=0) / total_limit, 0.0) * model.weights
    r = int(np.argmax(averages))
    capacity = model.limit[:, r].copy()
    work = float(model.usage[:, r].sum() * model.weights[r])
    floors = np.maximum(fixed_floor, model.floor)
    level = float(averages[r])
    fixed = np.zeros(n, dtype=bool)
    for _ in range(n):
        newly = (floors > level) & ~fixed
        if not newly.any():
            break
        fixed |= newly
        rest = capacity[~fixed].sum()
        if rest <= 0:
            break
        level = max(0.0, (work - float((floors[fixed] * capacity[fixed]).sum())) / float(rest))
    upper = np.maximum(level, floors) * (1.0 + tolerance)
    return Targets(level, upper, level * (1.0 - underload_tolerance))


class _State:
    """Mutable loads and budgets while planning."""

    def __init__(self, model: ClusterModel, budget: Budget) -> None:
        self.model = model
        self.usage = model.usage.copy()
        self.loads = model.loads()
        self.owner = model.owner.copy()
        order = np.argsort(self.owner, kind="stable")
        starts = np.searchsorted(self.owner[order], np.arange(len(model.brokers) + 1))
        #: broker -> its bundles (kept as moves are planned)
        self.held: list[list[int]] = [
            order[starts[b] : starts[b + 1]].tolist() for b in range(len(model.brokers))
        ]
        self.budget = budget
        n = len(model.brokers)
        #: weight / limit per broker and resource (0 where a resource has no limit)
        self.scale = np.divide(
            np.broadcast_to(model.weights, model.limit.shape),
            model.limit,
            out=np.zeros_like(model.limit),
            where=model.limit > 0,
        )
        self.moves = 0
        self.moves_of = np.zeros(n, dtype=np.int64)
        self.bytes = 0.0
        self.bytes_of = np.zeros(n)

    def loads_with(self, delta: np.ndarray, brokers: np.ndarray | slice, sign: float) -> np.ndarray:
        """Loads of ``brokers`` with ``sign x delta`` added to their usage ((k, 4) or (4,))."""
        usage = np.maximum(self.usage[brokers] + sign * delta, 0.0)
        return np.asarray(np.maximum(self.model.floor[brokers], (usage * self.scale[brokers]).max(axis=-1)))

    def movable_of(self, broker: int, movable: np.ndarray) -> np.ndarray:
        """The movable bundles ``broker`` holds now."""
        held = np.asarray(self.held[broker], dtype=np.int64)
        return held[movable[held]] if len(held) else held

    def broker_room(self) -> np.ndarray:
        """(n,) whether a broker may take part in one more move."""
        return self.moves_of < self.budget.moves_per_broker

    def bytes_room(self) -> np.ndarray:
        """(n,) throughput (bytes/s) a broker may still move (inf without a limit)."""
        if self.budget.mbytes_per_broker <= 0:
            return np.full(len(self.bytes_of), np.inf)
        return self.budget.mbytes_per_broker * MB - self.bytes_of

    def cluster_bytes_room(self) -> float:
        return np.inf if self.budget.mbytes <= 0 else self.budget.mbytes * MB - self.bytes


def plan_moves(
    model: ClusterModel,
    targets: Targets,
    *,
    movable: np.ndarray,
    destinations: Callable[[int], np.ndarray],
    budget: Budget,
    min_gain: float,
    max_sources: int = 32,
    on_move: Callable[[PlannedMove], None] | None = None,
) -> MovePlan:
    """Plan this cycle's moves (module docstring).

    ``movable``: (m,) bundles that may move at all; ``destinations(k)``: (n,) bool mask of the
    brokers bundle ``k`` may move to (filters, swap-back rule); ``on_move`` is told of each move
    as it is planned (so the filters can count it).
    """
    state = _State(model, budget)
    plan = MovePlan()
    violation = targets.violation(state.loads)
    plan.objective_before = float(violation.sum())
    plan.busiest_before = float(state.loads.max()) if len(state.loads) else 0.0
    demands = model.demands()
    movable = movable.copy()
    done = np.zeros(len(model.brokers), dtype=bool)
    while True:
        violation = targets.violation(state.loads)
        open_ = np.where(done, 0.0, violation)
        if not len(open_) or open_.max() <= 0:
            break
        if state.moves >= budget.moves:
            plan.budget_exhausted = f"cluster move budget of {budget.moves} per cycle used"
            break
        if state.cluster_bytes_room() <= 0:
            plan.budget_exhausted = f"cluster budget of {budget.mbytes:g} MB/s per cycle used"
            break
        b = int(np.argmax(open_))
        if state.loads[b] > targets.upper[b]:
            move, why = _best_out(state, targets, b, movable, demands, destinations, min_gain)
        else:
            move, why = _best_in(state, targets, b, movable, demands, destinations, min_gain, max_sources)
        if move is None:
            done[b] = True
            plan.unresolved[b] = why
            continue
        _apply(state, move, demands)
        movable[move.bundle] = False
        plan.moves.append(move)
        if on_move is not None:
            on_move(move)
    plan.objective_after = float(targets.violation(state.loads).sum())
    plan.busiest_after = float(state.loads.max()) if len(state.loads) else 0.0
    plan.moved_bytes = state.bytes
    return plan


def _gain(
    targets: Targets, b: int | np.ndarray, before: np.ndarray | float, after: np.ndarray | float
) -> Any:
    upper = targets.upper[b]
    lower = targets.lower

    def v(x: Any) -> Any:
        return np.maximum(x - upper, 0.0) + np.maximum(lower - x, 0.0)

    return v(before) - v(after)


def _best_out(
    state: _State,
    targets: Targets,
    a: int,
    movable: np.ndarray,
    demands: np.ndarray,
    destinations: Callable[[int], np.ndarray],
    min_gain: float,
) -> tuple[PlannedMove | None, str]:
    """The best move off over-target broker ``a``."""
    model = state.model
    if state.moves_of[a] >= state.budget.moves_per_broker:
        return None, "its move budget for this cycle is used"
    ks = state.movable_of(a, movable)
    if not len(ks):
        return None, "no bundle of it may move (recently moved, new, system or pinned by policy)"
    room_a = state.bytes_room()[a]
    ks = ks[model.throughput[ks] <= min(room_a, state.cluster_bytes_room())]
    if not len(ks):
        return None, "its moved-throughput budget for this cycle is used"
    source_after = state.loads_with(demands[ks], np.full(len(ks), a), -1.0)
    source_gain = _gain(targets, a, state.loads[a], source_after)
    best: tuple[float, float, int, int, float, float] | None = None
    reason = "no destination can take any of its bundles within the band"
    room = state.broker_room()
    bytes_room = state.bytes_room()
    by_load = np.argsort(state.loads, kind="stable")  # destinations, least loaded first
    evaluated = found = 0
    for i in np.argsort(-source_gain, kind="stable"):
        k = int(ks[i])
        if evaluated >= MAX_CANDIDATES or found >= ENOUGH_MOVES:
            break
        if source_gain[i] < min_gain:
            if best is None:
                reason = f"no move gains the minimum improvement {min_gain:.4f}"
            break
        allowed = destinations(k) & room & (bytes_room >= model.throughput[k])
        allowed[a] = False
        cands = by_load[allowed[by_load]][:MAX_DESTINATIONS]
        if not len(cands):
            continue
        evaluated += 1
        dest_after = state.loads_with(demands[k], cands, 1.0)
        gain = source_gain[i] + _gain(targets, cands, state.loads[cands], dest_after)
        j = int(np.lexsort((dest_after, -gain))[0])
        total = float(gain[j])
        moved = float(state.loads[a] - source_after[i])  # the load it takes off the source
        if total < min_gain or total < USEFUL_FRACTION * moved:
            continue
        found += 1
        score = min(total, moved) / max(float(model.throughput[k]), 1.0)
        key = (score, total)
        if best is None or _better(key, (best[0], best[1])):
            best = (score, total, k, int(cands[j]), float(source_after[i]), float(dest_after[j]))
    if best is None:
        return None, reason
    _, total, k, dst, src_after, dst_after = best
    return _move(state, demands, k, a, dst, src_after, dst_after, total, "over"), ""


def _best_in(
    state: _State,
    targets: Targets,
    m: int,
    movable: np.ndarray,
    demands: np.ndarray,
    destinations: Callable[[int], np.ndarray],
    min_gain: float,
    max_sources: int,
) -> tuple[PlannedMove | None, str]:
    """The best move onto under-target broker ``m`` from the brokers above the balanced load."""
    model = state.model
    if state.moves_of[m] >= state.budget.moves_per_broker:
        return None, "its move budget for this cycle is used"
    room = state.broker_room()
    bytes_room = state.bytes_room()
    limit_bytes = min(bytes_room[m], state.cluster_bytes_room())
    sources = np.flatnonzero((state.loads > targets.balanced) & room)
    sources = sources[np.argsort(-state.loads[sources], kind="stable")][:max_sources]
    best: tuple[float, float, int, int, float, float] | None = None
    for source in sources:
        a = int(source)
        ks = state.movable_of(a, movable)
        ks = ks[model.throughput[ks] <= min(limit_bytes, bytes_room[a])]
        if not len(ks):
            continue
        dest_after = state.loads_with(demands[ks], np.full(len(ks), m), 1.0)
        source_after = state.loads_with(demands[ks], np.full(len(ks), a), -1.0)
        gain = _gain(targets, m, state.loads[m], dest_after) + _gain(targets, a, state.loads[a], source_after)
        for i in np.argsort(-gain, kind="stable"):
            total = float(gain[i])
            if total < min_gain:
                break
            k = int(ks[i])
            moved = float(dest_after[i] - state.loads[m])  # the load it puts on the destination
            if total < USEFUL_FRACTION * moved or not destinations(k)[m]:
                continue
            score = min(total, moved) / max(float(model.throughput[k]), 1.0)
            if best is None or _better((score, total), (best[0], best[1])):
                best = (score, total, k, a, float(source_after[i]), float(dest_after[i]))
            break  # the best gain of this source that may go there
    if best is None:
        return None, "no bundle of a broker above the balanced load can move onto it with the minimum gain"
    _, total, k, a, src_after, dst_after = best
    return _move(state, demands, k, a, m, src_after, dst_after, total, "under"), ""


def _better(candidate: tuple[float, float], incumbent: tuple[float, float]) -> bool:
    """Higher gain per byte wins; within 2 % of it, the larger gain (fewer moves)."""
    score, gain = candidate
    best_score, best_gain = incumbent
    if score > best_score * 1.02:
        return True
    if score * 1.02 < best_score:
        return False
    return gain > best_gain


def _move(
    state: _State,
    demands: np.ndarray,
    k: int,
    src: int,
    dst: int,
    src_after: float,
    dst_after: float,
    gain: float,
    kind: str,
) -> PlannedMove:
    d = demands[k]
    return PlannedMove(
        bundle=k,
        source=src,
        destination=dst,
        source_before=float(state.loads[src]),
        source_after=src_after,
        destination_before=float(state.loads[dst]),
        destination_after=dst_after,
        gain=gain,
        throughput=float(state.model.throughput[k]),
        demand=(float(d[0]), float(d[1]), float(d[2]), float(d[3])),
        kind=kind,
    )


def _apply(state: _State, move: PlannedMove, demands: np.ndarray) -> None:
    d = demands[move.bundle]
    state.usage[move.source] = np.maximum(state.usage[move.source] - d, 0.0)
    state.usage[move.destination] += d
    state.loads[move.source] = move.source_after
    state.loads[move.destination] = move.destination_after
    state.owner[move.bundle] = move.destination
    state.held[move.source].remove(move.bundle)
    state.held[move.destination].append(move.bundle)
    state.moves += 1
    state.moves_of[move.source] += 1
    state.moves_of[move.destination] += 1
    state.bytes += move.throughput
    state.bytes_of[move.source] += move.throughput
    state.bytes_of[move.destination] += move.throughput


def planned_loads(model: ClusterModel, plan: MovePlan) -> np.ndarray:
    """(n,) every broker's load once the plan's moves are made."""
    usage = model.usage.copy()
    demands = model.demands()
    for move in plan.moves:
        usage[move.source] = np.maximum(usage[move.source] - demands[move.bundle], 0.0)
        usage[move.destination] += demands[move.bundle]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(model.limit > 0, usage / model.limit, 0.0)
    return np.asarray(np.maximum(model.floor, (ratios * model.weights).max(axis=1)))
