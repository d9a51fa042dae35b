"""The leader's load-history sink: every load report it reads, as JSON Lines per UTC day.

A thin adapter over :class:`brokerlb.history.HistoryWriter` (the pipeline's format,
``docs/load-history.md``): each report becomes a ``BrokerSample`` in
``<dir>/broker-samples/``; a broker whose registration vanished becomes a removal
sample. Files are rolled (published) every ``roll_every_s`` on the clock, so the
pipeline sees recent data before the day ends. The writer id is ``leader-<brokerId>``, so two
brokers that lead one after the other never write into the same file.
"""

from __future__ import annotations

import logging

from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.model import LocalBrokerData

__all__ = ["HistoryWriterSink", "open_history_sink"]

logger = logging.getLogger(__name__)


class HistoryWriterSink:
    def __init__(
        self, directory: str, broker_id: str, *, roll_every_s: float = 300.0, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        from brokerlb.history import HistoryWriter

        self.writer = HistoryWriter(directory, f"leader-{broker_id}")
        self._roll_every = roll_every_s
        self._clock = clock
        self._rolled_at = clock.monotonic()
        self.samples = 0
        #: The report last written per broker (``None`` after its removal sample).
        self.latest: dict[str, LocalBrokerData | None] = {}

    def report(self, now_ms: int, broker_id: str, data: LocalBrokerData | None) -> None:
        from brokerlb.history import BrokerSample

        sample = (
            BrokerSample(now_ms, broker_id, data)
            if data is not None
            else BrokerSample.removed(now_ms, broker_id)
        )
        self.writer.write(sample)
        self.samples += 1
        self.latest[broker_id] = data
        if self._clock.monotonic() - self._rolled_at >= self._roll_every:
            self.writer.roll()
            self._rolled_at = self._clock.monotonic()

    def close(self) -> None:
        self.writer.close()


def open_history_sink(directory: str, broker_id: str, clock: Clock = SYSTEM_CLOCK) -> HistoryWriterSink:
    return HistoryWriterSink(directory, broker_id, clock=clock)
