"""The server-side ``uniform`` and ``range-server`` assignors (KIP-848).

The uniform assignor's guarantee (module docstring of ``brokerlb.kafka.assignors.uniform``):
balance = minimal ``sum c**2``; stickiness = fewest moves among balanced assignments;
deterministic, independent of input order, a second run is a no-op. Checked against the
brute-force oracle on groups of up to 4 members x 4 topics (8 partitions), and on random
event sequences (joins, leaves, subscription changes, partition additions).
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerlb.kafka.assignors import (
    GroupSnapshot,
    Member,
    RangeAssignor,
    ServerRangeAssignor,
    TopicPartition,
    UniformAssignor,
    resolve_owners,
)
from brokerlb.kafka.checker import check_assignment, check_assignor_result
from tests.kafka.oracle import moves, oracle, sum_of_squares

UNIFORM = UniformAssignor()


def tps(spec: str) -> list[TopicPartition]:
    out = []
    for item in spec.split():
        topic, part = item.rsplit("p", 1)
        out.append(TopicPartition(topic, int(part)))
    return sorted(out)


def group(members: dict, partitions: dict) -> GroupSnapshot:
    return GroupSnapshot.from_json({"members": members, "partitions": partitions})


# --------------------------------------------------------------------------- examples


def test_docstring_example_one_member_joins():
    g = group(
        {
            "A": {"topics": ["t0"], "owned": {"t0": [0, 1, 2]}},
            "B": {"topics": ["t0"], "owned": {"t0": [3, 4, 5]}},
            "C": {"topics": ["t0"]},
        },
        {"t0": 6},
    )
    result = UNIFORM.assign(g)
    assert result.assignment == {"A": tps("t0p0 t0p1"), "B": tps("t0p3 t0p4"), "C": tps("t0p2 t0p5")}
    assert result.moved == 2 and result.pending == {"A": [], "B": [], "C": []}


def test_extra_slot_goes_to_the_biggest_holder_where_kafka_may_move_one():
    # Kafka 4.x gives the P % M extra slot to the first member of its map; if that is A, B gives one up
    g = group(
        {"A": {"topics": ["t"], "owned": {"t": [0, 1]}}, "B": {"topics": ["t"], "owned": {"t": [2, 3, 4]}}},
        {"t": 5},
    )
    result = UNIFORM.assign(g)
    assert result.moved == 0 and result.assignment == {"A": tps("tp0 tp1"), "B": tps("tp2 tp3 tp4")}


def test_heterogeneous_chain_kafka_javadoc_9_10_11():
    # M1 on t1; M2 on t1, t2; M3 on t2 (Kafka's javadoc for its local balance): global balance is 10/10/10
    g = group(
        {
            "M1": {"topics": ["t1"], "owned": {"t1": list(range(9))}},
            "M2": {"topics": ["t1", "t2"], "owned": {"t1": list(range(9, 15)), "t2": list(range(0, 4))}},
            "M3": {"topics": ["t2"], "owned": {"t2": list(range(4, 15))}},
        },
        {"t1": 15, "t2": 15},
    )
    result = UNIFORM.assign(g)
    assert sorted(len(v) for v in result.assignment.values()) == [10, 10, 10]
    assert result.moved == 2  # a chain: M3 hands a t2 partition to M2, M2 a t1 partition to M1
    check_assignor_result(UNIFORM, g, result)


def test_unsubscribed_and_stale_ownership_is_released():
    g = group(
        {"A": {"topics": ["t1"], "owned": {"t0": [0], "t1": [0]}}, "B": {"topics": ["t0"]}},
        {"t0": 1, "t1": 1},
    )
    result = UNIFORM.assign(g)
    assert result.assignment == {"A": tps("t1p0"), "B": tps("t0p0")}
    assert result.revoked == {"A": tps("t0p0"), "B": []}


def test_empty_group_and_no_topics():
    assert UNIFORM.assign(GroupSnapshot({}, {"t": 3})).assignment == {}
    g = group({"A": {"topics": ["missing"]}}, {"t": 2})
    assert UNIFORM.assign(g).assignment == {"A": []}


# --------------------------------------------------------------------------- random groups

TOPIC_NAMES = ["t0", "t1", "t2", "t3"]


@st.composite
def small_groups(draw, max_members=4, max_topics=4, max_total=8):
    """Groups the oracle can enumerate; previous owners random (sometimes non-subscribers, stale)."""
    n_topics = draw(st.integers(1, max_topics))
    counts = {}
    total = 0
    for t in TOPIC_NAMES[:n_topics]:
        n = draw(st.integers(1, max(1, min(3, max_total - total - (n_topics - len(counts) - 1)))))
        counts[t] = n
        total += n
    ids = [f"m{i}" for i in range(draw(st.integers(1, max_members)))]
    homogeneous = draw(st.booleans())
    subs = {}
    for m in ids:
        subs[m] = (
            list(counts)
            if homogeneous
            else draw(st.lists(st.sampled_from(list(counts)), min_size=0, max_size=n_topics, unique=True))
        )
    owned: dict[str, dict[str, list[int]]] = {m: {} for m in ids}
    for t, n in counts.items():
        for p in range(n):
            owner = draw(st.sampled_from([None, *ids]))
            if owner is not None:
                owned[owner].setdefault(t, []).append(p)
    members = {m: {"topics": subs[m], "owned": owned[m], "generation": 1} for m in ids}
    return group(members, counts)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_groups())
def test_uniform_matches_the_brute_force_oracle(g):
    result = UNIFORM.assign(g)
    check_assignor_result(UNIFORM, g, result)
    best = oracle(g)
    assert sum_of_squares(g, result.assignment) == best.best_balance
    assert result.moved == moves(g, result.assignment) == best.best_moves


def test_oracle_sees_what_kafkas_homogeneous_builder_would_do():
    # the oracle itself: A owns 2, B owns 3 of 5; giving A the extra slot (Kafka's map order) moves 1
    g = group(
        {"A": {"topics": ["t"], "owned": {"t": [0, 1]}}, "B": {"topics": ["t"], "owned": {"t": [2, 3, 4]}}},
        {"t": 5},
    )
    kafka_like = {"A": tps("tp0 tp1 tp2"), "B": tps("tp3 tp4")}
    assert sum_of_squares(g, kafka_like) == oracle(g).best_balance and moves(g, kafka_like) == 1
    assert oracle(g).best_moves == 0


def shuffled(g: GroupSnapshot, rng: random.Random) -> GroupSnapshot:
    ids = list(g.members)
    rng.shuffle(ids)
    topics = list(g.partitions)
    rng.shuffle(topics)
    members = {}
    for mid in ids:
        m = g.members[mid]
        owned = list(m.owned)
        rng.shuffle(owned)
        members[mid] = Member(
            mid, tuple(rng.sample(m.topics, len(m.topics))), tuple(owned), m.generation, m.group_instance_id
        )
    return GroupSnapshot(members, {t: g.partitions[t] for t in topics})


def owning(g: GroupSnapshot, target: dict[str, list[TopicPartition]], generation: int) -> GroupSnapshot:
    return GroupSnapshot(
        {m: Member(m, g.members[m].topics, tuple(target[m]), generation) for m in g.members}, g.partitions
    )


def is_homogeneous(g: GroupSnapshot) -> bool:
    counts = g.partitions_per_topic()
    return len({tuple(t for t in m.topics if t in counts) for m in g.members.values()}) <= 1


def minimal_homogeneous_moves(g: GroupSnapshot) -> int:
    """Independent formula: extra slots to the biggest holders; moves = owned - kept."""
    counts = g.partitions_per_topic()
    total, n = sum(counts.values()), len(g.members)
    q, r = divmod(total, n)
    owners = resolve_owners(g)
    held = sorted((sum(1 for tp in tps if tp.topic in counts) for tps in owners.owned.values()), reverse=True)
    kept = sum(min(h, q + 1 if i < r else q) for i, h in enumerate(held))
    return len(owners.owner_of()) - kept


def check_step(g: GroupSnapshot, rng: random.Random, with_oracle: bool) -> dict[str, list[TopicPartition]]:
    result = UNIFORM.assign(g)
    check_assignor_result(UNIFORM, g, result)  # complete, subscribers only, globally balanced
    if is_homogeneous(g) and g.members and g.partitions_per_topic():
        sizes = [len(v) for v in result.assignment.values()]
        assert max(sizes) - min(sizes) <= 1
        assert result.moved == minimal_homogeneous_moves(g)
    if with_oracle:
        best = oracle(g)
        assert (sum_of_squares(g, result.assignment), result.moved) == (best.best_balance, best.best_moves)
    assert UNIFORM.assign(shuffled(g, rng)).assignment == result.assignment  # input order does not matter
    again = UNIFORM.assign(owning(g, result.assignment, 99))
    assert again.assignment == result.assignment and again.moved == 0  # second run: a no-op
    return result.assignment


events = st.lists(
    st.tuples(
        st.sampled_from(["join", "leave", "resubscribe", "add-partitions"]),
        st.integers(0, 1 << 30),
    ),
    min_size=1,
    max_size=12,
)


def apply_event(g: GroupSnapshot, target, kind: str, seed: int, generation: int, sizes) -> GroupSnapshot:
    rng = random.Random(seed)
    max_members, max_total = sizes
    topics = sorted(g.partitions)
    members = {m: Member(m, g.members[m].topics, tuple(target.get(m, ())), generation) for m in g.members}
    counts = dict(g.partitions)
    if kind == "join" and len(members) < max_members:
        mid = f"m{seed % 1000:03d}"
        members[mid] = Member(mid, tuple(sorted(rng.sample(topics, rng.randint(1, len(topics))))))
    elif kind == "leave" and len(members) > 1:
        members.pop(rng.choice(sorted(members)))
    elif kind == "resubscribe" and members:
        mid = rng.choice(sorted(members))
        m = members[mid]
        members[mid] = Member(
            mid, tuple(sorted(rng.sample(topics, rng.randint(0, len(topics))))), m.owned, generation
        )
    elif kind == "add-partitions" and sum(counts.values()) < max_total:
        t = rng.choice(topics)
        counts[t] += rng.randint(1, max_total - sum(counts.values()))
    return GroupSnapshot(members, counts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_groups(max_total=6), events)
def test_event_sequences_against_the_oracle(g, seq):
    rng = random.Random(0)
    target = check_step(g, rng, with_oracle=True)
    for generation, (kind, seed) in enumerate(seq, start=2):
        g = apply_event(g, target, kind, seed, generation, (4, 8))
        target = check_step(g, rng, with_oracle=True)


@st.composite
def larger_groups(draw):
    rng = random.Random(draw(st.integers(0, 1 << 30)))
    counts = {f"t{i}": rng.randint(1, 12) for i in range(rng.randint(1, 6))}
    names = sorted(counts)
    homogeneous = rng.random() < 0.4
    members = {}
    for i in range(rng.randint(1, 10)):
        subs = names if homogeneous else sorted(rng.sample(names, rng.randint(1, len(names))))
        members[f"m{i:03d}"] = Member(f"m{i:03d}", tuple(subs))
    return GroupSnapshot(members, counts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(larger_groups(), events)
def test_event_sequences_on_larger_groups(g, seq):
    rng = random.Random(1)
    target = check_step(g, rng, with_oracle=False)
    for generation, (kind, seed) in enumerate(seq, start=2):
        g = apply_event(g, target, kind, seed, generation, (12, 80))
        target = check_step(g, rng, with_oracle=False)


def test_one_join_and_one_leave_on_a_big_homogeneous_group():
    counts = {f"topic-{i:02d}": 40 for i in range(10)}
    names = tuple(sorted(counts))
    g = GroupSnapshot({f"c{i:03d}": Member(f"c{i:03d}", names) for i in range(30)}, counts)
    first = UNIFORM.assign(g).assignment
    owned = owning(g, first, 1)
    joined = GroupSnapshot({**owned.members, "new": Member("new", names)}, counts)
    result = UNIFORM.assign(joined)
    check_assignor_result(UNIFORM, joined, result)
    assert result.moved == minimal_homogeneous_moves(joined) == 12  # 400 / 31 = 12.9: the newcomer's 12
    left = GroupSnapshot({m: v for m, v in owned.members.items() if m != "c007"}, counts)
    result = UNIFORM.assign(left)
    assert result.moved == 0  # the leaver's partitions were unowned; nobody else moves


# --------------------------------------------------------------------------- range-server


def test_range_server_kafka_javadoc_example():
    g = group({"M0": {"topics": ["T1", "T2"]}, "M1": {"topics": ["T1", "T2"]}}, {"T1": 3, "T2": 3})
    result = ServerRangeAssignor().assign(g)
    assert result.assignment == {"M0": tps("T1p0 T1p1 T2p0 T2p1"), "M1": tps("T1p2 T2p2")}


def test_range_server_static_members_keep_their_ranges():
    g = group(
        {
            "zz": {"topics": ["t"], "group_instance_id": "I0"},
            "aa": {"topics": ["t"], "group_instance_id": "I1"},
        },
        {"t": 4},
    )
    assert ServerRangeAssignor().assign(g).assignment == {"zz": tps("tp0 tp1"), "aa": tps("tp2 tp3")}


def test_range_server_gives_the_classic_range_partitions():
    from tests.kafka.groups import random_group

    rng = random.Random(18)
    for _ in range(200):
        g = random_group(rng, static=0.3)
        ours = ServerRangeAssignor().assign(g)
        check_assignor_result(ServerRangeAssignor(), g, ours)
        check_assignment(g, ours.assignment, balance="per_topic")
        assert ours.assignment == RangeAssignor().assign(g).assignment
        assert ServerRangeAssignor().assign(shuffled(g, rng)).assignment == ours.assignment
