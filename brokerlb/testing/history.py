"""The ownership history a broker records for a fault campaign: one JSON object per line.

A broker started with ``brokerlbOwnershipHistoryFile`` appends a line for every change of what
it owns, serves and leads (:class:`HistoryEvent`); the campaign's checker
(:mod:`brokerlb.testing.ownership_checker`) reads the files of every broker process and proves
the ownership invariants over the whole run.

Kinds (``bundle`` is ``tenant/ns/0x…_0x…``):

* ``acquire`` / ``release`` / ``lost`` -- the bundle's ownership node created by this broker /
  deleted by it / gone with its session or taken by another session. ``epoch`` is the node's
  creation transaction id (ZooKeeper's ``czxid``), ``session`` the session that created it;
* ``disable`` -- the owner marked the node ``disabled`` (an unload or transfer started);
* ``serve-start`` / ``serve-stop`` -- the broker starts / stops accepting publishes for the
  bundle's topics (a bundle is served from its acquisition until its topics are fenced or closed,
  it is lost, or the broker can no longer confirm its session -- then ``at`` is the moment its own
  rule stopped it, which may be earlier than the moment it wrote the line: ``reason`` says so);
* ``lead-start`` / ``lead-stop`` -- leadership gained / lost; ``epoch`` is the cluster-wide leader
  epoch (the version of the leader-epoch node written in the same transaction as the leader node);
* ``lease`` -- while it serves anything, the broker writes how long its session is known alive
  (``until``, monotonic ns) whenever that moved by a quarter of the session timeout since the last
  line: up to ``until`` + a quarter of the timeout it may accept publishes, not after (a process
  killed right after resuming from a freeze never writes its ``serve-stop``; this bounds it);
* ``leader-action`` -- a command of a leader (unload, split) reached this broker as the bundle's
  owner; ``epoch`` is the leader epoch the command carried, ``reason`` is ``accepted`` or
  ``refused: ...``.

``at`` is nanoseconds on the machine's monotonic clock (``time.monotonic_ns``, Linux
``CLOCK_MONOTONIC``): one clock for every process on the machine, untouched by wall-clock jumps,
so events of different brokers can be ordered. It is the observer's clock, deliberately not the
broker's injected :class:`~brokerlb.clock.Clock` (a campaign may give a broker a jumping one).
``pid`` tells the incarnations of one broker id apart (a broker restarted on its port is a new
process). This module is pure: no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["HistoryEvent", "HISTORY_KINDS", "parse_history_line", "history_line"]

HISTORY_KINDS = frozenset(
    {
        "acquire",
        "release",
        "lost",
        "disable",
        "serve-start",
        "serve-stop",
        "lead-start",
        "lead-stop",
        "leader-action",
        "lease",
    }
)


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    """One line of a broker's ownership history (module docstring)."""

    at_ns: int
    broker: str
    pid: int
    kind: str
    bundle: str = ""
    session: int | None = None
    epoch: int | None = None
    reason: str = ""
    until_ns: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"at": self.at_ns, "broker": self.broker, "pid": self.pid, "kind": self.kind}
        if self.bundle:
            out["bundle"] = self.bundle
        if self.session is not None:
            out["session"] = self.session
        if self.epoch is not None:
            out["epoch"] = self.epoch
        if self.reason:
            out["reason"] = self.reason
        if self.until_ns is not None:
            out["until"] = self.until_ns
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HistoryEvent:
        kind = str(data["kind"])
        if kind not in HISTORY_KINDS:
            raise ValueError(f"unknown history event kind {kind!r}")
        session, epoch, until = data.get("session"), data.get("epoch"), data.get("until")
        return cls(
            at_ns=int(data["at"]),
            broker=str(data["broker"]),
            pid=int(data["pid"]),
            kind=kind,
            bundle=str(data.get("bundle", "")),
            session=None if session is None else int(session),
            epoch=None if epoch is None else int(epoch),
            reason=str(data.get("reason", "")),
            until_ns=None if until is None else int(until),
        )


def history_line(event: HistoryEvent) -> str:
    """The event as one line of JSON (with the newline)."""
    return json.dumps(event.to_json(), separators=(",", ":")) + "\n"


def parse_history_line(line: str) -> HistoryEvent | None:
    """The event of one line; ``None`` for a blank or torn line (a process killed mid-write)."""
    text = line.strip()
    if not text:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    try:
        return HistoryEvent.from_json(data)
    except (KeyError, TypeError, ValueError):
        return None
