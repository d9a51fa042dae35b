"""The one checker for consumer-group assignments, used by tests, benchmarks and the CLI.

:func:`check_assignment` validates a target assignment:

* every member named is a group member;
* each partition is owned at most once, and only by a member subscribed to its topic;
* (``complete``) every partition of every subscribed topic is owned;
* balance, by kind:

  - ``"count"`` -- KIP-54's definition: counts differ by at most one, or no
    member holding two or more partitions more than another has a partition the
    other could take;
  - ``"global"`` -- the counts minimise ``sum c**2`` over all complete
    assignments: no *chain* of moves (``A`` hands a partition to ``B``, ``B`` one to
    ``C`` ..., each to a subscriber of the partition's topic) takes a partition
    from a member with ``c`` to one with ``c - 2`` or fewer; for equal
    subscriptions, counts within one (the ``uniform`` assignor's promise);
  - ``"per_topic"`` -- within each topic, its subscribers' counts differ by at
    most one (Range's promise);
  - ``"load"`` -- no partition (rate ``r > 0``) could move from its owner to
    another subscribed member and leave that member more than ``tolerance``
    below the owner's current load (``receiver + r < owner - tolerance``);
  - ``"none"``.

:func:`check_cooperative_round` adds KIP-429's rule for one round: nobody is
given a partition another member still owns.

Every failure raises :class:`~brokerlb.testing.invariants.InvariantViolation`
whose message prints the whole input (group and assignment as JSON), so it can
be replayed with ``brokerlb kafka assign``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Literal

from brokerlb.kafka.assignors.interface import PartitionAssignor, RebalanceProtocol
from brokerlb.kafka.assignors.result import GroupAssignment
from brokerlb.kafka.assignors.snapshot import GroupSnapshot, TopicPartition
from brokerlb.testing.invariants import InvariantViolation

__all__ = [
    "BalanceKind",
    "check_assignment",
    "check_assignor_result",
    "check_cooperative_round",
    "check_reconciliation_step",
]

BalanceKind = Literal["none", "count", "global", "per_topic", "load"]


def _fail(reason: str, group: GroupSnapshot, assignment: Mapping[str, Iterable[TopicPartition]]) -> None:
    shown = {m: [str(tp) for tp in sorted(tps)] for m, tps in assignment.items()}
    raise InvariantViolation(
        f"{reason}\n  group: {json.dumps(group.to_json(), sort_keys=True)}"
        f"\n  assignment: {json.dumps(shown, sort_keys=True)}"
    )


def check_assignment(
    group: GroupSnapshot,
    assignment: Mapping[str, Iterable[TopicPartition]],
    *,
    balance: BalanceKind = "none",
    complete: bool = True,
    rates: Mapping[TopicPartition, float] | None = None,
    tolerance: float = 0.0,
    subscribed_only: bool = True,
) -> None:
    """Raise :class:`InvariantViolation` unless ``assignment`` is valid for ``group``.

    ``subscribed_only=False`` allows a member to hold partitions of topics it no
    longer subscribes to (mid-reconciliation, before it has revoked them).
    """
    listed: dict[str, list[TopicPartition]] = {m: list(tps) for m, tps in assignment.items()}
    assignment = listed
    owner: dict[TopicPartition, str] = {}
    for member, tps in listed.items():
        if member not in group.members:
            _fail(f"member {member!r} is not in the group", group, assignment)
        subscribed = set(group.members[member].topics)
        for tp in tps:
            if tp in owner:
                _fail(f"partition {tp} is owned by both {owner[tp]!r} and {member!r}", group, assignment)
            owner[tp] = member
            if not group.exists(tp):
                _fail(f"{member!r} owns {tp}, which does not exist", group, assignment)
            if subscribed_only and tp.topic not in subscribed:
                _fail(f"{member!r} owns {tp} but does not subscribe to {tp.topic!r}", group, assignment)
    if complete:
        missing = [tp for tp in group.all_partitions() if tp not in owner]
        if missing:
            _fail(
                f"{len(missing)} partition(s) owned by nobody, first {[str(tp) for tp in missing[:10]]}",
                group,
                assignment,
            )
    if balance == "count":
        _check_count_balance(group, listed, owner)
    elif balance == "global":
        _check_count_balance(group, listed, owner)
        _check_global_balance(group, listed)
    elif balance == "per_topic":
        _check_per_topic_balance(group, listed)
    elif balance == "load":
        if rates is None:
            raise ValueError("balance='load' needs the partition rates")
        _check_load_balance(group, listed, owner, rates, tolerance)
    elif balance != "none":
        raise ValueError(f"unknown balance kind {balance!r}")


def _subscribers(group: GroupSnapshot) -> dict[str, list[str]]:
    subs: dict[str, list[str]] = {t: [] for t in group.partitions_per_topic()}
    for mid, m in group.members.items():
        for t in m.topics:
            if t in subs:
                subs[t].append(mid)
    return subs


def _check_count_balance(
    group: GroupSnapshot, assignment: dict[str, list[TopicPartition]], owner: dict[TopicPartition, str]
) -> None:
    counts = {m: len(assignment.get(m, ())) for m in group.members}
    for topic, members in _subscribers(group).items():
        poorest = min(members, key=lambda m: counts[m])
        for p in range(group.partitions[topic]):
            holder = owner.get(TopicPartition(topic, p))
            if holder is not None and counts[holder] >= counts[poorest] + 2:
                _fail(
                    f"unbalanced: {holder!r} has {counts[holder]} partitions and could hand {topic}-{p} to "
                    f"{poorest!r} which has {counts[poorest]}",
                    group,
                    assignment,
                )


def _check_global_balance(group: GroupSnapshot, assignment: dict[str, list[TopicPartition]]) -> None:
    """No chain of moves from a member with ``c`` partitions reaches one with ``c - 2`` or fewer.

    One multi-source search per distinct count ``v``: from every member holding
    ``v + 2`` or more, follow "holds a partition of a topic that member
    subscribes to"; reaching a member holding ``v`` or fewer is a violation.
    """
    counts = {m: len(assignment.get(m, ())) for m in group.members}
    subscribers = _subscribers(group)
    held_topics = {m: {tp.topic for tp in assignment.get(m, ())} for m in group.members}
    for v in sorted(set(counts.values())):
        frontier = [m for m, c in counts.items() if c >= v + 2]
        via: dict[str, str | None] = {m: None for m in frontier}
        seen_topics: set[str] = set()
        while frontier:
            step: list[str] = []
            for giver in frontier:
                for topic in sorted(held_topics[giver] - seen_topics):
                    seen_topics.add(topic)
                    for taker in subscribers.get(topic, ()):
                        if taker in via:
                            continue
                        via[taker] = giver
                        if counts[taker] <= v:
                            chain = [taker]
                            while (prev := via[chain[-1]]) is not None:
                                chain.append(prev)
                            _fail(
                                "unbalanced: a chain of moves "
                                + " -> ".join(f"{m!r} ({counts[m]})" for m in reversed(chain))
                                + f" would take a partition from a member with {counts[chain[-1]]} "
                                f"to one with {counts[taker]}",
                                group,
                                assignment,
                            )
                        step.append(taker)
            frontier = step


def _check_per_topic_balance(group: GroupSnapshot, assignment: dict[str, list[TopicPartition]]) -> None:
    for topic, members in _subscribers(group).items():
        per = {m: sum(1 for tp in assignment.get(m, ()) if tp.topic == topic) for m in members}
        if per and max(per.values()) - min(per.values()) > 1:
            _fail(f"topic {topic!r} unbalanced among its subscribers: {per}", group, assignment)


def _check_load_balance(
    group: GroupSnapshot,
    assignment: dict[str, list[TopicPartition]],
    owner: dict[TopicPartition, str],
    rates: Mapping[TopicPartition, float],
    tolerance: float,
) -> None:
    loads = {m: sum(rates[tp] for tp in assignment.get(m, ())) for m in group.members}
    for topic, members in _subscribers(group).items():
        by_load = sorted(members, key=lambda m: loads[m])[:2]
        for p in range(group.partitions[topic]):
            tp = TopicPartition(topic, p)
            holder = owner.get(tp)
            if holder is None:
                continue
            receiver = next((m for m in by_load if m != holder), None)
            if receiver is None:
                continue
            rate = rates[tp]
            if rate > 0 and loads[receiver] + rate < loads[holder] - tolerance:
                _fail(
                    f"unbalanced load: {tp} (rate {rate:g}) could move from {holder!r} (load {loads[holder]:g}) "
                    f"to {receiver!r} (load {loads[receiver]:g}) and leave it more than {tolerance:g} below",
                    group,
                    assignment,
                )


def check_cooperative_round(
    group: GroupSnapshot,
    result: GroupAssignment,
    *,
    balance: BalanceKind = "none",
    rates: Mapping[TopicPartition, float] | None = None,
    tolerance: float = 0.0,
) -> None:
    """Check one cooperative round: the target is valid and nobody gets a partition still owned elsewhere."""
    check_assignment(group, result.target(), balance=balance, rates=rates, tolerance=tolerance)
    claimants: dict[TopicPartition, set[str]] = {}
    for mid, m in group.members.items():
        for tp in m.owned:
            claimants.setdefault(tp, set()).add(mid)
    for mid, tps in result.assignment.items():
        for tp in tps:
            others = claimants.get(tp, set()) - {mid}
            if others:
                _fail(
                    f"{mid!r} is given {tp} while {sorted(others)} still own(s) it", group, result.assignment
                )
    for mid, tps in result.pending.items():
        for tp in tps:
            if not claimants.get(tp, set()) - {mid}:
                _fail(
                    f"{tp} is withheld from {mid!r} although no other member owns it",
                    group,
                    result.assignment,
                )


def check_reconciliation_step(
    group: GroupSnapshot,
    holdings: Mapping[str, Iterable[TopicPartition]],
    *,
    settled: bool,
    assignor: PartitionAssignor | None = None,
) -> None:
    """One step of KIP-848 reconciliation: what each member holds (assigned or not yet revoked).

    Always: members exist, partitions exist, no partition held by two members. Once
    ``settled`` (every member stable at the target epoch): every partition of a
    subscribed topic held, only by subscribers, and -- with ``assignor`` -- the
    holdings are the assignor's answer for the group with its promised balance.
    """
    check_assignment(group, holdings, complete=settled, subscribed_only=settled)
    if settled and assignor is not None:
        result = assignor.assign(group)
        check_assignor_result(assignor, group, result)
        expected = {m: set(tps) for m, tps in result.target().items()}
        held = {m: set(holdings.get(m, ())) for m in group.members}
        if held != expected:
            _fail(f"settled holdings differ from the {assignor.name} target", group, holdings)


def check_assignor_result(assignor: PartitionAssignor, group: GroupSnapshot, result: GroupAssignment) -> None:
    """Check ``result`` against what ``assignor`` promises (its balance kind and protocol).

    Range: balanced per topic; RoundRobin: balanced when all subscriptions are
    equal; Sticky: KIP-54 balance; CooperativeSticky: a valid cooperative round
    towards a KIP-54-balanced target; load-aware: a valid round towards a
    load-balanced target with the assignor's own tolerance. Server-side (KIP-848)
    assignors answer with the target only (nothing pending): ``uniform`` is
    globally balanced (its stickiness is checked by its own tests),
    ``range-server`` balanced per topic.
    """
    from brokerlb.kafka.assignors.load_aware import LoadAwareAssignor, partition_rates

    if isinstance(assignor, LoadAwareAssignor):
        check_cooperative_round(
            group,
            result,
            balance="load",
            rates=partition_rates(group),
            tolerance=assignor.tolerance_for(group),
        )
    elif assignor.name == "cooperative-sticky":
        check_cooperative_round(group, result, balance="count")
    elif assignor.name == "sticky":
        check_assignment(group, result.assignment, balance="count")
    elif assignor.name in ("range", "range-server"):
        check_assignment(group, result.assignment, balance="per_topic")
    elif assignor.name == "uniform":
        check_assignment(group, result.assignment, balance="global")
    elif assignor.name == "roundrobin":
        check_assignment(
            group, result.assignment, balance="count" if group.all_subscriptions_equal() else "none"
        )
    elif assignor.protocol is RebalanceProtocol.CONSUMER:
        check_assignment(group, result.assignment)
    else:
        check_cooperative_round(group, result)
    if assignor.protocol is RebalanceProtocol.CONSUMER and any(result.pending.values()):
        _fail(
            "a server-side assignor withholds partitions (the coordinator does that)", group, result.pending
        )
