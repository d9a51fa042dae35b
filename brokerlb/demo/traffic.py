"""The demo's traffic: skewed (Zipf) per-topic rates, a surge on one broker's topics, new topics.

Pure: given a seed and the topic names it returns rates (messages/s); the runner turns them
into real producers and consumers over the data path (:mod:`brokerlb.perf.runner`).

>>> model = TrafficModel(total_rate=100.0, seed=1)
>>> rates = model.rates(["a", "b", "c", "d"])
>>> round(sum(rates.values()), 6), max(rates.values()) > 40
(100.0, True)
>>> surged = model.surge(rates, {"a", "b"})
>>> round(surged["a"] / rates["a"], 1), surged["c"] == rates["c"]
(4.0, True)
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["TrafficModel"]


@dataclass(frozen=True)
class TrafficModel:
    #: messages per second over all topics before the surge (each also read once by a consumer)
    total_rate: float = 150.0
    #: bytes per message
    message_size: int = 512
    #: Zipf exponent of the per-topic rates (1.0 = classic skew)
    skew: float = 1.0
    #: how much the surge multiplies the rates of the topics it hits
    surge_factor: float = 4.0
    #: messages per second of each topic added in the growth phase
    new_topic_rate: float = 0.5
    seed: int = 42

    def rates(self, topics: list[str]) -> dict[str, float]:
        """Per-topic msg/s: Zipf weights in a seeded random order, summing to ``total_rate``."""
        rng = random.Random(self.seed)
        order = list(topics)
        rng.shuffle(order)
        weights = {t: 1.0 / (rank + 1) ** self.skew for rank, t in enumerate(order)}
        scale = self.total_rate / sum(weights.values())
        return {t: weights[t] * scale for t in topics}

    def surge(self, rates: dict[str, float], hit: set[str]) -> dict[str, float]:
        """The rates with the topics in ``hit`` multiplied by ``surge_factor``."""
        return {t: r * self.surge_factor if t in hit else r for t, r in rates.items()}
