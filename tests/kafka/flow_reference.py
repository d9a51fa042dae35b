"""A second, independent exact solver of the uniform assignor's counts, for tests: pure Python.

It was the product's solver until the uniform assignor moved to a compiled one
(:mod:`brokerlb.kafka.assignors.balanced_flow`, whose docstring states the problem: the counts
``x[t][m]`` minimising ``sum c**2``, then the partitions moved, as a min-cost flow). Tests keep
it to check that one on groups too big for the brute-force oracle: the same optimum.

Here the same network is solved by the primal-dual method (successive shortest paths with
potentials; each phase a Dinic blocking flow on the zero-reduced-cost arcs), with every unit of
every member's convex arc explicit.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

__all__ = ["balanced_counts"]

_INF = float("inf")


class _Flow:
    """The residual network over topics ``0..T-1``, members ``T..T+M-1``, source and sink."""

    def __init__(
        self,
        partitions: Sequence[int],
        subscribers: Sequence[Sequence[int]],
        owned: Sequence[Mapping[int, int]],
        num_members: int,
    ) -> None:
        self.T = len(partitions)
        self.M = num_members
        self.source = self.T + self.M
        self.sink = self.source + 1
        self.free = list(partitions)  # residual capacity source -> topic
        self.subscribers = [sorted(s) for s in subscribers]
        self.topics_of: list[list[int]] = [[] for _ in range(num_members)]
        for t, subs in enumerate(self.subscribers):
            for m in subs:
                self.topics_of[m].append(t)
        self.owned = [dict(o) for o in owned]
        self.x: list[dict[int, int]] = [{} for _ in range(self.T)]
        self.count = [0] * num_members
        self.weight = sum(partitions) + 1  # W: one unit of balance outweighs every move
        self.potential = [0] * (self.sink + 1)

    # ------------------------------------------------------------------ residual arcs

    def arcs(self, node: int) -> list[tuple[int, int]]:
        """``(neighbour, cost)`` of every residual arc leaving ``node`` (cheapest parallel arc only)."""
        T = self.T
        if node == self.source:
            return [(t, 0) for t in range(T) if self.free[t] > 0]
        if node < T:
            x, owned = self.x[node], self.owned[node]
            return [(T + m, 0 if x.get(m, 0) < owned.get(m, 0) else 1) for m in self.subscribers[node]]
        if node == self.sink:
            return []
        m = node - T
        out = [(self.sink, self.weight * (2 * self.count[m] + 1))]
        for t in self.topics_of[m]:
            have = self.x[t].get(m, 0)
            if have > 0:
                out.append((t, -1 if have > self.owned[t].get(m, 0) else 0))
        return out

    def reduced(self, u: int, v: int, cost: int) -> int:
        return cost + self.potential[u] - self.potential[v]

    # ------------------------------------------------------------------ primal-dual

    def dijkstra(self) -> bool:
        """Shortest reduced distances from the source; fold them into the potentials."""
        n = self.sink + 1
        dist: list[float] = [_INF] * n
        dist[self.source] = 0
        heap = [(0, self.source)]
        while heap:
            d, u = heapq.heappop(heap)
            if d > dist[u]:
                continue
            for v, cost in self.arcs(u):
                nd = d + self.reduced(u, v, cost)
                if nd < dist[v]:
                    dist[v] = nd
                    heapq.heappush(heap, (nd, v))
        if dist[self.sink] == _INF:
            return False
        reach = max(d for d in dist if d != _INF)
        for v in range(n):
            self.potential[v] += int(dist[v] if dist[v] != _INF else reach)
        return True

    def admissible(self, u: int) -> list[tuple[int, int]]:
        """Arcs of zero reduced cost leaving ``u`` with their residual capacity (``arcs`` inlined)."""
        T, pot = self.T, self.potential
        pu = pot[u]
        if u == self.source:
            return [(t, self.free[t]) for t in range(T) if self.free[t] > 0 and pu == pot[t]]
        if u < T:
            x, owned = self.x[u], self.owned[u]
            out = []
            for m in self.subscribers[u]:
                v = T + m
                have, own = x.get(m, 0), owned.get(m, 0)
                if have < own:
                    if pu == pot[v]:
                        out.append((v, own - have))
                elif pu + 1 == pot[v]:
                    out.append((v, 1 << 62))
            return out
        if u == self.sink:
            return []
        m = u - T
        out = []
        if self.weight * (2 * self.count[m] + 1) + pu == pot[self.sink]:
            out.append((self.sink, 1))  # the next unit of this member costs more
        for t in self.topics_of[m]:
            have = self.x[t].get(m, 0)
            if have > 0:
                own = self.owned[t].get(m, 0)
                if have > own:
                    if pu - 1 == pot[t]:
                        out.append((t, have - own))
                elif pu == pot[t]:
                    out.append((t, have))
        return out

    def push(self, u: int, v: int, amount: int) -> None:
        T = self.T
        if u == self.source:
            self.free[v] -= amount
        elif v == self.sink:
            self.count[u - T] += amount
        elif u < T:
            m = v - T
            self.x[u][m] = self.x[u].get(m, 0) + amount
        else:
            m = u - T
            left = self.x[v][m] - amount
            if left:
                self.x[v][m] = left
            else:
                del self.x[v][m]

    def blocking_flows(self) -> None:
        """Push flow along zero-reduced-cost paths until the sink is cut off (Dinic)."""
        while True:
            level = {self.source: 0}
            order = [self.source]
            graph: dict[int, list[tuple[int, int]]] = {}
            for u in order:  # BFS; ``order`` grows while we walk it
                graph[u] = self.admissible(u)
                for v, cap in graph[u]:
                    if cap > 0 and v not in level:
                        level[v] = level[u] + 1
                        order.append(v)
            if self.sink not in level:
                return
            layered = {
                u: [(v, cap) for v, cap in arcs if cap > 0 and level.get(v) == level[u] + 1]
                for u, arcs in graph.items()
            }
            for u in layered:
                layered[u].reverse()  # popped from the end: lowest index first
            while self._augment(layered):
                pass

    def _augment(self, layered: dict[int, list[tuple[int, int]]]) -> bool:
        """One source->sink path in the layered graph (dead ends pruned); push its bottleneck."""
        path: list[int] = [self.source]
        caps: list[int] = []
        while path:
            u = path[-1]
            if u == self.sink:
                amount = min(caps)
                for i, cap in enumerate(caps):
                    a, b = path[i], path[i + 1]
                    self.push(a, b, amount)
                    arcs = layered[a]
                    if cap - amount > 0:
                        arcs[-1] = (b, cap - amount)
                    else:
                        arcs.pop()
                return True
            arcs = layered.get(u, [])
            if not arcs:
                path.pop()
                if caps:
                    caps.pop()
                    layered[path[-1]].pop()  # dead end: drop the arc into it
                continue
            v, cap = arcs[-1]
            path.append(v)
            caps.append(cap)
        return False

    def solve(self) -> None:
        while any(self.free) and self.dijkstra():
            self.blocking_flows()


def balanced_counts(
    partitions: Sequence[int],
    subscribers: Sequence[Sequence[int]],
    owned: Sequence[Mapping[int, int]],
    num_members: int,
) -> list[dict[int, int]]:
    """``x[t] = {member: count}``: balanced first (min ``sum c**2``), then fewest moves.

    ``partitions[t]`` is topic ``t``'s partition count, ``subscribers[t]`` the
    member indices subscribed to it (every topic has at least one),
    ``owned[t] = {member: n}`` how many of its partitions each subscriber validly
    owned before. Every partition is assigned.
    """
    for t, subs in enumerate(subscribers):
        if partitions[t] > 0 and not subs:
            raise ValueError(f"topic index {t} has partitions but no subscriber")
    flow = _Flow(partitions, subscribers, owned, num_members)
    flow.solve()
    return flow.x
