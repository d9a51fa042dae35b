"""The managed ledger's pure core: the ledger list, rollover, trimming, cursor conversion."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokerlb.errors import InvalidInputError
from brokerlb.mledger import CursorInfo, LedgerInfo, LedgerList, ManagedLedgerConfig, Position
from brokerlb.mledger.config import MB
from brokerlb.mledger.cursor import CursorState, acked_ranges, ranges_to_set


def build(sizes: list[int], *, first_id: int = 3, closed_all: bool = False) -> LedgerList:
    """Ledgers of ``sizes`` entries (10 bytes each); ids grow by 2; the last one open."""
    ledgers = LedgerList()
    base = offset = 0
    for i, n in enumerate(sizes):
        closed = closed_all or i < len(sizes) - 1
        ledgers.add(LedgerInfo(first_id + 2 * i, n, 10 * n, 1000 * i, base, offset, closed))
        base += n
        offset += 10 * n
    return ledgers


def test_positions_and_sequence_numbers_map_both_ways():
    ledgers = build([3, 0, 2, 4])
    assert ledgers.first_seq == 0 and ledgers.next_seq == 9 and ledgers.written == 90
    assert [ledgers.position_of(s) for s in range(9)] == [
        Position(3, 0),
        Position(3, 1),
        Position(3, 2),
        Position(7, 0),
        Position(7, 1),
        Position(9, 0),
        Position(9, 1),
        Position(9, 2),
        Position(9, 3),
    ]
    assert ledgers.position_of(9) == Position(9, 4)  # the next entry of the open ledger
    assert ledgers.seq_of(Position(7, 1)) == 4
    assert ledgers.seq_of(Position(7, 2)) is None  # beyond a closed ledger
    assert ledgers.seq_of(Position(5, 0)) is None  # the empty ledger holds nothing
    assert ledgers.seq_of(Position(4, 0)) is None  # no such ledger
    assert ledgers.seq_at_or_after(Position(4, 0)) == 3
    assert ledgers.seq_at_or_after(Position(1, 7)) == 0
    assert ledgers.seq_at_or_after(Position(99, 0)) == 9
    assert ledgers.position_before(3) == Position(3, 2)
    assert ledgers.position_before(0) == Position(3, -1)


def test_ledgers_must_follow_each_other():
    ledgers = build([2])
    with pytest.raises(InvalidInputError, match="ids must grow"):
        ledgers.add(LedgerInfo(3, base=2, base_offset=20))
    with pytest.raises(InvalidInputError, match="must start at entry 2"):
        ledgers.add(LedgerInfo(8, base=5, base_offset=20))


def test_rollover_follows_pulsars_rule():
    config = ManagedLedgerConfig(max_entries_per_ledger=10, min_rollover_ms=1000, max_rollover_ms=5000)
    ledgers = LedgerList([LedgerInfo(1, 10, 100, timestamp_ms=0)])
    assert not ledgers.should_rollover(1000, config)  # full, but not older than the minimum
    assert ledgers.should_rollover(1001, config)
    ledgers = LedgerList([LedgerInfo(1, 3, 30, timestamp_ms=0)])
    assert not ledgers.should_rollover(4999, config)
    assert ledgers.should_rollover(5000, config)  # too old, with entries
    assert not LedgerList([LedgerInfo(1, 0, 0, timestamp_ms=0)]).should_rollover(10**9, config)
    sized = ManagedLedgerConfig(max_size_per_ledger=1 * MB, min_rollover_ms=0)
    assert LedgerList([LedgerInfo(1, 1, MB, timestamp_ms=0)]).should_rollover(0, sized)


def test_trimming_goes_by_whole_ledgers_behind_every_cursor():
    ledgers = build([3, 3, 3])  # ledgers 3, 5 closed at 0 and 1000; 7 open
    none = ManagedLedgerConfig(retention_time_ms=0, retention_size=0)
    assert ledgers.trimmable(2, 10_000, none) == []  # the first ledger is not fully consumed
    assert ledgers.trimmable(3, 10_000, none) == [3]
    assert ledgers.trimmable(9, 10_000, none) == [3, 5]  # never the current ledger
    forever = ManagedLedgerConfig(retention_time_ms=-1, retention_size=-1)
    assert ledgers.trimmable(9, 10_000, forever) == []
    by_time = ManagedLedgerConfig(retention_time_ms=5000, retention_size=-1)
    assert ledgers.trimmable(9, 5500, by_time) == [3]
    by_size = ManagedLedgerConfig(retention_time_ms=-1, retention_size=60)
    assert ledgers.trimmable(9, 10_000, by_size) == [3]  # 90 bytes; 60 remain without the first
    ledgers.remove([3])
    assert ledgers.first_seq == 3 and ledgers.position_of(3) == Position(5, 0)
    assert ledgers.seq_at_or_after(Position(3, 1)) == 3


def test_offsets_are_exact_at_ledger_edges():
    ledgers = build([4, 2])
    assert ledgers.offset_of(0) == 0 and ledgers.offset_of(4) == 40 and ledgers.offset_of(6) == 60
    assert ledgers.offset_of(2) == 20


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=8))
def test_position_round_trip(sizes):
    ledgers = build(sizes)
    for seq in range(ledgers.next_seq):
        assert ledgers.seq_of(ledgers.position_of(seq)) == seq
    for seq in range(ledgers.next_seq + 1):  # the mark-delete position of "everything below seq"
        assert ledgers.seq_of(ledgers.position_before(seq)) == seq - 1


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 60)))
def test_acked_ranges_round_trip(acked):
    ranges = acked_ranges(acked)
    assert ranges_to_set(ranges) == acked
    assert all(lo <= hi for lo, hi in ranges)
    assert all(a[1] + 1 < b[0] for a, b in zip(ranges, ranges[1:], strict=False))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=6),
    st.data(),
)
def test_cursor_round_trip_through_positions(sizes, data):
    ledgers = build(sizes)
    end = ledgers.next_seq
    mark = data.draw(st.integers(-1, end - 1))
    acked = data.draw(st.sets(st.integers(mark + 2, end - 1))) if mark + 2 <= end - 1 else set()
    above = sorted(set(range(mark + 1, end)) - acked)
    partial = {s: data.draw(st.integers(1, 255)) for s in above[:2]}
    redeliveries = {s: data.draw(st.integers(1, 5)) for s in above[-2:]}
    state = CursorState(mark, frozenset(acked), partial, redeliveries)
    info = CursorInfo.of("sub", "Shared", state, ledgers)
    again = CursorInfo.from_json("sub", info.to_json())
    assert again == info
    assert again.state(ledgers) == state


def test_cursor_in_deleted_ledgers_is_clamped_to_the_first_kept_entry():
    ledgers = build([3, 3, 3])
    info = CursorInfo.of("s", "Exclusive", CursorState(1, frozenset({4})), ledgers)
    assert str(info.mark_delete) == "3:1" and info.individually_deleted_text() == "[(5:0..5:1]]"
    ledgers.remove([3, 5])
    assert info.state(ledgers) == CursorState(5, frozenset())


def test_a_malformed_cursor_names_itself():
    with pytest.raises(InvalidInputError, match="Stored cursor 'c' is malformed"):
        CursorInfo.from_json("c", b'{"type": "Shared", "markDeletePosition": "x"}')
    with pytest.raises(InvalidInputError, match="Invalid position"):
        Position.parse("12")
