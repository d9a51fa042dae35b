"""The summary table: which numbers compare strategies, and how they are shown.

One row per metric, one column per strategy. Shared by the CLI (rich table) and the HTML
report, so both say the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from brokerlb.sim.reach import moved_to_reach
from brokerlb.sim.result import SimulationResult
from brokerlb.sim.strategies import split_label
from brokerlb.sim.units import format_duration

__all__ = ["SummaryRow", "SUMMARY_ROWS", "summary_table", "decision_table"]


def _pct(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value * 100:.1f}%"


def _int(value: float) -> str:
    return "-" if value is None else f"{int(value):,}"


def _bytes(value: float) -> str:
    if value is None or math.isnan(value):
        return "-"
    for unit, size in (("GB/s", 1e9), ("MB/s", 1e6), ("KB/s", 1e3)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f} B/s"


def _reached(value: float | None) -> str:
    return "never" if value is None else _bytes(value)


def _seconds(value: float) -> str:
    return (
        "-"
        if value is None or math.isnan(value)
        else format_duration(value)
        if value >= 1
        else f"{value:.2f}s"
    )


@dataclass(frozen=True, slots=True)
class SummaryRow:
    key: str
    title: str
    explanation: str
    fmt: Callable[[Any], str]
    #: which value is best ("lower", "higher"), or "" for numbers that are neither good nor bad
    #: in themselves (moves are a cost, but no moves may mean an idle broker)
    better: str = "lower"
    #: a row whose value for one run depends on the other runs: all the values at once, or
    #: ``None`` where the row does not apply to these runs (it is then left out)
    across: Callable[[Sequence[SimulationResult]], list[Any] | None] | None = None

    def value(self, result: SimulationResult) -> Any:
        if self.key.startswith("moves_by_cause."):
            return result.summary["moves_by_cause"][self.key.split(".", 1)[1]]
        return result.summary.get(self.key)

    def values(self, results: Sequence[SimulationResult]) -> list[Any] | None:
        if self.across is not None:
            return self.across(results)
        return [self.value(r) for r in results]


def _moved_to_best_end(results: Sequence[SimulationResult]) -> list[Any] | None:
    """Per run: what it had moved when as near the lower bound as the best of the others ended."""
    if len(results) < 2:
        return None
    ends = [float(r.summary["distance_final"]) for r in results]
    return [
        moved_to_reach(r.series, min(e for j, e in enumerate(ends) if j != i)) for i, r in enumerate(results)
    ]


def _moved_to_threshold_end(results: Sequence[SimulationResult]) -> list[Any] | None:
    """Per run: what it had moved when as near the lower bound as ThresholdShedder (with Pulsar's
    default placement) ended -- the reference of issue 29's "same distance for fewer bytes"."""
    reference = next(
        (
            r
            for r in results
            if split_label(r.label)[0] == "ThresholdShedder"
            and split_label(r.label)[1] in (None, "LeastLongTermMessageRate")
        ),
        None,
    )
    if reference is None or len(results) < 2:
        return None
    return [moved_to_reach(r.series, float(reference.summary["distance_final"])) for r in results]


SUMMARY_ROWS: tuple[SummaryRow, ...] = (
    SummaryRow(
        "load_max_mean", "max broker load (mean)", "the busiest broker's load, averaged over cycles", _pct
    ),
    SummaryRow("load_max_peak", "max broker load (peak)", "the highest load any broker reached", _pct),
    SummaryRow("load_std_mean", "load std-dev (mean)", "spread of broker loads, averaged over cycles", _pct),
    SummaryRow(
        "distance_mean",
        "distance from lower bound (mean)",
        "max load minus max(average load, largest bundle): 0 is as balanced as possible",
        _pct,
    ),
    SummaryRow("distance_final", "distance from lower bound (end)", "the same at the last cycle", _pct),
    SummaryRow(
        "load_min_final",
        "min broker load (end)",
        "the idlest live broker at the end (0 = idle)",
        _pct,
        "higher",
    ),
    SummaryRow("moves", "bundle moves", "completed ownership moves, all causes", _int, ""),
    SummaryRow("moves_by_cause.shed", "  by shedding", "unloads decided by the shedder", _int, ""),
    SummaryRow(
        "moves_by_cause.transfer", "  by transfer", "transfers with a destination (extensible)", _int, ""
    ),
    SummaryRow("moves_by_cause.split", "  after splits", "split children unloaded", _int, ""),
    SummaryRow("moved_throughput", "moved throughput", "sum of the moved bundles' throughput", _bytes, ""),
    SummaryRow(
        "balancer_moved_throughput",
        "  by the balancer",
        "the same without the moves a broker restart or failure forced",
        _bytes,
        "",
    ),
    SummaryRow(
        "moved_to_best_end",
        "  until the others' best end",
        "moved by the balancer until the run was as near the lower bound as the best other run ended, "
        "and stayed so to the end (never: it ended farther)",
        _reached,
        across=_moved_to_best_end,
    ),
    SummaryRow(
        "moved_to_threshold_end",
        "  until ThresholdShedder's end",
        "moved by the balancer until the run was as near the lower bound as ThresholdShedder "
        "(LeastLongTermMessageRate placement) ended, and stayed so (never: it ended farther)",
        _reached,
        across=_moved_to_threshold_end,
    ),
    SummaryRow("flaps", "flaps", "moved again within the shedding grace period", _int),
    SummaryRow("returns", "returns", "shed bundles placed back on the broker they left", _int),
    SummaryRow("unowned_seconds", "time without owner", "bundle-seconds without a serving broker", _seconds),
    SummaryRow("splits", "splits", "bundles split", _int, ""),
    SummaryRow("wall_seconds", "wall time", "simulation run time", _seconds, ""),
)


def summary_table(results: Sequence[SimulationResult]) -> list[tuple[SummaryRow, list[str], int | None]]:
    """Rows of ``(row, formatted values per result, index of the best result or None)``."""
    out = []
    for row in SUMMARY_ROWS:
        values = row.values(results)
        if values is None:
            continue
        best = None
        numeric = [(v, i) for i, v in enumerate(values) if isinstance(v, int | float) and not math.isnan(v)]
        if row.better and len(numeric) > 1 and len({v for v, _ in numeric}) > 1:
            pick = min if row.better == "lower" else max
            best = pick(numeric)[1]
        out.append((row, [row.fmt(v) for v in values], best))
    return out


def decision_table(result: SimulationResult) -> list[tuple[str, str, str, int]]:
    """``(kind, label, reason, count)`` of every decision the engine made, most frequent first."""
    rows = []
    for key, count in result.summary.get("decisions", {}).items():
        kind, label, reason = (key.split("/") + ["", ""])[:3]
        rows.append((kind, label, reason, int(count)))
    return sorted(rows, key=lambda r: (r[0], -r[3], r[1], r[2]))
