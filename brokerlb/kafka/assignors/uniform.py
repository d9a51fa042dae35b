"""Server-side ``uniform`` assignor (KIP-848, Kafka 4.x ``UniformAssignor``): balanced first, then sticky.

The group coordinator runs it to compute the *target* assignment; members reach
it through the reconciliation protocol (:mod:`brokerlb.kafka.group.reconciliation`).
The ``owned`` partitions of the snapshot are the members' previous target
assignment (a partition claimed twice resolves by generation, as everywhere in
:mod:`brokerlb.kafka.assignors`); a partition of a topic its owner no longer
subscribes to is released.

**Guarantee** (for any previous assignment, checked against a brute-force
oracle on small groups in ``tests/kafka/test_uniform_assignor.py``):

1. *Balance.* Every partition of every subscribed topic is assigned, only to a
   subscriber of its topic, and the member counts ``c`` minimise ``sum c**2``
   over all such assignments. Equivalently: no chain of single-partition moves
   (each to a subscriber of the moved partition's topic) can take a partition
   from a member with ``c`` partitions to a member with ``c - 2`` or fewer. When
   all members subscribe to the same topics (homogeneous) this is: counts differ
   by at most one, ``P % M`` members have ``P // M + 1``.
2. *Stickiness.* Among all assignments balanced in the sense of (1), the answer
   moves the fewest previously owned partitions (``GroupAssignment.moved`` is
   minimal). In particular, after one member joins or leaves a balanced group,
   no balanced assignment moves fewer partitions.
3. *Deterministic.* The answer depends on the snapshot's content only, not on
   the order of members or topics; running it again on its own answer (as the
   new ``owned``) returns the same assignment with nothing moved.

How:

* homogeneous -- ``q, r = divmod(P, M)``; the ``r`` extra slots go to the members
  that owned the most partitions (ties: member order), each member keeps its
  owned partitions up to its quota (lowest topic/partition first), and the rest
  are dealt in sorted order, a contiguous run per member in member order
  (Kafka's ``UniformHomogeneousAssignmentBuilder`` deals the same way). Kept =
  ``sum min(owned, quota)``, the most any balanced assignment keeps.
* heterogeneous -- per-topic counts from an exact min-cost flow
  (:func:`~brokerlb.kafka.assignors.balanced_flow.balanced_counts`, solved by
  OR-Tools' compiled network solver): balance, then moves; then each member keeps
  its lowest-numbered owned partitions of each topic up to its count and the rest
  of the topic is dealt in ascending order, members in index order.

Where Kafka 4.x differs (deviations, each toward the guarantee above):

* homogeneous: Kafka gives the ``P % M`` extra slots to the first members in its
  member map's iteration order, whatever they own, so it can move partitions no
  balanced assignment needs to move -- A owns 2, B owns 3 of 5 partitions: if A
  is visited first, A's quota is 3 and B gives one up; ours moves nothing;
* heterogeneous: Kafka keeps every still-subscribed partition, deals the rest
  topic by topic to the least loaded subscriber and then balances each topic's
  subscribers in up to 16 passes. That reaches only *local* balance (its own
  javadoc: three members at 9/10/11 that could be 10/10/10 through a chain) and
  does not minimise moves; ours is exact on both counts, at the cost of a flow
  computation (about 100-160 ms of CPU at 1,000 members x 1,000 topics x 50,000
  partitions, each member on 10 % of the topics: ``benchmarks/bench_server_assignors.py``).
* member order is ``MemberInfo``'s (static members first); Kafka's builders use
  member-map order. Rack awareness is not modelled (no rack data in the snapshot).

Worked example: t0 with 6 partitions; A owns 0-2, B owns 3-5, C joins. q=2, r=0:
A keeps 0-1, B keeps 3-4, C gets 2 and 5 -- two moves, the minimum.
No config keys.
"""

from __future__ import annotations

from brokerlb.kafka.assignors.balanced_flow import balanced_counts
from brokerlb.kafka.assignors.interface import RebalanceProtocol
from brokerlb.kafka.assignors.ownership import OwnerResolution, resolve_owners
from brokerlb.kafka.assignors.result import GroupAssignment, finish_assignment
from brokerlb.kafka.assignors.snapshot import GroupSnapshot, Member, TopicPartition, java_order, member_order

__all__ = ["UniformAssignor", "uniform_target"]


def _kept_candidates(member: Member, owners: OwnerResolution, subscribed: set[str]) -> list[TopicPartition]:
    """The member's valid owned partitions of topics it still subscribes to, sorted."""
    return sorted(tp for tp in owners.owned.get(member.member_id, ()) if tp.topic in subscribed)


def uniform_target(
    group: GroupSnapshot, owners: OwnerResolution | None = None
) -> dict[str, list[TopicPartition]]:
    """The uniform target ``{member: partitions}`` (every group member present, sorted lists)."""
    owners = owners if owners is not None else resolve_owners(group)
    counts = group.partitions_per_topic()
    members = sorted(group.members.values(), key=lambda m: (member_order(m), java_order(m.member_id)))
    distinct: dict[tuple[str, ...], tuple[str, ...]] = {}  # a member's topics -> its existing ones, sorted
    for m in members:
        if m.topics not in distinct:
            distinct[m.topics] = tuple(sorted(t for t in set(m.topics) if t in counts))
    subs = [distinct[m.topics] for m in members]
    if not members or not counts:
        return {m.member_id: [] for m in members}
    if len(set(subs)) == 1:
        return _homogeneous(group, members, counts, owners)
    return _heterogeneous(members, subs, counts, owners)


def _homogeneous(
    group: GroupSnapshot, members: list[Member], counts: dict[str, int], owners: OwnerResolution
) -> dict[str, list[TopicPartition]]:
    subscribed = set(counts)
    total = sum(counts.values())
    quota, extra = divmod(total, len(members))
    owned = [_kept_candidates(m, owners, subscribed) for m in members]
    # the extra slots go to the biggest holders (stable sort: member order on ties)
    by_holding = sorted(range(len(members)), key=lambda i: -min(len(owned[i]), quota + 1))
    quotas = [quota] * len(members)
    for i in by_holding[:extra]:
        quotas[i] += 1
    target: dict[str, list[TopicPartition]] = {}
    kept: set[TopicPartition] = set()
    for i, m in enumerate(members):
        keep = owned[i][: quotas[i]]
        target[m.member_id] = keep
        kept.update(keep)
    free = [tp for tp in group.all_partitions() if tp not in kept]
    pos = 0
    for i, m in enumerate(members):
        need = quotas[i] - len(target[m.member_id])
        if need > 0:
            target[m.member_id] = sorted(target[m.member_id] + free[pos : pos + need])
            pos += need
    return target


def _heterogeneous(
    members: list[Member], subs: list[tuple[str, ...]], counts: dict[str, int], owners: OwnerResolution
) -> dict[str, list[TopicPartition]]:
    topics = sorted(counts)
    index = {t: i for i, t in enumerate(topics)}
    subscribers: list[list[int]] = [[] for _ in topics]
    for i, topics_of_member in enumerate(subs):
        for t in topics_of_member:
            subscribers[index[t]].append(i)
    # topic -> member -> its owned partitions of the topic, lowest first
    owned_by: list[dict[int, list[TopicPartition]]] = [{} for _ in topics]
    for i, m in enumerate(members):
        for tp in _kept_candidates(m, owners, set(subs[i])):
            owned_by[index[tp.topic]].setdefault(i, []).append(tp)
    live = [ti for ti in range(len(topics)) if subscribers[ti]]
    x = balanced_counts(
        [counts[topics[ti]] for ti in live],
        [subscribers[ti] for ti in live],
        [{m: len(ps) for m, ps in owned_by[ti].items()} for ti in live],
        len(members),
    )
    # each member keeps its lowest-numbered owned partitions up to its count; the rest of the
    # topic is dealt in ascending order, members in index order
    given_to: list[list[TopicPartition]] = [[] for _ in members]
    new = tuple.__new__
    for k, ti in enumerate(live):
        topic, given, mine = topics[ti], x[k], owned_by[ti]
        kept: set[int] = set()
        need: list[tuple[int, int]] = []
        for i in sorted(given):
            n = given[i]
            keep = mine.get(i, [])[:n]
            if keep:
                given_to[i].extend(keep)
                kept.update(tp.partition for tp in keep)
                n -= len(keep)
            if n:
                need.append((i, n))
        if need:
            free = [p for p in range(counts[topic]) if p not in kept]
            pos = 0
            for i, n in need:
                given_to[i].extend([new(TopicPartition, (topic, p)) for p in free[pos : pos + n]])
                pos += n
    return {m.member_id: sorted(given_to[i]) for i, m in enumerate(members)}


class UniformAssignor:
    """KIP-848 ``uniform``: the target assignment, balanced then sticky (see the module docstring)."""

    name = "uniform"
    protocol = RebalanceProtocol.CONSUMER

    def assign(self, group: GroupSnapshot) -> GroupAssignment:
        owners = resolve_owners(group)
        return finish_assignment(group, uniform_target(group, owners), owners=owners)
