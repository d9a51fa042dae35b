"""Balanced, then sticky: how many partitions of each topic each member gets, as an exact min-cost flow.

The uniform assignor's heterogeneous case (members subscribe to different topics)
reduces to counts: partitions of one topic are interchangeable except for who
owned them before, so it is enough to decide ``x[t][m]``, the number of
partitions of topic ``t`` member ``m`` gets. Member ``m`` can keep at most
``min(x[t][m], owned[t][m])`` of its previous partitions of ``t``, and that many
it does keep, so

* member counts are ``c[m] = sum_t x[t][m]``;
* partitions moved (previously owned, now elsewhere) are
  ``sum_{t,m} owned[t][m] - min(x[t][m], owned[t][m])``.

:func:`balanced_counts` returns an ``x`` that minimises, lexicographically,
(1) ``sum_m c[m]**2`` -- the balance: no chain of single-partition moves
(``A`` gives a partition to ``B``, ``B`` one to ``C`` ...) can take a partition
from a member with ``c`` partitions to a member with ``c - 2`` or fewer; for a
homogeneous group, counts differing by at most one -- and then (2) the number of
partitions moved.

The network: source -> topic (capacity: its partitions) -> subscribed member ->
sink. A topic->member arc costs 0 per unit up to ``owned[t][m]`` (a kept
partition) and 1 beyond (a partition given to someone who did not own it); the
member->sink cost is convex, ``W * (2c + 1)`` for the member's ``c+1``-th unit
(one arc of capacity 1 per unit), so the total is ``W * sum c**2 + moves`` with
``W`` larger than any number of moves. It is solved by OR-Tools'
``SimpleMinCostFlow`` (a compiled cost-scaling push-relabel solver), which
answers an optimal flow: the optimum of the lexicographic objective.

Keeping the network small:

* a topic with a single subscriber is that member's whole, without a choice: it
  is left out of the network and the member's convex arcs start at that count;
* each member's convex arcs are cut to a few: one arc for its first ``floor``
  units (the mean count minus two) at the price of the last of them, unit arcs up
  to ``cap`` (the mean plus three) and one arc for the rest at the price of unit
  ``cap + 1``. Both linear arcs price no unit above its true convex cost and agree
  with it (up to a constant) from ``floor - 1`` to ``cap + 1`` units, so a flow in
  which every member takes between ``floor - 1`` and ``cap + 1`` units is optimal
  for the true costs too (the true total is never below the cut one and equals it
  there). A member outside that range gets its full unit arcs below (``floor`` 0)
  or twice the cap, and the flow is solved again;
* ``W`` is the number of previously owned partitions plus one (no answer moves
  more): 1 for a fresh group, which keeps the solver's cost range small.

Ties between optimal flows are broken by the solver, deterministically for a
given network; the network is built in topic and member index order, so the
answer depends on the group's content only.

Worked example: t0 (2 partitions) subscribed by A; t1 (2) by A and B. All
fresh: A gets both of t0 and B both of t1 (counts 2/2). If B owned
t1-0 and A owned t1-1 before, the answer is the same counts and only t1-1
moves (A cannot keep it without leaving B with 1 and itself with 3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from ortools.graph.python import min_cost_flow

__all__ = ["balanced_counts"]


def balanced_counts(
    partitions: Sequence[int],
    subscribers: Sequence[Sequence[int]],
    owned: Sequence[Mapping[int, int]],
    num_members: int,
) -> list[dict[int, int]]:
    """``x[t] = {member: count}``: balanced first (min ``sum c**2``), then fewest moves.

    ``partitions[t]`` is topic ``t``'s partition count, ``subscribers[t]`` the
    member indices subscribed to it (every topic with partitions has at least one),
    ``owned[t] = {member: n}`` how many of its partitions each subscriber validly
    owned before. Every partition is assigned.
    """
    x: list[dict[int, int]] = [{} for _ in partitions]
    forced = [0] * num_members  # partitions of topics a member alone subscribes to
    shared: list[int] = []
    for t, subs in enumerate(subscribers):
        if partitions[t] <= 0:
            continue
        if not subs:
            raise ValueError(f"topic index {t} has partitions but no subscriber")
        if len(subs) == 1:
            x[t][subs[0]] = partitions[t]
            forced[subs[0]] += partitions[t]
        else:
            shared.append(t)
    if not shared:
        return x
    total = sum(partitions[t] for t in shared)
    mean = total // max(1, num_members)
    floors = np.full(num_members, max(0, mean - 2), dtype=np.int64)
    caps = np.full(num_members, mean + 3, dtype=np.int64)
    while True:
        flows, low, high = _solve(
            partitions, subscribers, owned, num_members, shared, forced, total, floors, caps
        )
        if not len(low) and not len(high):
            break
        floors[low] = 0
        caps[high] *= 2
    for t, member, amount in flows:
        x[t][member] = x[t].get(member, 0) + amount
    return x


def _solve(
    partitions: Sequence[int],
    subscribers: Sequence[Sequence[int]],
    owned: Sequence[Mapping[int, int]],
    num_members: int,
    shared: Sequence[int],
    forced: Sequence[int],
    total: int,
    floors: np.ndarray,
    caps: np.ndarray,
) -> tuple[list[tuple[int, int, int]], np.ndarray, np.ndarray]:
    """The optimal ``(topic, member, units)`` flows, and the members whose ``floors`` were too
    high or ``caps`` too low for the flow to be sure (then the flows are not used)."""
    T, M = len(shared), num_members
    source, sink = T + M, T + M + 1
    weight = sum(sum(o.values()) for o in owned) + 1  # W: above the most moves any answer can make
    topic_of = np.asarray(shared, dtype=np.int64)
    sizes = np.asarray([partitions[t] for t in shared], dtype=np.int64)
    degree = np.asarray([len(subscribers[t]) for t in shared], dtype=np.int64)
    members = np.concatenate([np.asarray(subscribers[t], dtype=np.int64) for t in shared])
    arc_topic = np.repeat(np.arange(T, dtype=np.int64), degree)

    # what each member can take at most: the partitions of its shared topics
    reach = np.bincount(members, weights=sizes[arc_topic], minlength=M).astype(np.int64)
    kept_t, kept_m, kept_n = [], [], []
    for k, t in enumerate(shared):
        for m, n in sorted(owned[t].items()):
            if n > 0:
                kept_t.append(k)
                kept_m.append(m)
                kept_n.append(n)

    start = np.asarray(forced, dtype=np.int64)  # the convex cost starts after the forced units
    floor = np.minimum(floors, reach)  # units on the one linear first arc
    top = np.maximum(np.minimum(caps, reach), floor)  # units below the last arc
    units = top - floor  # unit arcs per member
    unit_member = np.repeat(np.arange(M, dtype=np.int64), units)
    offsets = np.arange(len(unit_member), dtype=np.int64) - np.repeat(np.cumsum(units) - units, units)
    floor_members = np.nonzero(floor > 0)[0]
    rest = reach - top
    rest_members = np.nonzero(rest > 0)[0]

    def unit_cost(member: np.ndarray, j: np.ndarray) -> np.ndarray:
        """The true cost of member's ``j+1``-th unit beyond its forced ones: ``W (2c + 1)``."""
        cost: np.ndarray = weight * (2 * (start[member] + j) + 1)
        return cost

    tails = np.concatenate(
        [
            np.full(T, source, dtype=np.int64),  # source -> topic
            np.asarray(kept_t, dtype=np.int64),  # topic -> member, kept partitions
            arc_topic,  # topic -> member, any partition
            T + floor_members,  # member -> sink, the first units at the price of the last of them
            T + unit_member,  # member -> sink, one unit each
            T + rest_members,  # member -> sink, beyond the cap
        ]
    )
    heads = np.concatenate(
        [
            np.arange(T, dtype=np.int64),
            T + np.asarray(kept_m, dtype=np.int64),
            T + members,
            np.full(len(floor_members) + len(unit_member) + len(rest_members), sink, dtype=np.int64),
        ]
    )
    capacities = np.concatenate(
        [
            sizes,
            np.asarray(kept_n, dtype=np.int64),
            sizes[arc_topic],
            floor[floor_members],
            np.ones(len(unit_member), dtype=np.int64),
            rest[rest_members],
        ]
    )
    costs = np.concatenate(
        [
            np.zeros(T, dtype=np.int64),
            np.zeros(len(kept_t), dtype=np.int64),
            np.ones(len(arc_topic), dtype=np.int64),
            unit_cost(floor_members, floor[floor_members] - 1),
            unit_cost(unit_member, floor[unit_member] + offsets),
            unit_cost(rest_members, top[rest_members]),
        ]
    )
    solver = min_cost_flow.SimpleMinCostFlow()
    arcs = solver.add_arcs_with_capacity_and_unit_cost(tails, heads, capacities, costs)
    solver.set_nodes_supplies(np.asarray([source, sink], dtype=np.int64), np.asarray([total, -total]))
    status = solver.solve()
    if status != solver.OPTIMAL:
        raise RuntimeError(f"min-cost flow of the uniform assignor ended with status {status}")
    flow = solver.flows(arcs)
    first = T
    kept_flow = flow[first : first + len(kept_t)]
    first += len(kept_t)
    moved = flow[first : first + len(arc_topic)]
    beyond = flow[len(flow) - len(rest_members) :]
    # exact where every member took at least floor - 1 units and at most one beyond the cap
    count = np.bincount(np.asarray(kept_m, dtype=np.int64), weights=kept_flow, minlength=M).astype(np.int64)
    count += np.bincount(members, weights=moved, minlength=M).astype(np.int64)
    low = np.nonzero((floor > 0) & (count < floor - 1))[0]
    high = rest_members[beyond > 1]
    if len(low) or len(high):
        return [], low, high
    out: list[tuple[int, int, int]] = []
    for k in np.nonzero(kept_flow)[0].tolist():
        out.append((shared[kept_t[k]], kept_m[k], int(kept_flow[k])))
    for k in np.nonzero(moved)[0].tolist():
        out.append((int(topic_of[arc_topic[k]]), int(members[k]), int(moved[k])))
    return out, low, high
