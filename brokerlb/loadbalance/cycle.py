"""The leader's cycle: when each step is due, and the one order its decisions are carried out in.

The live broker (:mod:`brokerlb.broker.leader.leader`) and the simulator (:mod:`brokerlb.sim.leadership`)
are both a scheduler plus an executor around one :class:`~brokerlb.loadbalance.leader.Leader`:

* :class:`LeaderSchedule` says when shedding, the extensible split check and the persisting of
  load data are due (every ``loadBalancerSheddingIntervalMinutes``,
  ``loadBalancerSplitIntervalMinutes``, ``loadBalancerResourceQuotaUpdateIntervalMinutes``,
  counted from the start of the leadership and read at each step, so a dynamic change applies
  from the next one). The modular split check runs after every refresh instead
  (:meth:`LeaderSchedule.split_after_refresh`).
* :class:`ClusterActions` is what a shell implements to carry decisions out: its time, moves
  (unloads and transfers), splits and merges. The simulator's actions complete at once; the
  broker's go to the bundles' owners.
* :func:`shedding_cycle` and :func:`split_cycle` are the steps: decide, carry out, then record
  what was carried out. A shedding step carries out its moves, then the ring changes a
  balancing strategy decided with them (splits, then merges). Both are coroutines that await
  only the actions, so the simulator runs them with :func:`run_now` (no event loop) and the
  broker awaits them.

Each step returns a :class:`CycleRecord`: every decision with its reason and numbers, what was
carried out and what was not. Shells hand the records to their listeners (logs, metrics, the
dashboard, the balancer's status).
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from brokerlb.config import ServiceConfig, is_extensible_load_manager
from brokerlb.loadbalance.decisions import MergeDecision, SplitDecision, UnloadDecision
from brokerlb.loadbalance.leader import ClusterInputs, Leader, Move

__all__ = [
    "ClusterActions",
    "CycleRecord",
    "LeaderSchedule",
    "STEP_INTERVAL_KEYS",
    "run_now",
    "shedding_cycle",
    "split_cycle",
]

T = TypeVar("T")

#: step -> the config key of its interval (minutes)
STEP_INTERVAL_KEYS = {
    "shedding": "loadBalancerSheddingIntervalMinutes",
    "split": "loadBalancerSplitIntervalMinutes",
    "persist": "loadBalancerResourceQuotaUpdateIntervalMinutes",
}


class ClusterActions(Protocol):
    """How a shell carries out a leader's decisions."""

    def now_ms(self) -> int:
        """The shell's time (the simulation's clock; the broker's injected clock)."""

    async def move(self, moves: Sequence[Move]) -> list[bool]:
        """Carry out unloads and transfers (concurrently where the shell can); ``True`` for each
        that was carried out, ``False`` for one that was not (bundle gone, owner gone, failure)."""

    async def split(self, splits: Sequence[SplitDecision]) -> list[bool]:
        """Split bundles through their owners; ``True`` for each split carried out."""

    async def merge(self, merges: Sequence[MergeDecision]) -> list[bool]:
        """Merge adjacent bundles (parts unloaded, the merged range written, the bundle placed);
        ``True`` for each merge carried out."""


Decision = UnloadDecision | SplitDecision | MergeDecision


@dataclass(frozen=True, slots=True)
class CycleRecord:
    """What one leader step decided and what came of it."""

    #: ``shedding`` or ``split``
    kind: str
    at_ms: int
    leader: str
    #: every decision of the step, in order (skips and failures included, with their reasons)
    decisions: tuple[Decision, ...]
    #: the unloads as they were carried out (transfer or unload), and which were
    moves: tuple[Move, ...] = ()
    moves_done: tuple[bool, ...] = ()
    #: the splits decided (``Success``), and which were carried out
    splits: tuple[SplitDecision, ...] = ()
    splits_done: tuple[bool, ...] = ()
    #: the merges decided (``Success``), and which were carried out
    merges: tuple[MergeDecision, ...] = ()
    merges_done: tuple[bool, ...] = ()
    #: the strategy's numbers (e.g. TransferShedder's average and spread)
    stats: dict[str, Any] = field(default_factory=dict)

    def decision_keys(self) -> list[str]:
        """``kind/label/reason`` of every decision (``unload/Success/Overloaded`` ...), for counters."""
        return [f"{_kind(d)}/{d.label}/{d.reason}" for d in self.decisions]

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "atMs": self.at_ms,
            "leader": self.leader,
            "decisions": [{"kind": _kind(d), **d.to_json()} for d in self.decisions],
            "moves": [
                {
                    "bundle": m.bundle,
                    "source": m.source,
                    "destination": m.destination,
                    "transfer": m.transfer,
                    "reason": m.reason,
                    "detail": m.detail,
                    "executed": done,
                }
                for m, done in zip(self.moves, self.moves_done, strict=True)
            ],
            "splits": [
                {**d.to_json(), "executed": done}
                for d, done in zip(self.splits, self.splits_done, strict=True)
            ],
            "merges": [
                {**d.to_json(), "executed": done}
                for d, done in zip(self.merges, self.merges_done, strict=True)
            ],
            "stats": {k: _jsonable(v) for k, v in self.stats.items()},
        }


def _jsonable(value: Any) -> Any:
    """A strategy's number as JSON: sets become sorted lists, mappings and sequences recurse."""
    if isinstance(value, set | frozenset):
        return sorted(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _kind(decision: Decision) -> str:
    if isinstance(decision, UnloadDecision):
        return "unload"
    return "split" if isinstance(decision, SplitDecision) else "merge"


async def shedding_cycle(leader: Leader, actions: ClusterActions, inputs: ClusterInputs) -> CycleRecord:
    """Decide (:meth:`Leader.shed`), carry the moves out, then remember those carried out; then
    the ring changes the strategy decided with them (:func:`_split` and merges)."""
    now = actions.now_ms()
    result, moves = leader.shed(now, inputs)
    moves_done = await actions.move(moves) if moves else []
    leader.moves_executed(
        result, [m for m, ok in zip(moves, moves_done, strict=True) if ok], actions.now_ms()
    )
    splits = result.splits
    splits_done = await _split(leader, actions, splits)
    merges = result.merges
    merges_done = await actions.merge(merges) if merges else []
    for merge, ok in zip(merges, merges_done, strict=True):
        if ok:
            leader.bundle_merged(merge.bundles)
    return CycleRecord(
        "shedding",
        now,
        leader.broker_id,
        (*result.decisions, *result.split_decisions, *result.merge_decisions),
        tuple(moves),
        tuple(moves_done),
        tuple(splits),
        tuple(splits_done),
        tuple(merges),
        tuple(merges_done),
        dict(result.stats),
    )


async def split_cycle(leader: Leader, actions: ClusterActions, inputs: ClusterInputs) -> CycleRecord:
    """The split check, then the splits through the owners (:func:`_split`)."""
    now = actions.now_ms()
    result = leader.split_check(now, inputs)
    splits = result.splits
    done = await _split(leader, actions, splits)
    return CycleRecord(
        "split",
        now,
        leader.broker_id,
        result.decisions,
        splits=tuple(splits),
        splits_done=tuple(done),
        stats=dict(result.stats),
    )


async def _split(leader: Leader, actions: ClusterActions, splits: Sequence[SplitDecision]) -> list[bool]:
    """As Pulsar's ``checkNamespaceBundleSplit`` does before asking the owner, each bundle chosen
    is forgotten at once (:meth:`Leader.split_decided`: its history dropped, and it is set aside
    until no report lists it, so a stale report cannot make the leader split it again)."""
    if not splits:
        return []
    now = actions.now_ms()
    for decision in splits:
        leader.split_decided(decision.bundle, now)
    return await actions.split(splits)


def run_now(step: Coroutine[Any, Any, T]) -> T:
    """Run a step whose actions complete at once (the simulator's): no event loop needed."""
    try:
        step.send(None)
    except StopIteration as finished:
        return finished.value  # type: ignore[no-any-return]
    step.close()
    raise RuntimeError("a leader step waited on an action that did not complete at once")


class LeaderSchedule:
    """When a leader's periodic steps are due (module docstring). Times in ms."""

    def __init__(self, config: ServiceConfig, start_ms: int) -> None:
        self.config = config
        self._next = {step: start_ms + self.interval_ms(step) for step in STEP_INTERVAL_KEYS}

    def interval_ms(self, step: str) -> int:
        return int(round(self.config.duration_seconds(STEP_INTERVAL_KEYS[step]) * 1000))

    def next_ms(self, step: str) -> int:
        return self._next[step]

    def due(self, step: str, now_ms: int) -> bool:
        return now_ms >= self._next[step]

    def done(self, step: str, now_ms: int) -> None:
        """The step ran at ``now_ms``: the next one is an interval after the one that was due
        (the phase is kept), or an interval from now if the shell fell further behind."""
        following = self._next[step] + self.interval_ms(step)
        self._next[step] = following if following > now_ms else now_ms + self.interval_ms(step)

    @property
    def split_after_refresh(self) -> bool:
        """The modular manager checks splits after every refresh; the extensible one on its interval."""
        return not is_extensible_load_manager(self.config.loadManagerClassName)
