import numpy as np
import pytest

from brokerlb.errors import InvalidTransitionError
from brokerlb.sim.ownership import BundleState, OwnershipTable


def table():
    names = ["t/ns/0x00000000_0x80000000", "t/ns/0x80000000_0xffffffff"]
    return OwnershipTable(names, ["b1:8080", "b2:8080"], grace_ms=30 * 60_000), names


def test_shed_move_and_its_story_from_the_state_machine():
    own, names = table()
    own.request_lookup(0, 0)
    assert own.assign(0, 0, 500) is None  # first placement is not a move
    own.release(0, 60_000, "shed", throughput=1e6, detail="Overloaded")
    assert own.state[0] == BundleState.RELEASING
    assert own.release_done(0, 60_050) is False and own.state[0] == BundleState.FREE
    own.request_lookup(0, 60_050)
    move = own.assign(0, 1, 60_550)
    assert move is not None and (move.source, move.destination, move.cause) == ("b1:8080", "b2:8080", "shed")
    assert move.throughput == 1e6 and move.unowned_ms == 550 and not move.flap and not move.returned
    story = [(str(t.start), str(t.finish), t.dst, t.who, t.reason) for t in own.story(names[0])]
    assert story == [
        ("Init", "Assigning", "b1:8080", "leader", "lookup"),
        ("Assigning", "Owned", "b1:8080", "b1:8080", "assignment taken"),
        ("Owned", "Releasing", None, "b1:8080", "Overloaded"),
        ("Releasing", "Free", None, "b1:8080", "released"),
        ("Free", "Assigning", "b2:8080", "leader", "lookup"),
        ("Assigning", "Owned", "b2:8080", "b2:8080", "assignment taken"),
    ]
    assert own.story(names[0])[2].reason == "Overloaded"
    assert own.story(names[1]) == []
    assert own.unowned_ms_total == 550  # the move; its first placement (500 ms) is no time without an owner


def test_transfer_goes_through_assigning():
    own, names = table()
    own.assign(0, 0, 0)
    own.release(0, 1000, "transfer", 5.0, destination=1)
    assert own.release_done(0, 1020) is True
    assert own.state[0] == BundleState.ASSIGNING and own.owner[0] == 1
    move = own.assign(0, 1, 1020, "transfer")
    assert (move.cause, move.destination, move.unowned_ms) == ("transfer", "b2:8080", 20)
    assert [str(t.finish) for t in own.story(names[0])][-3:] == ["Releasing", "Assigning", "Owned"]


def test_invalid_moves_are_refused_by_the_machine():
    own, names = table()
    with pytest.raises(InvalidTransitionError):
        own.release(0, 0, "shed", 0.0)  # not owned
    own.assign(0, 0, 0)
    with pytest.raises(InvalidTransitionError):
        own.release(0, 5, "transfer", 0.0, destination=0)  # transfer to its own owner


def test_return_to_the_same_broker_and_flap_within_grace():
    own, _ = table()
    own.assign(0, 0, 0)
    own.release(0, 1000, "shed", 1.0)
    own.release_done(0, 1050)
    first = own.assign(0, 0, 1500)
    assert first.returned and not first.flap
    own.release(0, 10 * 60_000, "shed", 1.0)
    own.release_done(0, 10 * 60_000 + 50)
    second = own.assign(0, 1, 10 * 60_000 + 500)
    assert second.flap and not second.returned
    own.release(0, 60 * 60_000, "shed", 1.0)
    own.release_done(0, 60 * 60_000)
    assert not own.assign(0, 0, 60 * 60_000 + 1).flap  # more than 30 minutes later


def test_crash_counts_unowned_time_from_the_crash_and_cycles_split_it():
    own, names = table()
    own.assign(0, 0, 0)
    own.assign(1, 0, 0)
    own.start_cycle(0)
    own.owner_lost([0, 1], 30_000, np.array([5.0, 7.0]))
    assert own.state[0] == BundleState.OWNED  # the dead broker's ownership node lives on
    assert own.end_cycle(60_000) == 2 * 30_000
    own.start_cycle(60_000)
    assert own.broker_lost(0, 60_000, "session expired") == [0, 1]
    assert str(own.story(names[0])[-1].finish) == "Free" and own.story(names[0])[-1].forced
    move = own.assign(0, 1, 70_000)
    assert move.cause == "failure" and move.unowned_ms == 40_000 and move.throughput == 5.0
    assert own.end_cycle(120_000) == 10_000 + 60_000  # bundle 1 still waiting
    assert own.served_mask(np.array([False, True])).tolist() == [True, False]


def test_split_children_owned_by_the_parents_owner():
    own, names = table()
    names.extend(["t/ns/0x80000000_0xc0000000", "t/ns/0xc0000000_0xffffffff"])
    own.grow(4)
    own.assign(1, 1, 0)
    own.split(1, [2, 3], 100, "Topics")
    assert own.state[1] == BundleState.DELETED and own.owner[1] == -1
    assert own.ownership_map() == {names[2]: "b2:8080", names[3]: "b2:8080"}
    assert list(own.owned_by(1)) == [2, 3]
    assert [str(t.finish) for t in own.story(names[1])][-2:] == ["Splitting", "Deleted"]
