"""The campaign checker on synthetic histories: each invariant caught, and the legitimate cases passed."""

from __future__ import annotations

import pytest

from brokerlb.testing.history import HistoryEvent, history_line, parse_history_line
from brokerlb.testing.ownership_checker import CampaignFacts, check_campaign, percentile, serving_spans

S = 1_000_000_000
FULL = "t/ns/0x00000000_0xffffffff"
LEFT = "t/ns/0x00000000_0x80000000"
RIGHT = "t/ns/0x80000000_0xffffffff"
TOPICS = {f"persistent://t/ns/topic-{i}" for i in range(32)}


def ev(at_s: float, broker: str, pid: int, kind: str, bundle: str = FULL, **kw) -> HistoryEvent:
    return HistoryEvent(int(at_s * S), broker, pid, kind, bundle, **kw)


def facts(events, end_s=100.0, **kw) -> CampaignFacts:
    return CampaignFacts(events=list(events), end_ns=int(end_s * S), topics=set(TOPICS), **kw)


def test_lines_round_trip_and_torn_lines_are_skipped():
    e = ev(1.5, "a:1", 7, "acquire", session=0x1234, epoch=99, reason="lookup")
    assert parse_history_line(history_line(e)) == e
    assert parse_history_line(history_line(e)[:-8]) is None
    assert parse_history_line("") is None
    assert parse_history_line('{"at": 1, "broker": "a", "pid": 1, "kind": "bogus"}') is None
    assert parse_history_line("[1, 2]") is None


def test_a_clean_move_is_not_double_serving():
    v = check_campaign(
        facts(
            [
                ev(0, "a", 1, "acquire"),
                ev(0, "a", 1, "serve-start"),
                ev(5, "a", 1, "disable"),
                ev(5.1, "a", 1, "serve-stop"),
                ev(5.2, "a", 1, "release"),
                ev(5.3, "b", 2, "acquire"),
                ev(5.3, "b", 2, "serve-start"),
            ]
        )
    )
    assert v.double_serving == 0 and v.safe and v.spans == 2


def test_overlapping_spans_of_two_processes_are_double_serving():
    v = check_campaign(facts([ev(0, "a", 1, "serve-start"), ev(5, "b", 2, "serve-start", RIGHT)]))
    assert v.double_serving == 1 and not v.safe
    assert v.double_serving_ns == 95 * S
    assert "served t/ns/0x00000000_0xffffffff" in v.overlaps[0]


def test_disjoint_ranges_and_other_namespaces_do_not_overlap():
    v = check_campaign(
        facts(
            [
                ev(0, "a", 1, "serve-start", LEFT),
                ev(0, "b", 2, "serve-start", RIGHT),
                ev(0, "c", 3, "serve-start", "t/other/0x00000000_0xffffffff"),
            ]
        )
    )
    assert v.double_serving == 0


def test_frozen_and_dead_processes_accept_nothing():
    # a is frozen from 10 to 20 s; b takes the bundle at 16 s; a records its stop at 21 s with the
    # time its own rule stopped it (its session deadline, 12 s) -- no overlap
    events = [
        ev(0, "a", 1, "serve-start"),
        ev(12, "a", 1, "serve-stop", reason="session unconfirmed"),
        ev(16, "b", 2, "serve-start"),
    ]
    assert check_campaign(facts(events, frozen={1: [(10 * S, 20 * S)]})).double_serving == 0
    # without the rule (a kept serving after it resumed at 20 s until it noticed at 21 s): caught
    late = [ev(0, "a", 1, "serve-start"), ev(21, "a", 1, "lost"), ev(16, "b", 2, "serve-start")]
    v = check_campaign(facts(late, frozen={1: [(10 * S, 20 * S)]}))
    assert v.double_serving == 1 and v.double_serving_ns == 1 * S
    # killed at 10 s: its open span ends there
    killed = [ev(0, "a", 1, "serve-start"), ev(16, "b", 2, "serve-start")]
    assert check_campaign(facts(killed, deaths={1: 10 * S})).double_serving == 0


def test_a_restarted_broker_is_another_process():
    events = [ev(0, "a", 1, "serve-start"), ev(3, "a", 2, "serve-start")]
    assert check_campaign(facts(events)).double_serving == 1
    assert check_campaign(facts(events, deaths={1: 2 * S})).double_serving == 0


def test_reownership_times_and_the_bound():
    events = [
        ev(0, "a", 1, "serve-start", LEFT),
        ev(0, "a", 1, "serve-start", RIGHT),
        ev(15.5, "b", 2, "serve-start", LEFT),  # 5.5 s after the kill
        ev(19, "c", 3, "serve-start", RIGHT),  # 9 s: over 5 + 2
    ]
    v = check_campaign(facts(events, deaths={1: 10 * S}))
    assert sorted(v.reownership_ns) == [int(5.5 * S), 9 * S]
    assert len(v.slow_reownership) == 1 and RIGHT in v.slow_reownership[0]
    assert v.summary()["reownership_ms_max"] == 9000.0
    # no other fault in the window: the slow one is slow on its own
    assert v.slow_reownership_alone == v.slow_reownership and "no other fault" in v.slow_reownership[0]
    assert sorted(v.reownership_alone_ns) == sorted(v.reownership_ns)


def test_a_reownership_with_another_fault_in_its_window_is_not_alone():
    events = [
        ev(0, "a", 1, "serve-start", LEFT),
        ev(0, "c", 3, "serve-start", RIGHT),
        ev(19, "b", 2, "serve-start", LEFT),  # 9 s after the kill of pid 1
    ]
    # the leader (pid 3) was frozen from 12 s to 14 s, inside the window: the slow one is compound
    v = check_campaign(facts(events, deaths={1: 10 * S}, frozen={3: [(12 * S, 14 * S)]}))
    assert len(v.slow_reownership) == 1 and "meanwhile: pid 3 frozen" in v.slow_reownership[0]
    assert v.slow_reownership_alone == [] and v.reownership_alone_ns == []
    summary = v.summary()
    assert summary["slow_reownership"] == 1 and summary["slow_reownership_alone"] == 0
    assert summary["reownership_alone_count"] == 0 and summary["reownership_alone_ms_max"] is None
    # a death of another broker long before the window does not count
    v = check_campaign(facts(events, deaths={1: 10 * S, 3: 1 * S}))
    assert len(v.slow_reownership_alone) == 1


def test_a_short_pause_is_not_a_death_and_a_long_one_is():
    events = [ev(0, "a", 1, "serve-start"), ev(30, "a", 1, "serve-stop"), ev(31, "b", 2, "serve-start")]
    short = check_campaign(facts(events, frozen={1: [(10 * S, 13 * S)]}))
    assert short.reownership_ns == [] and short.not_reowned == []
    long = [ev(0, "a", 1, "serve-start"), ev(16, "a", 1, "lost"), ev(16.5, "b", 2, "serve-start")]
    v = check_campaign(facts(long, frozen={1: [(10 * S, 16 * S)]}))
    assert v.reownership_ns == [int(6.5 * S)] and v.double_serving == 0


def test_a_bundle_never_served_again_is_reported_unless_no_topic_uses_it():
    events = [ev(0, "a", 1, "serve-start")]
    assert len(check_campaign(facts(events, deaths={1: 10 * S})).not_reowned) == 1
    quiet = CampaignFacts(events=events, end_ns=100 * S, deaths={1: 10 * S}, topics=set())
    assert check_campaign(quiet).not_reowned == []


def test_split_children_count_as_served_again():
    events = [ev(0, "a", 1, "serve-start"), ev(12, "b", 2, "serve-start", LEFT)]
    v = check_campaign(facts(events, deaths={1: 10 * S}))
    assert v.reownership_ns == [2 * S]


def test_stuck_transitions():
    ok = [ev(0, "a", 1, "disable"), ev(29, "a", 1, "release")]
    assert check_campaign(facts(ok)).stuck_transitions == []
    stuck = [ev(0, "a", 1, "disable"), ev(31, "a", 1, "release")]
    assert len(check_campaign(facts(stuck)).stuck_transitions) == 1
    never = [ev(0, "a", 1, "disable")]
    assert len(check_campaign(facts(never)).stuck_transitions) == 1
    # its process died: the node goes with the session
    assert check_campaign(facts(never, deaths={1: 1 * S})).stuck_transitions == []


def test_lost_split_boundaries():
    kept = facts(
        [], split_boundaries={"t/ns": {0x80000000}}, final_boundaries={"t/ns": [0, 0x80000000, 0xFFFFFFFF]}
    )
    assert check_campaign(kept).lost_boundaries == []
    lost = facts([], split_boundaries={"t/ns": {0x80000000}}, final_boundaries={"t/ns": [0, 0xFFFFFFFF]})
    v = check_campaign(lost)
    assert v.lost_boundaries == ["t/ns: split boundary 0x80000000 is gone"] and not v.safe


def test_stale_leader_actions():
    events = [
        ev(0, "a", 1, "lead-start", "", epoch=4),
        ev(1, "b", 2, "leader-action", LEFT, epoch=4, reason="accepted"),
        ev(2, "c", 3, "lead-start", "", epoch=5),
        ev(3, "b", 2, "leader-action", LEFT, epoch=4, reason="refused: leader epoch 4 is not current (5)"),
    ]
    v = check_campaign(facts(events))
    assert v.stale_actions_refused == 1 and v.leader_actions_accepted == 1 and v.safe
    bad = [*events, ev(4, "b", 2, "leader-action", RIGHT, epoch=4, reason="accepted")]
    v = check_campaign(facts(bad))
    assert len(v.stale_actions_accepted) == 1 and not v.safe


def test_spans_cut_around_several_freezes():
    events = [ev(0, "a", 1, "serve-start"), ev(10, "a", 1, "serve-stop")]
    f = facts(events, frozen={1: [(2 * S, 3 * S), (5 * S, 6 * S)]})
    assert [(s.start_ns // S, s.end_ns // S) for s in serving_spans(events, f)] == [(0, 2), (3, 5), (6, 10)]


@pytest.mark.parametrize(("pct", "expected"), [(50, 3), (99, 5), (100, 5), (1, 1)])
def test_percentile(pct, expected):
    assert percentile([1, 2, 3, 4, 5], pct) == expected


def test_topics_not_served_at_the_end():
    served = [ev(0, "a", 1, "serve-start")]
    assert check_campaign(facts(served)).unserved_at_end == []
    stopped = [ev(0, "a", 1, "serve-start"), ev(5, "a", 1, "serve-stop")]
    assert len(check_campaign(facts(stopped)).unserved_at_end) == len(TOPICS)
    half = [ev(0, "a", 1, "serve-start", LEFT)]
    left = check_campaign(facts(half)).unserved_at_end
    assert 0 < len(left) < len(TOPICS)


def test_a_lease_horizon_bounds_a_span_whose_stop_was_never_written():
    # a was frozen, resumed at 20 s and killed at 20.1 s before writing its serve-stop; its last lease
    # line (at 9 s) said its session was known alive until 10 s: it accepted nothing after 10 + 1.25 s
    lease = HistoryEvent(9 * S, "a", 1, "lease", until_ns=10 * S)
    events = [ev(0, "a", 1, "serve-start"), lease, ev(16, "b", 2, "serve-start")]
    f = facts(events, frozen={1: [(12 * S, 20 * S)]}, deaths={1: int(20.1 * S)})
    assert check_campaign(f).double_serving == 0
    # without the lease line the 100 ms after the resume count
    f = facts(events[::2], frozen={1: [(12 * S, 20 * S)]}, deaths={1: int(20.1 * S)})
    assert check_campaign(f).double_serving == 1
    # a later lease line (confirmed again) opens it again
    again = HistoryEvent(21 * S, "a", 1, "lease", until_ns=24 * S)
    f = facts([*events, again], frozen={1: [(12 * S, 20 * S)]})
    assert check_campaign(f).double_serving == 1


def test_reownership_is_counted_from_the_stores_return_when_zookeeper_was_restarted_meanwhile() -> None:
    # a broker dies at 1 s; ZooKeeper is down from 2 s to 6 s (no owner can change meanwhile, and the
    # restarted server gives the dead broker's session a fresh timeout); another broker serves the
    # bundle at 9 s: 3 s after the store's return (within 5 s + 2 s), 8 s after the death
    facts = CampaignFacts(
        events=[ev(0, "a", 1, "serve-start"), ev(9, "b", 2, "serve-start")],
        end_ns=20 * S,
        deaths={1: 1 * S},
        store_outages=[(2 * S, 6 * S)],
        topics={"persistent://t/ns/x"},
        session_timeout_ns=5 * S,
    )
    verdict = check_campaign(facts)
    assert verdict.reownership_ns == [3 * S] and verdict.reownership_from_death_ns == [8 * S]
    assert verdict.slow_reownership == []
    # without the outage the same history is slow
    facts.store_outages = []
    slow = check_campaign(facts).slow_reownership
    assert len(slow) == 1 and "(killed)" in slow[0] and "8000 ms" in slow[0]
