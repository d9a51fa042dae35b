"""Publish pauses as a producer sees them: the longest wait for an ack while sends are pending.

Per producer, a pause runs from the moment it started waiting -- the last ack, or the
send that ended an idle spell -- to the next ack (or error). An idle producer is not
paused. So a producer that keeps 5 sends in flight and gets an ack every 2 ms has 2 ms
pauses; one whose bundle moves waits from its last ack on the old owner to its first ack
on the new one, and that whole gap is the pause a move costs it.

Pauses above ``keep_above`` seconds are kept (bounded) with their topic and times, so a
test can tell which move caused which pause.

>>> t = PauseTracker(keep_above=0.05)
>>> t.on_send("a", 0.0); t.on_send("a", 0.001); t.on_done("a", 0.002)
>>> t.on_done("a", 0.300)                      # the second ack came 298 ms after the first
>>> round(t.longest.seconds, 3), t.longest.topic, len(t.kept)
(0.298, 'a', 1)
>>> t.on_send("b", 1.0); t.on_done("b", 1.004)  # a send after idling: its own latency only
>>> round(t.longest.seconds, 3)
0.298
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Pause", "PauseTracker"]


@dataclass(frozen=True, slots=True)
class Pause:
    topic: str
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def overlaps(self, start: float, end: float) -> bool:
        return self.start < end and self.end > start


class _State:
    __slots__ = ("outstanding", "waiting_since")

    def __init__(self) -> None:
        self.outstanding = 0
        self.waiting_since = 0.0


class PauseTracker:
    def __init__(self, keep_above: float = 0.05, max_kept: int = 100_000) -> None:
        self.keep_above = keep_above
        self.max_kept = max_kept
        self._state: dict[str, _State] = {}
        self.longest = Pause("", 0.0, 0.0)
        self.kept: list[Pause] = []

    def on_send(self, topic: str, now: float) -> None:
        state = self._state.get(topic)
        if state is None:
            state = self._state[topic] = _State()
        if state.outstanding == 0:
            state.waiting_since = now
        state.outstanding += 1

    def on_done(self, topic: str, now: float) -> None:
        """A send completed (acked or failed)."""
        state = self._state.get(topic)
        if state is None or state.outstanding == 0:
            return
        seconds = now - state.waiting_since
        if seconds > self.longest.seconds:
            self.longest = Pause(topic, state.waiting_since, now)
        if seconds > self.keep_above and len(self.kept) < self.max_kept:
            self.kept.append(Pause(topic, state.waiting_since, now))
        state.outstanding -= 1
        state.waiting_since = now
