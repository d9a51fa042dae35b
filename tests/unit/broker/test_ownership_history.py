"""The ownership-history hook: what a broker records as its ownership records and serving change."""

from __future__ import annotations

from pathlib import Path

from brokerlb.broker.ownership.ownership_history import OwnershipHistory
from brokerlb.ownership import BundleState
from brokerlb.ownership.record import OwnershipRecord
from brokerlb.testing.history import parse_history_line

B = "t/ns/0x00000000_0xffffffff"
S = BundleState


class Store:
    session_timeout = 4.0

    def __init__(self) -> None:
        self.until = float("inf")
        self.alive = True

    def session_confirmed_until(self) -> float:
        return self.until

    def session_known_alive(self) -> bool:
        return self.alive


class Channel:
    session = 7

    def __init__(self) -> None:
        self.records: dict[str, OwnershipRecord] = {}

    def record(self, bundle: str) -> OwnershipRecord | None:
        return self.records.get(bundle)


def lines(path: Path) -> list[tuple[str, int, str, int | None]]:
    events = [parse_history_line(line) for line in path.read_text().splitlines()]
    return [(e.kind, e.at_ns, e.reason, e.epoch) for e in events if e is not None]


def test_records_and_serving_make_the_history_lines(tmp_path: Path) -> None:
    clock = iter(range(100, 10_000, 100))
    store, channel = Store(), Channel()
    history = OwnershipHistory(
        str(tmp_path / "h.jsonl"),
        "b1",
        store=store,  # type: ignore[arg-type]
        channel=channel,  # type: ignore[arg-type]
        now_ns=lambda: next(clock),
    )
    assigning = OwnershipRecord(S.ASSIGNING, dst="b1", version=1)
    owned = OwnershipRecord(S.OWNED, dst="b1", version=2, dst_session=7)
    history.on_record(B, None, assigning)
    history.on_record(B, assigning, owned)
    channel.records[B] = owned
    history.on_serving(B, True, "owned")
    # a lapse: stopped at the moment the session stopped being known alive (300 ns), not when noticed
    store.alive, store.until = False, 0.000_000_300
    history.on_serving(B, False, "lost")
    store.alive, store.until = True, float("inf")
    history.on_serving(B, True, "owned")
    releasing = OwnershipRecord(S.RELEASING, src="b1", dst="b2", version=3, src_session=7)
    history.on_record(B, owned, releasing)
    history.on_serving(B, False, "transfer to b2")
    history.on_record(B, releasing, OwnershipRecord(S.ASSIGNING, src="b1", dst="b2", version=4))
    # a record of ours overridden by the leader: lost
    history.on_record(
        B, owned, OwnershipRecord(S.OWNED, dst="b3", src="b1", version=5, dst_session=9, force=True)
    )
    history.close()
    recorded = lines(tmp_path / "h.jsonl")
    assert [(k, r) for k, _, r, _ in recorded] == [
        ("acquire", str(owned)),
        ("serve-start", "owned"),
        ("serve-stop", "lost"),
        ("serve-start", "owned"),
        ("disable", str(releasing)),
        ("serve-stop", "transfer to b2"),
        ("release", "Assigning src b1 dst b2 v4"),
        ("lost", "Owned src b1 dst b3 force v5"),
    ]
    assert recorded[0][3] == 2 and recorded[1][3] == 2  # the record's versionId is the epoch
    assert recorded[2][1] == 300  # at the lapse, not when it was noticed


def test_lease_lines_while_serving(tmp_path: Path) -> None:
    store, channel = Store(), Channel()
    history = OwnershipHistory(str(tmp_path / "h.jsonl"), "b1", store=store, channel=channel)  # type: ignore[arg-type]
    history.on_confirmed(100.0)  # serving nothing: no line
    store.until = 101.0
    history.on_serving(B, True, "owned")  # the horizon it starts under
    history.on_confirmed(101.5)  # moved by less than a quarter of the timeout (1 s): no line
    history.on_confirmed(102.0)
    history.close()
    kinds = [(k, e) for k, _, _, e in lines(tmp_path / "h.jsonl")]
    assert [k for k, _ in kinds] == ["serve-start", "lease", "lease"]
