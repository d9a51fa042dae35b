import pytest

from brokerlb.kafka.assignors import GroupAssignment, GroupSnapshot, TopicPartition
from brokerlb.kafka.checker import check_assignment, check_cooperative_round
from brokerlb.testing.invariants import InvariantViolation

T = TopicPartition

GROUP = GroupSnapshot.from_json(
    {
        "members": {
            "A": {"topics": ["t", "u"], "owned": {"t": [0]}},
            "B": {"topics": ["t"]},
            "C": {"topics": ["t"]},
        },
        "partitions": {"t": 6, "u": 1},
    }
)


def test_valid_assignment_passes():
    check_assignment(
        GROUP,
        {"A": [T("t", 0), T("t", 1), T("u", 0)], "B": [T("t", 2), T("t", 3)], "C": [T("t", 4), T("t", 5)]},
        balance="count",
    )


@pytest.mark.parametrize(
    "assignment, message",
    [
        ({"Z": []}, "'Z' is not in the group"),
        ({"A": [T("t", 0)], "B": [T("t", 0)]}, "owned by both 'A' and 'B'"),
        ({"A": [T("t", 9)]}, "does not exist"),
        ({"B": [T("u", 0)]}, "does not subscribe to 'u'"),
        ({"A": [T("t", 0)]}, "owned by nobody"),
    ],
)
def test_ownership_violations(assignment, message):
    with pytest.raises(InvariantViolation, match=message) as info:
        check_assignment(GROUP, assignment)
    text = str(info.value)
    assert '"partitions": {"t": 6, "u": 1}' in text and "assignment:" in text  # prints the whole input


def test_count_balance():
    unbalanced = {
        "A": [T("u", 0), T("t", 0), T("t", 1), T("t", 2)],
        "B": [T("t", 3), T("t", 4)],
        "C": [T("t", 5)],
    }
    with pytest.raises(InvariantViolation, match="could hand"):
        check_assignment(GROUP, unbalanced, balance="count")
    # A has 2 more than C, but only u-0 could not move to C: balanced by KIP-54's definition
    g = GroupSnapshot.from_json(
        {"members": {"A": {"topics": ["u"]}, "C": {"topics": ["t"]}}, "partitions": {"t": 1, "u": 3}}
    )
    check_assignment(g, {"A": [T("u", 0), T("u", 1), T("u", 2)], "C": [T("t", 0)]}, balance="count")


def test_per_topic_and_load_balance():
    g = GroupSnapshot.from_json(
        {"members": {"A": {"topics": ["t"]}, "B": {"topics": ["t"]}}, "partitions": {"t": 4}}
    )
    with pytest.raises(InvariantViolation, match="unbalanced among its subscribers"):
        check_assignment(g, {"A": [T("t", 0), T("t", 1), T("t", 2)], "B": [T("t", 3)]}, balance="per_topic")
    rates = {T("t", 0): 8.0, T("t", 1): 1.0, T("t", 2): 1.0, T("t", 3): 1.0}
    check_assignment(
        g, {"A": [T("t", 0)], "B": [T("t", 1), T("t", 2), T("t", 3)]}, balance="load", rates=rates
    )
    with pytest.raises(InvariantViolation, match="unbalanced load"):
        check_assignment(
            g, {"A": [T("t", 0), T("t", 1)], "B": [T("t", 2), T("t", 3)]}, balance="load", rates=rates
        )
    # within tolerance it is accepted
    check_assignment(
        g,
        {"A": [T("t", 0), T("t", 1)], "B": [T("t", 2), T("t", 3)]},
        balance="load",
        rates=rates,
        tolerance=6.5,
    )
    with pytest.raises(ValueError, match="rates"):
        check_assignment(g, {"A": [T("t", 0)]}, balance="load", complete=False)
    with pytest.raises(ValueError, match="unknown balance"):
        check_assignment(g, {}, balance="fair", complete=False)


def test_cooperative_round_rules():
    ok = GroupAssignment(
        {"A": [T("u", 0), T("t", 5)], "B": [T("t", 1), T("t", 2)], "C": [T("t", 3), T("t", 4)]},
        {"A": [T("t", 0)], "B": [], "C": []},
        {"A": [], "B": [], "C": [T("t", 0)]},
        1,
    )
    check_cooperative_round(GROUP, ok, balance="count")
    stolen = GroupAssignment(
        {"A": [T("u", 0), T("t", 5)], "B": [T("t", 0), T("t", 1), T("t", 2)], "C": [T("t", 3), T("t", 4)]},
        {},
        {},
        1,
    )
    with pytest.raises(InvariantViolation, match="'B' is given t-0 while \\['A'\\] still own"):
        check_cooperative_round(GROUP, stolen)
    needless = GroupAssignment(
        {"A": [T("t", 0), T("u", 0)], "B": [T("t", 2)], "C": [T("t", 3), T("t", 4)]},
        {},
        {"B": [T("t", 1)], "C": [T("t", 5)]},
        0,
    )
    with pytest.raises(InvariantViolation, match="withheld from 'B' although no other member owns it"):
        check_cooperative_round(GROUP, needless)


def test_check_assignor_result_knows_each_assignors_promise():
    import random

    from brokerlb.kafka.assignors import ASSIGNORS, get_assignor
    from brokerlb.kafka.checker import check_assignor_result
    from tests.kafka.groups import random_group

    rng = random.Random(30)
    for _ in range(50):
        group = random_group(rng, rates=0.5, stale=0.2)
        for name in ASSIGNORS:
            assignor = get_assignor(name)
            check_assignor_result(assignor, group, assignor.assign(group))
    lopsided = GroupAssignment(
        {"A": [T("t", p) for p in range(6)] + [T("u", 0)], "B": [], "C": []}, {}, {}, 0
    )
    with pytest.raises(InvariantViolation, match="could hand"):
        check_assignor_result(get_assignor("sticky"), GROUP, lopsided)
