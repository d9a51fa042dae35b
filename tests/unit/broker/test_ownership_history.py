"""The ownership-history hook: what a broker records as its ownership and serving change."""

from __future__ import annotations

from pathlib import Path

from brokerlb.broker.ownership_history import OwnershipHistory
from brokerlb.coordination import OwnershipEvent, OwnershipEventKind
from brokerlb.testing.history import parse_history_line

B = "t/ns/0x00000000_0xffffffff"


class Store:
    session_timeout = 4.0

    def __init__(self) -> None:
        self.until = float("inf")

    def session_confirmed_until(self) -> float:
        return self.until


class Ownership:
    def __init__(self) -> None:
        self.ok: set[str] = set()

    def serving(self, bundle: str) -> bool:
        return bundle in self.ok

    def epoch_of(self, bundle: str) -> tuple[int | None, int | None]:
        return (7, 42)


def lines(path: Path) -> list[tuple[str, int, str]]:
    events = [parse_history_line(line) for line in path.read_text().splitlines()]
    return [(e.kind, e.at_ns, e.reason) for e in events if e is not None]


def test_a_lapse_stops_serving_at_its_deadline_and_a_confirmation_resumes_it(tmp_path: Path) -> None:
    clock = iter(range(100, 10_000, 100))
    store, ownership = Store(), Ownership()
    history = OwnershipHistory(
        str(tmp_path / "h.jsonl"),
        "b1",
        store=store,
        ownership=ownership,
        now_ns=lambda: next(clock),  # type: ignore[arg-type]
    )
    ownership.ok.add(B)
    history.on_ownership(OwnershipEvent(OwnershipEventKind.ACQUIRED, B))
    # a confirmation that came after its own deadline: stopped at the lapse, not yet serving again
    ownership.ok.clear()
    history.on_liveness_gap(0.000_000_250, 0.000_000_900)
    # the next confirmation: serving again
    ownership.ok.add(B)
    history.on_liveness_gap(0.000_000_950, 0.000_001_000)
    store.until = 0.000_000_300  # the session lapsed at 300 ns and was then lost
    history.on_ownership(OwnershipEvent(OwnershipEventKind.LOST, B, "expired"))
    history.close()
    assert [(k, r) for k, _, r in lines(tmp_path / "h.jsonl")] == [
        ("acquire", "acquired"),
        ("serve-start", "acquired"),
        ("serve-stop", "session unconfirmed"),
        ("serve-start", "session confirmed again"),
        ("serve-stop", "lost: expired"),
        ("lost", "expired"),
    ]
    recorded = lines(tmp_path / "h.jsonl")
    assert recorded[2][1] == 250  # at the lapse, not when it was noticed
    assert recorded[4][1] == 300 and recorded[5][1] == 300  # capped at the session deadline


def test_lease_lines_while_serving(tmp_path: Path) -> None:
    store, ownership = Store(), Ownership()
    history = OwnershipHistory(str(tmp_path / "h.jsonl"), "b1", store=store, ownership=ownership)  # type: ignore[arg-type]
    history.on_confirmed(100.0)  # serving nothing: no line
    store.until = 101.0
    ownership.ok.add(B)
    history.on_ownership(OwnershipEvent(OwnershipEventKind.ACQUIRED, B))  # the horizon it starts under
    history.on_confirmed(101.5)  # moved less than a quarter of the timeout: no line
    history.on_confirmed(102.0)  # a quarter (1 s): a line
    history.close()
    kinds = [
        (e.kind, e.until_ns)
        for e in map(parse_history_line, (tmp_path / "h.jsonl").read_text().splitlines())
        if e
    ]
    assert [k for k in kinds if k[0] == "lease"] == [("lease", 101_000_000_000), ("lease", 102_000_000_000)]
