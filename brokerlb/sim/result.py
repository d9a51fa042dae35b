"""The outcome of one simulation run: plain arrays and dicts (picklable, JSON-able).

A :class:`SimulationResult` is what :func:`brokerlb.sim.run_scenario` returns and what the
report renders. ``series`` holds one array per metric (one value per cycle, see
:mod:`brokerlb.sim.metrics`), ``broker_load`` / ``broker_throughput`` are cycles x brokers
matrices (NaN while a broker is down), ``decisions`` one array per ``kind/label/reason``,
``summary`` the one-row reduction, ``moves`` every completed move.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from brokerlb.sim.simulation import Simulation

__all__ = ["SimulationResult"]


@dataclass(eq=False)
class SimulationResult:
    """Everything one run measured (module docstring)."""

    scenario: str
    label: str
    seed: int
    config: dict[str, Any]
    tick_seconds: float
    start_ms: int
    brokers: list[str]
    series: dict[str, np.ndarray]
    broker_load: np.ndarray
    broker_throughput: np.ndarray
    decisions: dict[str, np.ndarray]
    summary: dict[str, Any]
    moves: list[dict[str, Any]]
    wall_seconds: float = 0.0
    #: CPU seconds of the run, and of them inside the decision engine
    cpu_seconds: float = 0.0
    engine_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, sim: Simulation, label: str | None = None) -> SimulationResult:
        metrics = sim.metrics
        summary = metrics.summary()
        summary["wall_seconds"] = sim.wall_seconds
        summary["cpu_seconds"] = sim.cpu_seconds
        summary["engine_seconds"] = sim.engine_seconds
        summary["final_bundles"] = sim.topology.num_live_bundles
        summary["leader_refreshes"] = sim.refreshes
        return cls(
            scenario=sim.scenario.name,
            label=label or sim.label,
            seed=sim.seed,
            config=sim.config.to_dict(changed_only=True),
            tick_seconds=sim.scenario.tick,
            start_ms=sim.start_ms,
            brokers=list(sim.broker_ids),
            series=metrics.arrays(),
            broker_load=metrics.broker_matrix("load"),
            broker_throughput=metrics.broker_matrix("throughput"),
            decisions=metrics.decision_series(),
            summary=summary,
            moves=[_move_json(m) for m in metrics.move_log],
            wall_seconds=sim.wall_seconds,
            cpu_seconds=sim.cpu_seconds,
            engine_seconds=sim.engine_seconds,
            extra={
                "engine_phases": {
                    name: {"seconds": seconds, "calls": int(calls)}
                    for name, (seconds, calls) in sim.engine_phases.items()
                }
            },
        )

    @property
    def cycles(self) -> int:
        return len(self.series.get("time_s", ()))

    def same_outcome(self, other: SimulationResult) -> bool:
        """Whether two runs produced the same numbers (timings excluded): the determinism check."""
        if self.summary_without_timing() != other.summary_without_timing():
            return False
        if self.moves != other.moves or set(self.series) != set(other.series):
            return False
        if set(self.decisions) != set(other.decisions):
            return False
        pairs = [(self.series[k], other.series[k]) for k in self.series]
        pairs += [(self.decisions[k], other.decisions[k]) for k in self.decisions]
        pairs += [(self.broker_load, other.broker_load), (self.broker_throughput, other.broker_throughput)]
        return all(np.array_equal(a, b, equal_nan=True) for a, b in pairs)

    def summary_without_timing(self) -> dict[str, Any]:
        return {
            k: v
            for k, v in self.summary.items()
            if k not in ("wall_seconds", "cpu_seconds", "engine_seconds")
        }

    def to_json(self) -> dict[str, Any]:
        """JSON-able form (arrays as lists, NaN as null)."""
        return {
            "scenario": self.scenario,
            "label": self.label,
            "seed": self.seed,
            "config": self.config,
            "tickSeconds": self.tick_seconds,
            "startMs": self.start_ms,
            "brokers": self.brokers,
            "summary": _clean(self.summary),
            "series": {k: _clean(v.tolist()) for k, v in self.series.items()},
            "decisions": {k: _clean(v.tolist()) for k, v in self.decisions.items()},
            "moves": self.moves,
        }


def _move_json(move: Any) -> dict[str, Any]:
    return {
        "time": move.time_ms,
        "bundle": move.bundle,
        "from": move.source,
        "to": move.destination,
        "cause": move.cause,
        "throughput": move.throughput,
        "unownedMs": move.unowned_ms,
        "flap": move.flap,
        "returned": move.returned,
    }


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value
