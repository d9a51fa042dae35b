import numpy as np

from brokerlb.sim.ownership import BundleState, OwnershipTable


def table():
    names = ["t/ns/0x00000000_0x80000000", "t/ns/0x80000000_0xffffffff"]
    return OwnershipTable(names, ["b1:8080", "b2:8080"], grace_ms=30 * 60_000), names


def test_shed_move_and_its_story():
    own, names = table()
    own.request_lookup(0, 0)
    assert own.assign(0, 0, 500) is None  # first placement is not a move
    own.release(0, 60_000, "shed", throughput=1e6, detail="Overloaded")
    assert own.state[0] == BundleState.RELEASING
    own.free(0, 60_050, "unloaded")
    own.request_lookup(0, 60_050)
    move = own.assign(0, 1, 60_550)
    assert move is not None and (move.source, move.destination, move.cause) == ("b1:8080", "b2:8080", "shed")
    assert move.throughput == 1e6 and move.unowned_ms == 550 and not move.flap and not move.returned
    story = [(t.old, t.new, t.broker, t.cause) for t in own.story(names[0])]
    assert story == [("Free", "Owned", "b1:8080", "lookup"), ("Owned", "Releasing", "b1:8080", "shed"),
                     ("Releasing", "Free", None, "unloaded"), ("Free", "Owned", "b2:8080", "lookup")]
    assert own.story(names[1]) == []
    assert own.unowned_ms_total == 500 + 550


def test_return_to_the_same_broker_and_flap_within_grace():
    own, _ = table()
    own.assign(0, 0, 0)
    own.release(0, 1000, "shed", 1.0)
    own.free(0, 1050, "unloaded")
    first = own.assign(0, 0, 1500)
    assert first.returned and not first.flap
    own.release(0, 10 * 60_000, "shed", 1.0)
    own.free(0, 10 * 60_000 + 50, "unloaded")
    second = own.assign(0, 1, 10 * 60_000 + 500)
    assert second.flap and not second.returned
    own.release(0, 60 * 60_000, "shed", 1.0)
    own.free(0, 60 * 60_000, "unloaded")
    assert not own.assign(0, 0, 60 * 60_000 + 1).flap  # more than 30 minutes later


def test_crash_counts_unowned_time_from_the_crash_and_cycles_split_it():
    own, _ = table()
    own.assign(0, 0, 0)
    own.assign(1, 0, 0)
    own.start_cycle(0)
    own.owner_lost([0, 1], 30_000, np.array([5.0, 7.0]))
    assert own.end_cycle(60_000) == 2 * 30_000
    own.start_cycle(60_000)
    own.free(0, 60_000, "failure")
    move = own.assign(0, 1, 70_000)
    assert move.cause == "failure" and move.unowned_ms == 40_000 and move.throughput == 5.0
    assert own.end_cycle(120_000) == 10_000 + 60_000  # bundle 1 still waiting
    assert not own.served_mask(np.array([False, True]))[1]
    assert own.served_mask(np.array([False, True]))[0]


def test_grow_and_delete():
    own, names = table()
    names.extend(["t/ns/0x80000000_0xc0000000", "t/ns/0xc0000000_0xffffffff"])
    own.grow(4)
    own.assign(1, 1, 0)
    own.delete(1, 100, "split")
    assert own.state[1] == BundleState.DELETED and own.owner[1] == -1
    assert own.state[3] == BundleState.FREE and own.ownership_map() == {}
    own.assign(2, 1, 100, "split")
    assert own.ownership_map() == {names[2]: "b2:8080"} and list(own.owned_by(1)) == [2]
