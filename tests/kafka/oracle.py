"""Brute-force oracle for the uniform assignor's guarantee, on groups small enough to enumerate.

Every complete assignment (each partition of a subscribed topic to one of its
topic's subscribers) is enumerated -- up to 4**8 = 65,536 for 4 members and 8
partitions -- and scored by ``sum c**2`` (balance) and by the partitions whose
valid previous owner (``resolve_owners``) differs from the new owner (moves).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from brokerlb.kafka.assignors import GroupSnapshot, TopicPartition, resolve_owners

MAX_ASSIGNMENTS = 1 << 17


@dataclass(frozen=True)
class OracleAnswer:
    best_balance: int  # min sum c**2
    best_moves: int  # min moves among assignments reaching best_balance
    assignments: int  # how many were enumerated


def sum_of_squares(group: GroupSnapshot, assignment: dict[str, list[TopicPartition]]) -> int:
    return sum(len(assignment.get(m, ())) ** 2 for m in group.members)


def moves(group: GroupSnapshot, assignment: dict[str, list[TopicPartition]]) -> int:
    previous = resolve_owners(group).owner_of()
    owner = {tp: m for m, tps in assignment.items() for tp in tps}
    return sum(1 for tp, before in previous.items() if tp in owner and owner[tp] != before)


def oracle(group: GroupSnapshot) -> OracleAnswer:
    members = sorted(group.members)
    index = {m: i for i, m in enumerate(members)}
    partitions = group.all_partitions()
    choices = [[index[m] for m in members if tp.topic in group.members[m].topics] for tp in partitions]
    size = 1
    for c in choices:
        size *= len(c)
    if size > MAX_ASSIGNMENTS:
        raise ValueError(f"group too large to enumerate ({size} assignments)")
    if not partitions:
        return OracleAnswer(0, 0, 1)
    combos = np.array(list(itertools.product(*choices)), dtype=np.int8)  # (N, P): owner per partition
    counts = np.stack([(combos == i).sum(axis=1) for i in range(len(members))], axis=1)
    balance = (counts.astype(np.int64) ** 2).sum(axis=1)
    previous = resolve_owners(group).owner_of()
    before = np.array([index[previous[tp]] if tp in previous else -1 for tp in partitions], dtype=np.int8)
    moved = ((before >= 0) & (combos != before)).sum(axis=1)
    best = int(balance.min())
    return OracleAnswer(best, int(moved[balance == best].min()), len(combos))
