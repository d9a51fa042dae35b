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
* each member gets unit arcs for its first ``cap`` units beyond that (``cap``:
  the mean count, plus two) and one arc for the rest at the price of unit
  ``cap + 1``. That price is below the true convex one from there on, so a flow
  that uses the last arc for at most one unit is optimal for the true costs too
  (the two costs agree up to ``cap + 1`` units); if the solver's flow uses it for
  more, those members' ``cap`` is doubled and the flow solved again (the cost of a
  member far above the mean: a second solve);
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
    caps = np.full(num_members, -(-total // max(1, num_members)) + 2, dtype=np.int64)
    while True:
        flows, short = _solve(partitions, subscribers, owned, num_members, shared, forced, total, caps)
        if not len(short):
            break
        caps[short] *= 2
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
    caps: np.ndarray,
) -> tuple[list[tuple[int, int, int]], np.ndarray]:
    """The optimal ``(topic, member, units)`` flows, and the members whose ``caps`` were too
    small for them to be sure (then the flows are not used)."""
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

    units = np.minimum(reach, caps)  # unit arcs per member
    start = np.asarray(forced, dtype=np.int64)  # the convex cost starts after the forced units
    unit_member = np.repeat(np.arange(M, dtype=np.int64), units)
    offsets = np.arange(len(unit_member), dtype=np.int64) - np.repeat(np.cumsum(units) - units, units)
    rest = reach - units
    rest_members = np.nonzero(rest > 0)[0]

    tails = np.concatenate(
        [
            np.full(T, source, dtype=np.int64),  # source -> topic
            np.asarray(kept_t, dtype=np.int64),  # topic -> member, kept partitions
            arc_topic,  # topic -> member, any partition
            T + unit_member,  # member -> sink, one unit each
            T + rest_members,  # member -> sink, beyond cap
        ]
    )
    heads = np.concatenate(
        [
            np.arange(T, dtype=np.int64),
            T + np.asarray(kept_m, dtype=np.int64),
            T + members,
            np.full(len(unit_member), sink, dtype=np.int64),
            np.full(len(rest_members), sink, dtype=np.int64),
        ]
    )
    capacities = np.concatenate(
        [
            sizes,
            np.asarray(kept_n, dtype=np.int64),
            sizes[arc_topic],
            np.ones(len(unit_member), dtype=np.int64),
            rest[rest_members],
        ]
    )
    costs = np.concatenate(
        [
            np.zeros(T, dtype=np.int64),
            np.zeros(len(kept_t), dtype=np.int64),
            np.ones(len(arc_topic), dtype=np.int64),
            weight * (2 * (start[unit_member] + offsets) + 1),
            weight * (2 * (start[rest_members] + units[rest_members]) + 1),
        ]
    )
    solver = min_cost_flow.SimpleMinCostFlow()
    arcs = solver.add_arcs_with_capacity_and_unit_cost(tails, heads, capacities, costs)
    solver.set_nodes_supplies(np.asarray([source, sink], dtype=np.int64), np.asarray([total, -total]))
    status = solver.solve()
    if status != solver.OPTIMAL:
        raise RuntimeError(f"min-cost flow of the uniform assignor ended with status {status}")
    flow = solver.flows(arcs)
    beyond = flow[len(flow) - len(rest_members) :]
    short = rest_members[beyond > 1]
    if len(short):
        return [], short
    first = T
    out: list[tuple[int, int, int]] = []
    for k in np.nonzero(flow[first : first + len(kept_t)])[0].tolist():
        out.append((shared[kept_t[k]], kept_m[k], int(flow[first + k])))
    first += len(kept_t)
    moved = flow[first : first + len(arc_topic)]
    for k in np.nonzero(moved)[0].tolist():
        out.append((int(topic_of[arc_topic[k]]), int(members[k]), int(moved[k])))
    return out, short
