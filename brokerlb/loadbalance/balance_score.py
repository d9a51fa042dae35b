"""How balanced a cluster is, as one number an operator can watch: **balancedness**, 0–100.

Each broker's load is a number in percent -- brokerlb uses the broker's reported
``maxResourceUsage`` (the highest of CPU, direct memory and NIC in/out, in percent of their
limits), the figure Pulsar's load managers compare. With N brokers and loads ``l_1 .. l_N``:

* the **lower bound** of the busiest broker's load is the mean ``m = (l_1 + .. + l_N) / N``:
  however bundles are placed, some broker carries at least the mean;
* the **busiest broker's distance from the lower bound** is ``max(l) - m`` (percentage points):
  how much the busiest broker carries above what a perfect placement would give it;
* **balancedness** is ``100 * m / max(l)``: 100 when every broker carries the same load (or
  the cluster is idle), ``100 / N`` when one broker carries everything.

Bundles are indivisible, so a cluster with fewer bundles than brokers, or one very heavy bundle,
cannot reach 100; the score says how far the cluster is from the ideal, not whether the balancer
could do better.

>>> balancedness([50.0, 50.0, 50.0])
100.0
>>> balancedness([90.0, 30.0, 30.0])
55.55555555555556
>>> busiest_distance_from_lower_bound([90.0, 30.0, 30.0])
40.0
>>> balancedness([]) , balancedness([0.0, 0.0])
(100.0, 100.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["balancedness", "busiest_distance_from_lower_bound", "BalanceScore", "load_stats"]


def _finite(loads: Sequence[float]) -> list[float]:
    return [max(0.0, float(x)) for x in loads if math.isfinite(x)]


def balancedness(loads: Sequence[float]) -> float:
    """``100 * mean / max`` of the brokers' loads (100 for no broker or an idle cluster)."""
    values = _finite(loads)
    if not values or max(values) <= 0.0:
        return 100.0
    return 100.0 * (sum(values) / len(values)) / max(values)


def busiest_distance_from_lower_bound(loads: Sequence[float]) -> float:
    """``max - mean`` of the brokers' loads, in the loads' unit (0 for no broker)."""
    values = _finite(loads)
    if not values:
        return 0.0
    return max(values) - sum(values) / len(values)


def load_stats(loads: Sequence[float]) -> tuple[float, float]:
    """``(average, population standard deviation)`` of the loads (``(0, 0)`` for none)."""
    values = _finite(loads)
    if not values:
        return 0.0, 0.0
    avg = sum(values) / len(values)
    return avg, math.sqrt(sum((x - avg) ** 2 for x in values) / len(values))


@dataclass(frozen=True, slots=True)
class BalanceScore:
    """The cluster's balance at one moment (module docstring)."""

    brokers: int
    balancedness: float
    busiest_distance: float
    busiest_broker: str | None
    average: float
    std: float

    @classmethod
    def of(cls, loads: dict[str, float]) -> BalanceScore:
        values = list(loads.values())
        avg, std = load_stats(values)
        busiest = max(sorted(loads), key=lambda b: loads[b]) if loads else None
        return cls(
            brokers=len(loads),
            balancedness=balancedness(values),
            busiest_distance=busiest_distance_from_lower_bound(values),
            busiest_broker=busiest,
            average=avg,
            std=std,
        )

    def to_json(self) -> dict[str, object]:
        return {
            "brokers": self.brokers,
            "balancedness": round(self.balancedness, 3),
            "busiestBroker": self.busiest_broker,
            "busiestDistanceFromLowerBound": round(self.busiest_distance, 3),
            "averageLoad": round(self.average, 3),
            "loadStd": round(self.std, 3),
        }
