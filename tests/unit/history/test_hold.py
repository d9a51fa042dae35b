"""The shutdown rule (DepartureHold), the members file, and a broker's writer under it."""

from __future__ import annotations

import doctest

import pytest

import brokerlb.history.hold
from brokerlb.broker.observe.history_sink import BrokerHistory
from brokerlb.clock import ManualClock
from brokerlb.errors import InvalidInputError, InvalidLoadDataError
from brokerlb.history import (
    BROKER_SAMPLES,
    TOPIC_SAMPLES,
    DepartureHold,
    read_history,
    read_members,
    write_members,
)
from brokerlb.model import LocalBrokerData


def test_doctest() -> None:
    assert doctest.testmod(brokerlb.history.hold).failed == 0


def test_a_later_departure_extends_the_hold_and_release_keeps_the_order() -> None:
    hold: DepartureHold[int] = DepartureHold(100)
    assert hold.admit([1], 0) == [1] and not hold.holding
    hold.departed(10)
    assert hold.admit([2], 20) == []
    hold.departed(50)  # until 150
    assert hold.admit([3], 120) == [] and hold.held == 2
    assert hold.admit([4], 150) == [2, 3, 4] and not hold.holding
    assert hold.dropped == 0


def test_a_stop_during_the_hold_drops_and_a_zero_hold_never_holds() -> None:
    hold: DepartureHold[int] = DepartureHold(100)
    hold.departed(0)
    hold.admit([1, 2], 5)
    assert hold.discard(lambda r: r == 1) == 1
    assert hold.drop() == 1 and hold.dropped == 1 and hold.release(10_000) == []
    instant: DepartureHold[int] = DepartureHold(0)
    instant.departed(0)
    assert instant.admit([7], 0) == [7]
    with pytest.raises(InvalidInputError):
        DepartureHold(-1)


def test_members_file_round_trip_and_bad_content(tmp_path) -> None:
    assert read_members(tmp_path) is None
    write_members(tmp_path, 5, ["b", "a"])
    assert read_members(tmp_path) == {"a", "b"}
    (tmp_path / BROKER_SAMPLES / "_members.json").write_text('{"brokers": "a"}')
    with pytest.raises(InvalidLoadDataError, match="_members.json"):
        read_members(tmp_path)


def test_a_writer_drops_what_it_held_when_it_stops_and_writes_it_when_it_serves_on(tmp_path) -> None:
    clock = ManualClock(1_700_000_000.0)
    history = BrokerHistory(str(tmp_path), "b1:8080", clock=clock, hold_s=10)
    history.report(clock.now_ms(), "b2:8080", LocalBrokerData())
    history.report(clock.now_ms(), "b3:8080", None)  # a departure: held from here
    history.report(clock.now_ms(), "b2:8080", LocalBrokerData())
    history.publish()
    assert [s.broker_id for s in read_history(tmp_path, BROKER_SAMPLES)] == ["b2:8080"]
    assert history.status()["heldBack"] == 2
    clock.advance(10)
    history.publish()  # the hold passed: the cluster served on
    samples = read_history(tmp_path, BROKER_SAMPLES)
    assert [(s.broker_id, s.is_removal) for s in samples] == [
        ("b2:8080", False),
        ("b3:8080", True),
        ("b2:8080", False),
    ]
    assert read_members(tmp_path) == {"b2:8080"}
    history.report(clock.now_ms(), "b2:8080", None)
    history.close()  # stops within the hold: the departure is not history
    assert len(read_history(tmp_path, BROKER_SAMPLES)) == 3
    assert history.status()["droppedAtStop"] == 1
    assert read_history(tmp_path, TOPIC_SAMPLES) == []
