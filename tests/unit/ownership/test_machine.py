"""The ownership machine, one flow at a time: what the named broker does, the leader's monitor, the
commits, the story. (Any interleaving of many brokers: :mod:`.test_table_properties`.)"""

from __future__ import annotations

import pytest

from brokerlb.errors import InvalidConfigError, InvalidTransitionError
from brokerlb.ownership import (
    BrokersChanged,
    BundleState,
    ClientsMoved,
    CommitSplit,
    LeadershipChanged,
    OwnerChanged,
    OwnershipMachine,
    Reassign,
    RecordChanged,
    Release,
    Released,
    SessionChanged,
    StartServing,
    StopServing,
    Tick,
    Write,
)

S = BundleState
NS = "t/ns"
FULL = f"{NS}/0x00000000_0xffffffff"
LEFT, RIGHT = f"{NS}/0x00000000_0x7fffffff", f"{NS}/0x7fffffff_0xffffffff"


class Table:
    """A model store: applies writes by compare-and-set and feeds the machines the records."""

    def __init__(self, *machines: OwnershipMachine) -> None:
        self.machines = list(machines)
        self.versions: dict[str, int] = {}
        self.zxid = 0
        self.out: dict[int, list] = {id(m): [] for m in machines}

    def write(self, *writes: Write, at_ms: int = 0) -> None:
        for w in writes:
            assert self.versions.get(w.bundle, -1) == w.expected, f"lost race: {w}"
        for w in writes:
            self.zxid += 1
            if w.record is None:
                self.versions.pop(w.bundle)
            else:
                self.versions[w.bundle] = self.versions.get(w.bundle, -1) + 1
            event = RecordChanged(
                bundle=w.bundle,
                record=w.record,
                stat_version=self.versions.get(w.bundle, -1),
                zxid=self.zxid,
                at_ms=at_ms,
            )
            for m in self.machines:
                self.out[id(m)] += m.handle(event)

    def take(self, m: OwnershipMachine, kind: type) -> list:
        mine = [i for i in self.out[id(m)] if isinstance(i, kind)]
        self.out[id(m)] = [i for i in self.out[id(m)] if not isinstance(i, kind)]
        return mine


def broker(name: str, session: int, *, leading: bool = False) -> OwnershipMachine:
    m = OwnershipMachine(me=name, in_flight_timeout_ms=30_000, tombstone_delay_ms=100_000)
    m.handle(SessionChanged(session=session, at_ms=0), BrokersChanged(sessions={"b1": 1, "b2": 2}, at_ms=0))
    if leading:
        m.handle(LeadershipChanged(leading=True, at_ms=0))
    return m


def owned(table: Table, b1: OwnershipMachine, bundle: str = FULL) -> None:
    table.write(b1.assign(bundle, "b1", at_ms=0))
    (take,) = table.take(b1, Write)
    assert take.record.state is S.OWNED and take.record.dst_session == 1
    table.write(take)


def test_the_named_broker_takes_an_assignment_and_serves_it_only_under_its_session() -> None:
    b1, b2 = broker("b1", 1), broker("b2", 2)
    table = Table(b1, b2)
    table.write(b2.assign(FULL, "b1", at_ms=0))
    assert table.take(b2, Write) == []  # not b2's to take
    (take,) = table.take(b1, Write)
    table.write(take)
    (start,) = table.take(b1, StartServing)
    assert (start.bundle, start.broker, start.session) == (FULL, "b1", 1)
    assert b1.serving(FULL) and not b2.serving(FULL)
    assert [o.owner for o in table.take(b2, OwnerChanged)] == ["b1"]
    # its session is not known alive: it stops serving at once (the clients are closed)
    (stop,) = b1.handle(SessionChanged(session=None, at_ms=5))
    assert isinstance(stop, StopServing) and stop.cause.kind == "lost"
    # confirmed again, same session: serving again; a new session: the old record is not its own
    assert [type(i) for i in b1.handle(SessionChanged(session=1, at_ms=6))] == [StartServing]
    stops = b1.handle(SessionChanged(session=7, at_ms=7))
    assert [(type(i), i.cause.kind) for i in stops] == [(StopServing, "lost")]
    assert not b1.serving(FULL)


def test_a_transfer_fences_releases_goes_on_to_the_destination_and_tells_the_clients() -> None:
    b1, b2 = broker("b1", 1), broker("b2", 2, leading=True)
    table = Table(b1, b2)
    owned(table, b1)
    table.take(b1, StartServing)
    table.write(b2.unload(FULL, "b2", at_ms=10, by="leader", reason="Overloaded"))
    (stop,) = table.take(b1, StopServing)
    assert (stop.cause.kind, stop.cause.destination) == ("transfer", "b2")
    (release,) = table.take(b1, Release)
    assert release.transfer_to == "b2"
    (goes_on,) = b1.handle(Released(bundle=FULL, version=release.version, at_ms=11))
    assert goes_on.record.state is S.ASSIGNING and goes_on.record.dst == "b2" and goes_on.record.src == "b1"
    table.write(goes_on)
    (take,) = table.take(b2, Write)
    table.write(take)
    (moved,) = table.take(b1, ClientsMoved)
    assert moved.owner == "b2"
    assert b2.serving(FULL) and not b1.serving(FULL)
    assert [str(t.finish) for t in b2.story(FULL)] == [
        "Assigning",
        "Owned",
        "Releasing",
        "Assigning",
        "Owned",
    ]
    assert b2.story(FULL)[2].reason == "Overloaded" and b2.story(FULL)[2].who == "leader"


def test_an_unload_is_released_to_free_a_move_carries_no_data() -> None:
    b1 = broker("b1", 1)
    table = Table(b1)
    owned(table, b1)
    table.write(b1.unload(FULL, at_ms=1))
    (release,) = table.take(b1, Release)
    assert release.transfer_to is None
    (free,) = b1.handle(Released(bundle=FULL, version=release.version, at_ms=2))
    assert free.record.state is S.FREE


def test_a_split_commits_parent_and_children_in_one_transaction_and_the_topics_go_on() -> None:
    b1 = broker("b1", 1)
    table = Table(b1)
    owned(table, b1)
    table.take(b1, StartServing)
    table.write(b1.split(FULL, (LEFT, RIGHT), at_ms=1))
    (commit,) = table.take(b1, CommitSplit)
    assert commit.children == (LEFT, RIGHT)
    writes = b1.split_commit(FULL, at_ms=2)
    assert [(w.bundle, w.record.state) for w in writes] == [
        (FULL, S.DELETED),
        (LEFT, S.OWNED),
        (RIGHT, S.OWNED),
    ]
    table.write(*writes)
    (stop,) = table.take(b1, StopServing)
    assert (stop.cause.kind, stop.cause.successors) == (
        "split",
        ("0x00000000_0x7fffffff", "0x7fffffff_0xffffffff"),
    )
    assert [s.bundle for s in table.take(b1, StartServing)] == [LEFT, RIGHT]
    with pytest.raises(InvalidTransitionError, match="nothing to override"):
        b1.override(FULL, "b1", 1, version=b1.record(FULL).version, at_ms=3)
    # merged back: the parts are Owned by one broker under one session
    table.write(*b1.merge_commit([LEFT, RIGHT], FULL, at_ms=4))
    assert b1.record(FULL).state is S.OWNED and b1.record(LEFT).state is S.DELETED


def test_the_leader_overrides_an_orphan_of_an_ended_session_and_a_state_stuck_in_flight() -> None:
    b1, leader = broker("b1", 1), broker("b2", 2, leading=True)
    table = Table(b1, leader)
    owned(table, b1)
    assert table.take(leader, Reassign) == []
    # b1 comes back under a new session: its record names the old one
    (orphan,) = [
        i
        for i in leader.handle(BrokersChanged(sessions={"b1": 9, "b2": 2}, at_ms=5))
        if isinstance(i, Reassign)
    ]
    assert isinstance(orphan, Reassign) and orphan.exclude == "b1" and "another session" in orphan.reason
    table.write(leader.override(FULL, "b2", 2, version=orphan.version, at_ms=7, reason=orphan.reason))
    assert leader.serving(FULL) and leader.record(FULL).force
    # stuck: an assignment nobody takes is overridden after the in-flight timeout (counted from when
    # this machine first saw it), and not before
    leader.handle(BrokersChanged(sessions={"b1": 9, "b2": 2, "b3": 3}, at_ms=50))  # b3: registered, silent
    table.write(leader.assign(LEFT, "b3", at_ms=100), at_ms=100)
    assert leader.handle(Tick(at_ms=100 + 29_999)) == []
    (stuck,) = leader.handle(Tick(at_ms=100 + 30_000))
    assert isinstance(stuck, Reassign) and "Assigning" in stuck.reason
    assert leader.handle(Tick(at_ms=100 + 35_000)) == []  # once per version


def test_records_free_or_deleted_long_enough_are_tombstoned_by_the_leader() -> None:
    leader = broker("b2", 2, leading=True)
    table = Table(leader)
    table.write(leader.assign(FULL, "b2", at_ms=0))
    (take,) = table.take(leader, Write)
    table.write(take)
    table.write(leader.unload(FULL, at_ms=1))
    (release,) = table.take(leader, Release)
    table.write(*leader.handle(Released(bundle=FULL, version=release.version, at_ms=2)), at_ms=2)
    assert leader.state(FULL) is S.FREE
    assert [w for w in leader.handle(Tick(at_ms=2 + 99_999)) if isinstance(w, Write)] == []
    (tomb,) = [w for w in leader.handle(Tick(at_ms=2 + 100_000)) if isinstance(w, Write)]
    assert tomb.record is None
    table.write(tomb, at_ms=2 + 100_000)
    assert leader.record(FULL) is None and str(leader.story(FULL)[-1].finish) == "Init"


def test_bad_configuration_and_invalid_proposals_are_clear_errors() -> None:
    with pytest.raises(InvalidConfigError, match="InFlight"):
        OwnershipMachine(in_flight_timeout_ms=0)
    m = broker("b1", 1)
    with pytest.raises(InvalidTransitionError, match="an unload needs Owned"):
        m.unload(FULL, at_ms=0)
    table = Table(m)
    owned(table, m)
    with pytest.raises(InvalidTransitionError, match="unload to the same broker"):
        m.unload(FULL, "b1", at_ms=0)
    with pytest.raises(InvalidTransitionError, match="at least two children"):
        m.split(FULL, (FULL,), at_ms=0)
    with pytest.raises(InvalidTransitionError, match="moved on"):
        m.override(FULL, None, None, version=1, at_ms=0)
