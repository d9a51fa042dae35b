"""The demo's traffic: skewed (Zipf) per-topic rates, a surge on one broker's bundles, new topics.

Pure: given a seed and the topic names it returns rates; the runner applies them through
:class:`~brokerlb.broker.synthetic.SyntheticClients`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from brokerlb.broker.topics import TopicStats

__all__ = ["TrafficModel"]


@dataclass(frozen=True)
class TrafficModel:
    #: messages per second over all topics (in; consumers read each message once: out = in)
    total_rate: float = 24_000.0
    #: bytes per message
    message_size: int = 2048
    #: Zipf exponent of the per-topic rates (1.0 = classic skew)
    skew: float = 1.0
    #: how much the surge multiplies the rates of the topics it hits
    surge_factor: float = 6.0
    seed: int = 42

    def rates(self, topics: list[str]) -> dict[str, float]:
        """Per-topic msg/s: Zipf weights in a seeded random order, summing to ``total_rate``."""
        rng = random.Random(self.seed)
        order = list(topics)
        rng.shuffle(order)
        weights = {t: 1.0 / (rank + 1) ** self.skew for rank, t in enumerate(order)}
        scale = self.total_rate / sum(weights.values())
        return {t: w * scale for t, w in weights.items()}

    def stats(self, rate: float) -> TopicStats:
        return TopicStats(msg_rate_in=rate, msg_throughput_in=rate * self.message_size,
                          msg_rate_out=rate, msg_throughput_out=rate * self.message_size,
                          producer_count=1, consumer_count=1)
