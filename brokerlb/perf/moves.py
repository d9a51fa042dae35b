"""What a bundle move cost the producers: the longest publish pause of the moved topics.

A :class:`Move` is one unload of a bundle -- ``unload`` (plain: clients look the topic up
again), ``transfer`` (to a named broker: clients reconnect there at once, PIP-307) or
``shed`` (the leader's shedding, which transfers) -- with the time it started and ended
(monotonic seconds) and the topics of the bundle that had producers.
:func:`attribute_pauses` gives each move the longest kept pause
(:class:`~brokerlb.perf.pauses.PauseTracker`) of those topics that overlaps the move
(from its start to ``settle`` seconds after its end); :func:`pause_summary` compares the
kinds.

>>> from brokerlb.perf.pauses import Pause
>>> moves = [Move("unload", "ns/0x0_0x8", 10.0, 10.01, frozenset({"a"})),
...          Move("transfer", "ns/0x8_0xf", 20.0, 20.02, frozenset({"b"}))]
>>> attribute_pauses(moves, [Pause("a", 9.99, 10.25), Pause("b", 20.0, 20.04), Pause("a", 30.0, 31.0)])
>>> [round(m.pause.seconds, 2) for m in moves]
[0.26, 0.04]
>>> pause_summary(moves)["unload"]["maxMs"], pause_summary(moves)["transfer"]["maxMs"]
(260.0, 40.0)

The clients' view needs no knowledge of the moves: :func:`pauses_by_close` takes every
close a producer saw (``(topic, time, reason)``) and the pause around it, grouped by the
broker's reason (``TopicUnloaded``: plain unload; ``TopicTransferred``: transfer).

>>> pauses_by_close([("a", 10.05, "TopicUnloaded"), ("b", 20.01, "TopicTransferred")],
...                 [Pause("a", 9.99, 10.25), Pause("b", 20.0, 20.04)])
{'TopicUnloaded': {'closes': 1, 'measured': 1, 'maxMs': 260.0, 'medianMs': 260.0, 'p90Ms': 260.0}, 'TopicTransferred': {'closes': 1, 'measured': 1, 'maxMs': 40.0, 'medianMs': 40.0, 'p90Ms': 40.0}}
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from brokerlb.perf.pauses import Pause

__all__ = ["Move", "attribute_pauses", "pause_summary", "pauses_by_close", "MOVE_KINDS"]

MOVE_KINDS = ("unload", "transfer", "shed")


@dataclass
class Move:
    kind: str
    bundle: str
    start: float
    end: float
    topics: frozenset[str]
    source: str | None = None
    destination: str | None = None
    pause: Pause | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "bundle": self.bundle,
            "source": self.source,
            "destination": self.destination,
            "topics": len(self.topics),
            "tookMs": round((self.end - self.start) * 1e3, 1),
            "pauseMs": None if self.pause is None else round(self.pause.seconds * 1e3, 1),
        }


def attribute_pauses(moves: Iterable[Move], pauses: Iterable[Pause], settle: float = 3.0) -> None:
    """Set each move's ``pause``: the longest pause of its topics overlapping ``[start, end + settle]``."""
    kept = list(pauses)
    for move in moves:
        found = [p for p in kept if p.topic in move.topics and p.overlaps(move.start, move.end + settle)]
        move.pause = max(found, key=lambda p: p.seconds, default=None)


def pause_summary(moves: Iterable[Move]) -> dict[str, dict[str, Any]]:
    """Per kind: how many moves, how many had traffic, the longest and the median pause (ms)."""
    out: dict[str, dict[str, Any]] = {}
    for kind in MOVE_KINDS:
        of_kind = [m for m in moves if m.kind == kind]
        if not of_kind:
            continue
        paused = sorted(m.pause.seconds * 1e3 for m in of_kind if m.pause is not None)
        out[kind] = {
            "moves": len(of_kind),
            "measured": len(paused),
            "maxMs": round(max(paused), 1) if paused else None,
            "medianMs": round(statistics.median(paused), 1) if paused else None,
        }
    return out


def pauses_by_close(
    closes: Iterable[tuple[str, float, str]], pauses: Iterable[Pause], before: float = 0.5, after: float = 3.0
) -> dict[str, dict[str, Any]]:
    """Per close reason: the pause of the topic around each close (``[t - before, t + after]``).

    A producer that had nothing pending when its connection closed shows no pause (it is
    counted in ``closes`` but not in ``measured``).
    """
    by_topic: dict[str, list[Pause]] = {}
    for p in pauses:
        by_topic.setdefault(p.topic, []).append(p)
    found: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    for topic, at, reason in closes:
        counts[reason] = counts.get(reason, 0) + 1
        around = [p.seconds for p in by_topic.get(topic, ()) if p.overlaps(at - before, at + after)]
        if around:
            found.setdefault(reason, []).append(max(around) * 1e3)
    out: dict[str, dict[str, Any]] = {}
    for reason, count in counts.items():
        ms = sorted(found.get(reason, []))
        out[reason] = {
            "closes": count,
            "measured": len(ms),
            "maxMs": round(ms[-1], 1) if ms else None,
            "medianMs": round(statistics.median(ms), 1) if ms else None,
            "p90Ms": round(ms[min(len(ms) - 1, int(0.9 * len(ms)))], 1) if ms else None,
        }
    return out
