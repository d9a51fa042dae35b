"""The pure ownership state machine: flows, invalid transitions, watchdog, broker loss, story."""

from __future__ import annotations

import itertools

import pytest

from brokerlb.errors import InvalidConfigError, InvalidTransitionError
from brokerlb.ownership import (
    FORCED_TRANSITIONS,
    IN_FLIGHT,
    VALID_TRANSITIONS,
    AbortAssignment,
    AbortSplit,
    AcquireOwnership,
    Assign,
    AssignmentDone,
    AssignmentFailed,
    BrokerLost,
    BundleState,
    CloseBundle,
    DisconnectClients,
    ForceRelease,
    OwnerChanged,
    OwnershipLost,
    OwnershipMachine,
    ReleaseDone,
    RingUpdated,
    Split,
    SplitBundle,
    SplitDone,
    SplitFailed,
    Tick,
    Unload,
)

S = BundleState
NS = "t/ns"
FULL = f"{NS}/0x00000000_0xffffffff"
LEFT, RIGHT = f"{NS}/0x00000000_0x7fffffff", f"{NS}/0x7fffffff_0xffffffff"
_ids = itertools.count()


def sid(kind: str = "s") -> str:
    return f"{kind}-{next(_ids)}"


@pytest.fixture
def m():
    """A machine that checks its invariants after every event."""
    machine = OwnershipMachine(in_flight_timeout_ms=30_000, tombstone_delay_ms=3_600_000, validate=True)
    yield machine
    machine.validate()


def owned(m, bundle=FULL, broker="b1", at=0):
    m.handle(
        Assign(bundle=bundle, broker=broker, stimulus_id=sid("lookup"), at_ms=at),
        AssignmentDone(bundle=bundle, broker=broker, stimulus_id=sid("own"), at_ms=at + 1),
    )


def test_table_is_pulsars():
    assert VALID_TRANSITIONS[S.INIT] == {S.FREE, S.OWNED, S.ASSIGNING, S.RELEASING, S.SPLITTING, S.DELETED}
    assert VALID_TRANSITIONS[S.FREE] == {S.ASSIGNING, S.INIT}
    assert VALID_TRANSITIONS[S.OWNED] == {S.SPLITTING, S.RELEASING}
    assert VALID_TRANSITIONS[S.ASSIGNING] == {S.OWNED}
    assert VALID_TRANSITIONS[S.RELEASING] == {S.ASSIGNING, S.FREE}
    assert VALID_TRANSITIONS[S.SPLITTING] == {S.DELETED}
    assert VALID_TRANSITIONS[S.DELETED] == {S.INIT}
    assert IN_FLIGHT == {S.ASSIGNING, S.RELEASING, S.SPLITTING}
    assert not any(
        finish in VALID_TRANSITIONS[start]
        for start, finish in FORCED_TRANSITIONS
        if (start, finish) not in {(S.FREE, S.INIT), (S.DELETED, S.INIT)}
    )


def test_assign_flow(m):
    out = m.handle(Assign(bundle=FULL, broker="b1", stimulus_id="lookup-1", at_ms=10))
    assert out == [AcquireOwnership(bundle=FULL, broker="b1", stimulus_id="lookup-1")]
    assert m.state(FULL) is S.ASSIGNING and m.owner(FULL) is None
    out = m.handle(AssignmentDone(bundle=FULL, broker="b1", stimulus_id="own-1", at_ms=20))
    assert out == [OwnerChanged(bundle=FULL, owner="b1", state="Owned", stimulus_id="own-1")]
    assert m.owner(FULL) == "b1" and m.record(FULL).version == 2 and m.record(FULL).since_ms == 20


def test_duplicates_are_no_ops(m):
    owned(m)
    version = m.record(FULL).version
    assert m.handle(Assign(bundle=FULL, broker="b1", stimulus_id=sid(), at_ms=5)) == []
    assert m.handle(AssignmentDone(bundle=FULL, broker="b1", stimulus_id=sid(), at_ms=5)) == []
    assert m.record(FULL).version == version


def test_unload_flow(m):
    owned(m)
    out = m.handle(Unload(bundle=FULL, stimulus_id="admin-unload", at_ms=100, by="admin"))
    assert out == [CloseBundle(bundle=FULL, broker="b1", transfer_to=None, stimulus_id="admin-unload")]
    assert m.record(FULL).src == "b1" and m.state(FULL) is S.RELEASING
    out = m.handle(ReleaseDone(bundle=FULL, stimulus_id="closed", at_ms=150, by="b1"))
    assert out == [OwnerChanged(bundle=FULL, owner=None, state="Free", stimulus_id="closed")]
    assert m.state(FULL) is S.FREE
    m.handle(Assign(bundle=FULL, broker="b2", stimulus_id=sid(), at_ms=200))
    assert m.state(FULL) is S.ASSIGNING


def test_transfer_flow_keeps_clients_until_the_destination_owns(m):
    owned(m)
    out = m.handle(Unload(bundle=FULL, to="b2", stimulus_id="shed-1", at_ms=100, by="leader"))
    assert out == [CloseBundle(bundle=FULL, broker="b1", transfer_to="b2", stimulus_id="shed-1")]
    out = m.handle(ReleaseDone(bundle=FULL, stimulus_id="closed", at_ms=110))
    assert out == [AcquireOwnership(bundle=FULL, broker="b2", stimulus_id="closed")]
    assert m.record(FULL).src == "b1" and m.record(FULL).dst == "b2"
    out = m.handle(AssignmentDone(bundle=FULL, broker="b2", stimulus_id="owned", at_ms=120))
    assert DisconnectClients(bundle=FULL, broker="b1", redirect_to="b2", stimulus_id="owned") in out
    assert m.owner(FULL) == "b2"


def test_split_flow(m):
    owned(m)
    out = m.handle(Split(bundle=FULL, children=(LEFT, RIGHT), stimulus_id="split-1", at_ms=100))
    assert out == [SplitBundle(bundle=FULL, broker="b1", children=(LEFT, RIGHT), stimulus_id="split-1")]
    out = m.handle(SplitDone(bundle=FULL, stimulus_id="split-1-done", at_ms=120))
    assert m.state(FULL) is S.DELETED
    assert m.owner(LEFT) == m.owner(RIGHT) == "b1"
    assert {i.bundle for i in out if isinstance(i, OwnerChanged)} == {FULL, LEFT, RIGHT}


@pytest.mark.parametrize(
    "event, why",
    [
        (AssignmentDone(bundle=FULL, broker="b1", stimulus_id="x", at_ms=0), "needs Assigning"),
        (Unload(bundle=FULL, stimulus_id="x", at_ms=0), "needs Owned"),
        (Split(bundle=FULL, children=(LEFT, RIGHT), stimulus_id="x", at_ms=0), "needs Owned"),
        (SplitDone(bundle=FULL, stimulus_id="x", at_ms=0), "needs Splitting"),
    ],
)
def test_invalid_events_on_a_free_bundle(m, event, why):
    owned(m)
    m.handle(
        Unload(bundle=FULL, stimulus_id="u", at_ms=10), ReleaseDone(bundle=FULL, stimulus_id="r", at_ms=11)
    )
    before = m.record(FULL)
    with pytest.raises(InvalidTransitionError, match=why) as err:
        m.handle(event)
    assert m.record(FULL) == before
    assert [t.finish for t in err.value.story] == [S.ASSIGNING, S.OWNED, S.RELEASING, S.FREE]


def test_late_release_done_after_the_watchdog_is_a_no_op(m):
    owned(m)
    m.handle(Unload(bundle=FULL, stimulus_id="u", at_ms=10), Tick(stimulus_id="t", at_ms=40_000))
    assert m.handle(ReleaseDone(bundle=FULL, stimulus_id="late", at_ms=40_001)) == []
    assert m.state(FULL) is S.FREE


def test_conflicting_owner_is_refused(m):
    m.handle(Assign(bundle=FULL, broker="b1", stimulus_id="a", at_ms=0))
    with pytest.raises(InvalidTransitionError, match="being assigned to b1, not b2"):
        m.handle(AssignmentDone(bundle=FULL, broker="b2", stimulus_id="b", at_ms=1))
    with pytest.raises(InvalidTransitionError, match="needs Init or Free"):
        m.handle(Assign(bundle=FULL, broker="b2", stimulus_id="c", at_ms=1))


def test_unload_to_the_owner_itself_is_refused(m):
    owned(m)
    with pytest.raises(InvalidTransitionError, match="same broker"):
        m.handle(Unload(bundle=FULL, to="b1", stimulus_id="x", at_ms=5))


def test_a_batch_stops_at_the_first_invalid_event_and_keeps_earlier_instructions(m):
    with pytest.raises(InvalidTransitionError) as err:
        m.handle(
            Assign(bundle=FULL, broker="b1", stimulus_id="ok", at_ms=0),
            ReleaseDone(bundle=FULL, stimulus_id="bad", at_ms=1),
        )
    assert err.value.instructions == [AcquireOwnership(bundle=FULL, broker="b1", stimulus_id="ok")]
    assert m.state(FULL) is S.ASSIGNING


# --------------------------------------------------------------------------- watchdog


def test_watchdog_frees_a_stuck_assignment(m):
    m.handle(Assign(bundle=FULL, broker="b-dead", stimulus_id="lookup", at_ms=1_000))
    assert m.handle(Tick(stimulus_id="tick-1", at_ms=30_999)) == []
    out = m.handle(Tick(stimulus_id="tick-2", at_ms=31_000))
    assert out == [
        AbortAssignment(bundle=FULL, broker="b-dead", stimulus_id="tick-2"),
        OwnerChanged(bundle=FULL, owner=None, state="Free", stimulus_id="tick-2"),
    ]
    last = m.story(FULL)[-1]
    assert last.forced and last.who == "watchdog" and "stuck in Assigning for 30000 ms" in last.reason
    m.handle(Assign(bundle=FULL, broker="b2", stimulus_id="retry", at_ms=31_001))  # lookups can proceed


def test_watchdog_frees_a_stuck_release(m):
    owned(m)
    m.handle(Unload(bundle=FULL, to="b2", stimulus_id="u", at_ms=100))
    out = m.handle(Tick(stimulus_id="tick", at_ms=40_000))
    assert ForceRelease(bundle=FULL, broker="b1", stimulus_id="tick") in out
    assert m.state(FULL) is S.FREE and not m.story(FULL)[-1].forced  # Releasing -> Free is in the table


def test_watchdog_rolls_back_an_uncommitted_split(m):
    owned(m)
    m.handle(
        RingUpdated(namespace=NS, bundles=(FULL,), stimulus_id="ring", at_ms=50),
        Split(bundle=FULL, children=(LEFT, RIGHT), stimulus_id="split", at_ms=100),
    )
    out = m.handle(Tick(stimulus_id="tick", at_ms=30_100))
    assert out[0] == AbortSplit(bundle=FULL, broker="b1", children=(LEFT, RIGHT), stimulus_id="tick")
    assert m.owner(FULL) == "b1" and m.record(FULL).children == ()
    assert m.story(FULL)[-1].forced


def test_watchdog_completes_a_committed_split(m):
    owned(m)
    m.handle(
        Split(bundle=FULL, children=(LEFT, RIGHT), stimulus_id="split", at_ms=100),
        RingUpdated(namespace=NS, bundles=(LEFT, RIGHT), stimulus_id="ring", at_ms=150),
    )
    assert m.state(FULL) is S.SPLITTING  # the ring update does not end a split by itself
    m.handle(Tick(stimulus_id="tick", at_ms=30_100))
    assert m.state(FULL) is S.DELETED and m.owner(LEFT) == m.owner(RIGHT) == "b1"


def test_split_failure_rolls_back(m):
    owned(m)
    m.handle(Split(bundle=FULL, children=(LEFT, RIGHT), stimulus_id="s", at_ms=1))
    out = m.handle(
        SplitFailed(bundle=FULL, stimulus_id="f", at_ms=2, reason="metadata CAS retries exhausted")
    )
    assert isinstance(out[0], AbortSplit) and m.owner(FULL) == "b1"


def test_tombstones_drop_old_free_and_deleted_records(m):
    owned(m)
    m.handle(
        Split(bundle=FULL, children=(LEFT, RIGHT), stimulus_id="s", at_ms=10),
        SplitDone(bundle=FULL, stimulus_id="d", at_ms=20),
    )
    m.handle(Tick(stimulus_id="t", at_ms=20 + 3_600_000))
    assert FULL not in m.records() and m.state(FULL) is S.INIT
    assert m.story(FULL)[-1].finish is S.INIT  # the story outlives the record
    assert m.owner(LEFT) == "b1"


# --------------------------------------------------------------------------- broker loss, ring


def test_broker_loss_frees_its_bundles(m):
    owned(m, FULL, "b1")
    other = "x/y/0x00000000_0xffffffff"
    m.handle(Assign(bundle=other, broker="b1", stimulus_id="a", at_ms=5))
    third = "x/z/0x00000000_0xffffffff"
    owned(m, third, "b2")
    out = m.handle(BrokerLost(broker="b1", stimulus_id="registry-left-b1", at_ms=100))
    assert m.state(FULL) is S.FREE and m.state(other) is S.FREE and m.owner(third) == "b2"
    assert {i.bundle for i in out} == {FULL, other}
    story = m.story("registry-left-b1")
    assert len(story) == 2 and all(t.forced and "broker b1 lost" in t.reason for t in story)


def test_broker_loss_during_a_transfer(m):
    owned(m, FULL, "b1")
    m.handle(Unload(bundle=FULL, to="b2", stimulus_id="t", at_ms=1))
    m.handle(BrokerLost(broker="b2", stimulus_id="lost-b2", at_ms=2))
    assert m.record(FULL).dst is None and m.state(FULL) is S.RELEASING
    m.handle(ReleaseDone(bundle=FULL, stimulus_id="r", at_ms=3))
    assert m.state(FULL) is S.FREE  # a plain unload now
    owned(m, LEFT, "b3")
    m.handle(
        Unload(bundle=LEFT, to="b4", stimulus_id="t2", at_ms=4),
        BrokerLost(broker="b3", stimulus_id="lost-b3", at_ms=5),
    )
    assert m.state(LEFT) is S.ASSIGNING and m.record(LEFT).dst == "b4"


def test_broker_loss_while_splitting(m):
    owned(m, FULL, "b1")
    m.handle(
        RingUpdated(namespace=NS, bundles=(FULL,), stimulus_id="r0", at_ms=0),
        Split(bundle=FULL, children=(LEFT, RIGHT), stimulus_id="s", at_ms=1),
        BrokerLost(broker="b1", stimulus_id="lost", at_ms=2),
    )
    assert m.state(FULL) is S.FREE
    owned(m, "a/b/0x00000000_0xffffffff", "b9")
    m.handle(
        Split(
            bundle="a/b/0x00000000_0xffffffff",
            children=("a/b/0x00000000_0x7fffffff", "a/b/0x7fffffff_0xffffffff"),
            stimulus_id="s2",
            at_ms=3,
        ),
        RingUpdated(
            namespace="a/b",
            bundles=("a/b/0x00000000_0x7fffffff", "a/b/0x7fffffff_0xffffffff"),
            stimulus_id="r1",
            at_ms=4,
        ),
        BrokerLost(broker="b9", stimulus_id="lost-b9", at_ms=5),
    )
    assert m.state("a/b/0x00000000_0xffffffff") is S.DELETED
    assert m.state("a/b/0x00000000_0x7fffffff") is S.FREE


def test_ring_update_ends_bundles_that_left_the_ring(m):
    owned(m, LEFT, "b1")
    owned(m, RIGHT, "b2")
    out = m.handle(RingUpdated(namespace=NS, bundles=(FULL,), stimulus_id="merged", at_ms=10, by="admin"))
    assert m.state(LEFT) is S.DELETED and m.state(RIGHT) is S.DELETED
    assert ForceRelease(bundle=LEFT, broker="b1", stimulus_id="merged") in out
    m.handle(Tick(stimulus_id="t", at_ms=10 + 3_600_000))
    m.handle(Assign(bundle=FULL, broker="b1", stimulus_id="a", at_ms=3_600_011))


def test_a_deleted_bundle_back_in_the_ring_starts_again_from_init(m):
    """Split into two halves, merged back: the whole range is a bundle again and may be assigned."""
    owned(m, FULL, "b1")
    m.handle(RingUpdated(namespace=NS, bundles=(LEFT, RIGHT), stimulus_id="split", at_ms=10, by="admin"))
    assert m.state(FULL) is S.DELETED
    out = m.handle(RingUpdated(namespace=NS, bundles=(FULL,), stimulus_id="merged", at_ms=20, by="b2"))
    assert m.state(FULL) is S.INIT
    assert not [i for i in out if i.bundle == FULL]  # nothing to release: nobody owns it yet
    last = m.story(FULL)[-1]
    assert (last.start, last.finish) == (S.DELETED, S.INIT)
    assert "back in the bundles of t/ns" in last.reason
    m.handle(
        Assign(bundle=FULL, broker="b2", stimulus_id=sid(), at_ms=21),
        AssignmentDone(bundle=FULL, broker="b2", stimulus_id=sid(), at_ms=22),
    )
    assert m.owner(FULL) == "b2"


def test_ownership_lost_by_another_broker_frees_what_this_machine_last_saw(m):
    """A machine that handed a bundle to b2 learns the store no longer names b2: Free, and no
    instruction for this broker (b2's clients are b2's business)."""
    owned(m, FULL, "b2")
    out = m.handle(OwnershipLost(bundle=FULL, broker="b2", stimulus_id="lookup", at_ms=5, by="b1"))
    assert m.state(FULL) is S.FREE
    assert {getattr(i, "broker", None) for i in out} <= {"b2", None}
    m.handle(Assign(bundle=FULL, broker="b1", stimulus_id=sid(), at_ms=6))
    assert m.state(FULL) is S.ASSIGNING


# --------------------------------------------------------------------------- story


def test_story_says_who_when_why(m):
    m.handle(
        Assign(
            bundle=FULL,
            broker="b1",
            stimulus_id="lookup-7",
            at_ms=1,
            by="b3",
            reason="least loaded (LeastLongTermMessageRate)",
        )
    )
    m.handle(AssignmentDone(bundle=FULL, broker="b1", stimulus_id="own-7", at_ms=2))
    m.handle(
        Unload(
            bundle=FULL,
            to="b2",
            stimulus_id="shed-3",
            at_ms=3,
            by="leader",
            reason="ThresholdShedder: b1 overloaded",
        )
    )
    lines = [str(t) for t in m.story(FULL)]
    assert lines[0] == (
        f"{FULL}: Init -> Assigning (dst b1) at 1 ms by b3: least loaded "
        "(LeastLongTermMessageRate) [lookup-7]"
    )
    assert "by leader: ThresholdShedder: b1 overloaded [shed-3]" in lines[2]
    assert [t.stimulus_id for t in m.story("shed-3")] == ["shed-3"]


def test_logs_are_bounded():
    m = OwnershipMachine(log_per_bundle=1, log_total=2, log_bundles=3)
    bundles = [f"{NS}/0x0000000{i}_0x0000000{i + 1}" for i in range(5)]
    for i, b in enumerate(bundles):
        m.handle(Assign(bundle=b, broker="b1", stimulus_id=f"a{i}", at_ms=i))
    m.handle(AssignmentDone(bundle=bundles[4], broker="b1", stimulus_id="o4", at_ms=10))
    assert [t.stimulus_id for t in m.story(bundles[4])] == ["a4", "o4"]  # per bundle: 1; global: last 2
    assert m.story(bundles[0]) == []  # only the 3 most recent bundles keep a story
    assert len(m._log) == 2 and len(m._logs) == 3


def test_config_is_checked():
    with pytest.raises(InvalidConfigError, match="loadBalancerInFlightServiceUnitStateWaitingTimeInMillis"):
        OwnershipMachine(in_flight_timeout_ms=0)


def test_watchdog_finishes_a_committed_split_even_when_a_child_is_busy(m):
    owned(m, FULL, "b1")
    owned(m, LEFT, "b2")  # a stale record of a child bundle (e.g. from before a merge)
    m.handle(
        Split(bundle=FULL, children=(LEFT, RIGHT), stimulus_id="s", at_ms=10),
        RingUpdated(namespace=NS, bundles=(LEFT, RIGHT), stimulus_id="ring", at_ms=11),
    )
    with pytest.raises(InvalidTransitionError, match="already Owned"):
        m.handle(SplitDone(bundle=FULL, stimulus_id="done", at_ms=12))
    m.handle(Tick(stimulus_id="tick", at_ms=40_000))
    assert m.state(FULL) is S.DELETED and m.owner(LEFT) == "b2" and m.owner(RIGHT) == "b1"
    assert "children left as they were" in m.story(FULL)[-1].reason


def test_timeouts_from_broker_config():
    from brokerlb.config import ServiceConfig

    conf = ServiceConfig().with_overrides(
        {
            "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis": 5000,
            "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds": 60,
        }
    )
    machine = OwnershipMachine.from_config(conf)
    assert machine.in_flight_timeout_ms == 5000 and machine.tombstone_delay_ms == 60_000


def test_a_failed_assignment_frees_the_bundle_and_a_transfer_source_disconnects_its_clients():
    m = OwnershipMachine()
    m.handle(Assign(bundle=FULL, broker="b1", stimulus_id="lookup-1", at_ms=0))
    out = m.handle(
        AssignmentFailed(bundle=FULL, broker="b1", stimulus_id="lookup-1", at_ms=1, reason="owned by b2")
    )
    assert m.state(FULL) is BundleState.FREE and out[0].owner is None
    m.handle(Assign(bundle=FULL, broker="b1", stimulus_id="lookup-2", at_ms=2))
    m.handle(AssignmentDone(bundle=FULL, broker="b1", stimulus_id="own", at_ms=3))
    m.handle(Unload(bundle=FULL, to="b2", stimulus_id="transfer-1", at_ms=4))
    m.handle(ReleaseDone(bundle=FULL, stimulus_id="released", at_ms=5))
    out = m.handle(AssignmentFailed(bundle=FULL, broker="b2", stimulus_id="hand-over", at_ms=6))
    assert DisconnectClients(bundle=FULL, broker="b1", stimulus_id="hand-over") in out
    assert m.state(FULL) is BundleState.FREE
    assert m.handle(AssignmentFailed(bundle=FULL, broker="b2", stimulus_id="again", at_ms=7)) == []
    assert [str(t.finish) for t in m.story(FULL)][-1] == "Free" and m.story(FULL)[-1].forced


def test_ownership_lost_with_the_session_frees_the_bundle_and_closes_its_topics():
    m = OwnershipMachine()
    m.handle(Assign(bundle=FULL, broker="b1", stimulus_id="lookup-1", at_ms=0))
    m.handle(AssignmentDone(bundle=FULL, broker="b1", stimulus_id="own", at_ms=1))
    out = m.handle(OwnershipLost(bundle=FULL, broker="b1", stimulus_id="session-1", at_ms=2))
    assert DisconnectClients(bundle=FULL, broker="b1", lost=True, stimulus_id="session-1") in out
    assert m.state(FULL) is BundleState.FREE
    assert m.handle(OwnershipLost(bundle=FULL, broker="b1", stimulus_id="session-2", at_ms=3)) == []
