"""Seeded random consumer groups shared by the assignor tests and the benchmark."""

from __future__ import annotations

import random

from brokerlb.kafka.assignors import GroupSnapshot, Member, TopicPartition


def random_group(
    rng: random.Random,
    *,
    max_topics: int = 6,
    max_partitions: int = 16,
    max_members: int = 12,
    identical: float = 0.4,
    owned: float = 0.7,
    static: float = 0.0,
    rates: float = 0.0,
    stale: float = 0.0,
) -> GroupSnapshot:
    """A group with random subscriptions and disjoint previous ownership (one generation).

    ``identical``: chance that every member subscribes to every topic; ``owned``:
    chance that partitions have previous owners; ``static``: chance per member of a
    ``group_instance_id``; ``rates``: chance of measured rates; ``stale``: chance
    that owned partitions include deleted topics / partitions beyond the count.
    """
    topics = {f"topic-{i}": rng.randint(1, max_partitions) for i in range(rng.randint(1, max_topics))}
    names = sorted(topics)
    ids = sorted({f"consumer-{rng.randint(0, 999):03d}" for _ in range(rng.randint(1, max_members))})
    everything = rng.random() < identical
    owners: dict[TopicPartition, str] = {}
    if rng.random() < owned:
        share = rng.random()
        for t, n in topics.items():
            for p in range(n):
                if rng.random() < share:
                    owners[TopicPartition(t, p)] = rng.choice(ids)
    if rng.random() < stale:
        for mid in ids:
            owners[TopicPartition("deleted-topic", rng.randint(0, 3))] = mid
            t = rng.choice(names)
            owners[TopicPartition(t, topics[t] + rng.randint(0, 3))] = mid
    members = {}
    for mid in ids:
        subs = tuple(names) if everything else tuple(sorted(rng.sample(names, rng.randint(1, len(names)))))
        mine = tuple(sorted(tp for tp, o in owners.items() if o == mid))
        instance = f"host-{rng.randint(0, 99):02d}-{mid}" if rng.random() < static else None
        members[mid] = Member(mid, subs, mine, 1 if mine else None, instance)
    measured = {}
    if rng.random() < rates:
        measured = {t: tuple(round(rng.paretovariate(1.5), 3) for _ in range(n)) for t, n in topics.items()}
    return GroupSnapshot(members, topics, measured)


def churn(
    rng: random.Random, group: GroupSnapshot, assignment: dict[str, list[TopicPartition]], generation: int
) -> GroupSnapshot:
    """The next rebalance: members own what they were given; some leave, some join, some resubscribe."""
    names = sorted(group.partitions)
    members = {}
    for mid, m in group.members.items():
        if rng.random() < 0.2 and len(group.members) > 1:
            continue  # left
        topics = m.topics
        if rng.random() < 0.1:
            topics = tuple(sorted(rng.sample(names, rng.randint(1, len(names)))))
        members[mid] = Member(
            mid, topics, tuple(sorted(assignment.get(mid, ()))), generation, m.group_instance_id
        )
    for _ in range(rng.randint(0, 2)):
        mid = f"consumer-{rng.randint(0, 999):03d}-new{generation}"
        members[mid] = Member(mid, tuple(sorted(rng.sample(names, rng.randint(1, len(names))))))
    return GroupSnapshot(members, group.partitions, group.rates)
