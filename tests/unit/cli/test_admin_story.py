"""``brokerlb admin namespaces bundle-story`` renders every kind of story entry.

A story mixes ownership transitions with the leader's decisions (which have no ``from``/``to``);
the table crashed with ``KeyError: 'from'`` on any bundle the leader had moved.
"""

from __future__ import annotations

from rich.console import Console

from brokerlb.cli import admin_namespaces
from brokerlb.cli.admin import story_row, story_table

LEADER = "127.0.0.1:8080"
HOT = "127.0.0.1:8081"
COLD = "127.0.0.1:8082"

STORY = {
    "bundle": "public/default/0x00000000_0x40000000",
    "owner": COLD,
    "transitions": [
        {"kind": "transition", "from": "Init", "to": "Assigning", "atMs": 1_700_000_000_000,
         "by": HOT, "reason": "lookup", "forced": False,
         "destination": HOT, "version": 1, "recordedBy": HOT},
        {"kind": "decision", "decision": "transfer", "atMs": 1_700_000_060_250, "reason": "Overloaded",
         "detail": "cpu 92% > 85%", "source": HOT, "destination": COLD, "executed": True,
         "recordedBy": LEADER},
        {"kind": "decision", "decision": "split", "atMs": 1_700_000_061_000, "reason": "Topics",
         "detail": "", "executed": False, "recordedBy": LEADER},
        {"kind": "transition", "from": "Owned", "to": "Releasing", "atMs": 1_700_000_060_300,
         "by": HOT, "reason": "transfer", "forced": True,
         "source": HOT, "destination": COLD, "version": 2, "recordedBy": HOT},
    ],
    "unreachable": ["127.0.0.1:8083"],
}  # fmt: skip


def test_a_leader_decision_is_a_row_with_its_reason_and_brokers() -> None:
    at, recorded, what, _by, reason, _version = story_row(STORY["transitions"][1])
    assert (at, recorded) == ("22:14:20.250", LEADER)
    assert what == f"leader decided transfer ({HOT} -> {COLD})"
    assert reason == "Overloaded: cpu 92% > 85%"
    assert story_row(STORY["transitions"][2])[2] == "leader decided split NOT CARRIED OUT"


def test_a_transition_row_names_the_states_and_a_forced_move() -> None:
    row = story_row(STORY["transitions"][3])
    assert row[2] == f"Owned -> Releasing ({HOT} -> {COLD}) FORCED"
    assert row[5] == "v2"


def test_the_table_of_a_moved_bundle_renders(monkeypatch) -> None:
    out = Console(width=200, record=True)
    monkeypatch.setattr(admin_namespaces, "console", out)
    story_table(STORY)
    text = out.export_text()
    assert "leader decided transfer" in text and "Overloaded" in text
    assert "not reached: 127.0.0.1:8083" in text
