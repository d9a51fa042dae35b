"""``RoundRobinBrokerSelector``: hand bundles to the candidates in turn.

Goal: spread assignments evenly by count, ignoring load (useful for tests and for clusters of
identical brokers). Pulsar class ``org.apache.pulsar.broker.loadbalance.impl.RoundRobinBrokerSelector``.

Config keys read: none.

State kept between calls (:class:`RoundRobinState`): a counter and a cached copy of the
candidate list. On each call (no candidates: ``None``, the counter does not move):

1. ``index = counter % len(candidates)``; the counter advances, wrapping from
   ``Integer.MAX_VALUE`` (2**31 - 1) to 0;
2. the cache is replaced by the current candidates when its size differs or it is too short;
3. if the cached broker at ``index`` is no longer a candidate, the cache is refreshed and
   indexed again.

So a reordered candidate set of the same size keeps the old order, as in Pulsar.

Worked example (``ModularLoadManagerStrategyTest.testRoundRobinBrokerSelector``): candidates
``[1, 2, 3]`` give 1, 2, 3, 1, ...; after 20 calls candidates ``[1, 2, 4]`` (same size, index 2
names the departed broker 3) refresh the cache and give 4, 1, 2, 4, ...
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from brokerlb.loadbalance.state import StrategyState

if TYPE_CHECKING:
    from brokerlb.loadbalance.view import ClusterView

__all__ = ["NAME", "JAVA_INT_MAX", "RoundRobinBrokerSelector", "RoundRobinState", "select_round_robin"]

#: Pulsar's class name.
NAME = "org.apache.pulsar.broker.loadbalance.impl.RoundRobinBrokerSelector"
#: Java ``Integer.MAX_VALUE``: where the counter wraps to 0.
JAVA_INT_MAX = 2**31 - 1


@dataclass
class RoundRobinState:
    """The counter and the cached candidate list. JSON: ``{"count": n, "cache": [...]}``."""

    count: int = 0
    cache: list[str] = field(default_factory=list)

    def next_count(self) -> int:
        current = self.count
        self.count = 0 if current == JAVA_INT_MAX else current + 1
        return current

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "cache": list(self.cache)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RoundRobinState:
        return cls(int(data.get("count", 0)), [str(b) for b in data.get("cache", [])])


def select_round_robin(candidates: Sequence[str], state: RoundRobinState) -> str | None:
    """``selectBroker`` (module docstring)."""
    size = len(candidates)
    if size == 0:
        return None
    index = state.next_count() % size
    cache = state.cache
    if len(cache) <= index or len(cache) != size:
        cache = list(candidates)
    selected = cache[index]
    if selected not in candidates:
        cache = list(candidates)
        selected = cache[index]
    state.cache = cache
    return selected


class RoundRobinBrokerSelector:
    """The registered placement strategy; its counter lives in ``state[NAME]`` (:class:`RoundRobinState`)."""

    class_name: ClassVar[str] = NAME

    def select_broker(
        self,
        view: ClusterView,
        candidates: Sequence[str],
        bundle: str,
        state: StrategyState,
        rng: random.Random,
    ) -> str | None:
        return select_round_robin(candidates, state.get(NAME, RoundRobinState))
