"""Explicit memory carried from one load-balancing cycle to the next.

Pulsar keeps some state inside its strategy objects: ThresholdShedder's usage history,
AvgShedder's hit counters and bundle -> broker bindings, TransferShedder's hit count,
the modular LeastResourceUsageWithWeight EMA, the round-robin counter, the extensible
split strategy's hit counts. brokerlb strategies are stateless objects; what they
remember lives in a :class:`StrategyState` the caller owns and passes to every call:

* the live leader keeps one for as long as it is leader (a new leader starts empty,
  as a new Pulsar leader does);
* the planner keeps one per batch ``session`` (multi-cycle what-ifs);
* the simulator keeps one per simulated leader.

Each strategy stores one entry under its key (Pulsar's full class name), created on first
use by a factory -- usually the strategy's own small state dataclass::

    history = state.get(ThresholdShedder.class_name, ThresholdShedderState).history

Randomness is separate: strategies take a seeded :class:`random.Random` (:func:`new_rng`),
so the same seed, view and state give the same decisions.

>>> state = StrategyState()
>>> state.get("counter", dict)["n"] = 1
>>> state.get("counter", dict), "counter" in state
({'n': 1}, True)
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = ["StrategyState", "new_rng", "DEFAULT_SEED"]

T = TypeVar("T")

#: Seed used when none is given (the planner is deterministic by default).
DEFAULT_SEED = 0


def new_rng(seed: int | None = DEFAULT_SEED) -> random.Random:
    """A random source for tie-breaking; ``seed=None`` seeds it from the OS (live use)."""
    return random.Random(seed)


class StrategyState:
    """Per-strategy memory, keyed by strategy (see the module docstring).

    Not thread-safe: one leader loop / planner session uses it at a time.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[str, Any] = {}

    def get(self, key: str, factory: Callable[[], T]) -> T:
        """The entry for ``key``, created with ``factory()`` on first use.

        Raises :class:`TypeError` if the stored entry is not of the type ``factory`` builds
        (when ``factory`` is a class): two strategies sharing a key by mistake.
        """
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = factory()
        elif isinstance(factory, type) and not isinstance(entry, factory):
            raise TypeError(f"state entry {key!r} holds a {type(entry).__name__}, not a {factory.__name__}")
        return entry

    def find(self, key: str) -> Any | None:
        """The entry for ``key`` if there is one (no creation)."""
        return self._entries.get(key)

    def clear(self, key: str | None = None) -> None:
        """Forget one strategy's memory, or everything (``key=None``)."""
        if key is None:
            self._entries.clear()
        else:
            self._entries.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        """Always true: an empty state is still a state (``state or StrategyState()`` must not
        silently replace a caller's fresh state)."""
        return True

    def to_json(self) -> dict[str, Any]:
        """A JSON-able picture of every entry (dataclasses as dicts, objects via ``to_json()``),
        for inspection and logs; not meant to be read back."""
        return {key: _jsonable(self._entries[key]) for key in sorted(self._entries)}

    def __repr__(self) -> str:
        return f"StrategyState({', '.join(sorted(self._entries))})"


def _jsonable(value: Any) -> Any:
    if hasattr(value, "to_json"):
        return value.to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(_jsonable(v) for v in value)
    return value
