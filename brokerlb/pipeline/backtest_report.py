"""Tables and plots of a backtest (pandas/pyarrow for Parquet, matplotlib for PNG; imported here only).

Per configuration (``summary.parquet`` / ``summary.csv``; names as in the simulator's summary,
:mod:`brokerlb.sim.metrics`):

* ``configuration``, ``label``, ``strategy`` and one column per grid axis;
* ``moves`` (and ``moves_shed``, ``moves_transfer``, ``moves_split``, ``moves_restart``,
  ``moves_failure``), ``moved_throughput`` (bytes/s of the moved bundles, summed over the
  moves), ``flaps`` (balancer moves of a bundle within ``loadBalancerSheddingGracePeriodMinutes``
  of its previous one), ``returns`` (shed bundles placed back where they came from);
* ``load_max_peak`` / ``load_max_mean`` (the busiest broker: highest and on average over the
  cycles), ``load_mean_mean`` (the average broker's load, averaged over the cycles),
  ``load_std_mean``, ``distance_mean`` / ``distance_p95`` (max load minus the lower bound no
  placement can beat), ``unowned_seconds``, ``splits``, ``final_bundles``, ``cycles``,
  ``sim_seconds`` (the task's wall time).

Per configuration and cycle (``series.parquet``): ``time_s``, ``load_max``, ``load_mean``,
``load_min``, ``load_std``, ``lower_bound``, ``moves``, ``moved_throughput``, ``flaps``.

Plots: ``max-load.png`` (busiest broker over time, one line per configuration),
``mean-load.png`` (average broker), ``moves.png`` (moves per configuration by cause, flaps
marked), ``cumulative-moves.png``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from brokerlb.pipeline.backtest_grid import BacktestConfig

if TYPE_CHECKING:
    from brokerlb.pipeline.backtest import BacktestResult
    from brokerlb.sim import SimulationResult

__all__ = ["summary_row", "series_rows", "write_backtest", "write_plots", "TABLE_COLUMNS"]

_SUMMARY_KEYS = (
    "moves",
    "moved_throughput",
    "flaps",
    "returns",
    "load_max_peak",
    "load_max_mean",
    "load_std_mean",
    "distance_mean",
    "distance_p95",
    "unowned_seconds",
    "splits",
    "final_bundles",
    "cycles",
)
_SERIES_KEYS = (
    "time_s",
    "load_max",
    "load_mean",
    "load_min",
    "load_std",
    "lower_bound",
    "moves",
    "moved_throughput",
    "flaps",
)
#: (column, title, format) of the printed table
TABLE_COLUMNS = (
    ("moves", "moves", "{:,.0f}"),
    ("moved_throughput", "moved MB/s", "mb"),
    ("flaps", "flaps", "{:,.0f}"),
    ("load_max_peak", "max load peak", "pct"),
    ("load_max_mean", "max load avg", "pct"),
    ("load_mean_mean", "avg load", "pct"),
    ("distance_mean", "above bound", "pct"),
)


def _number(value: Any) -> Any:
    if isinstance(value, float | np.floating):
        value = float(value)
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, np.integer):
        return int(value)
    return value


def summary_row(config: BacktestConfig, result: SimulationResult) -> dict[str, Any]:
    """The row of one configuration (module docstring)."""
    s = result.summary
    row: dict[str, Any] = {"configuration": config.name, "label": config.label, "strategy": result.label}
    row.update({key: _axis_value(value) for key, value in config.axes.items() if key not in row})
    for key in _SUMMARY_KEYS:
        row[key] = _number(s.get(key))
    for cause, count in s.get("moves_by_cause", {}).items():
        row[f"moves_{cause}"] = int(count)
    load_mean = result.series["load_mean"]
    finite = load_mean[~np.isnan(load_mean)]
    row["load_mean_mean"] = float(finite.mean()) if len(finite) else None
    row["sim_seconds"] = round(float(result.wall_seconds), 3)
    return row


def _axis_value(value: Any) -> Any:
    """Axis values as text: a column must have one type, and ``80`` / ``"80"`` / ``80.0`` mean the same."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).lower() if isinstance(value, bool) else str(value)


def series_rows(
    configs: Sequence[BacktestConfig], results: Sequence[SimulationResult]
) -> dict[str, list[Any]]:
    """Columns of the per-cycle table (module docstring)."""
    columns: dict[str, list[Any]] = {"configuration": [], "cycle": []}
    columns.update({key: [] for key in _SERIES_KEYS})
    for config, result in zip(configs, results, strict=True):
        n = result.cycles
        columns["configuration"] += [config.name] * n
        columns["cycle"] += list(range(n))
        for key in _SERIES_KEYS:
            columns[key] += [_number(v) for v in result.series[key]]
    return columns


def write_backtest(
    result: BacktestResult, output: str | os.PathLike[str], *, plots: bool = True
) -> list[str]:
    """Write the tables, ``backtest.json`` and (``plots``) the PNGs; returns the file names."""
    import pandas as pd

    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    rows = result.rows()
    summary = pd.DataFrame(rows)
    summary.to_parquet(out / "summary.parquet", index=False)
    summary.to_csv(out / "summary.csv", index=False)
    configs, runs = result.plan.configurations, result.results
    pd.DataFrame(series_rows(configs, runs)).to_parquet(out / "series.parquet", index=False)
    doc = {
        "grid": result.plan.grid.to_json(),
        "scenario": result.plan.scenario.name,
        "configurations": [c.to_json() for c in configs],
        "rows": rows,
    }
    (out / "backtest.json").write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
    files = ["summary.parquet", "summary.csv", "series.parquet", "backtest.json"]
    if plots:
        files += write_plots(configs, runs, out)
    return files


def write_plots(
    configs: Sequence[BacktestConfig], results: Sequence[SimulationResult], out_dir: str | os.PathLike[str]
) -> list[str]:
    """The PNG plots of the module docstring; returns the file names."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    names = [f"{c.name} {c.label}" for c in configs]
    legend = len(configs) <= 16
    written = []

    def line_plot(file: str, title: str, ylabel: str, values: Any) -> None:
        fig, ax = plt.subplots(figsize=(11, 4), dpi=90, layout="constrained")
        for name, r in zip(names, results, strict=True):
            ax.plot(r.series["time_s"] / 60.0, values(r), linewidth=1, label=name)
        ax.set_title(title)
        ax.set_xlabel("minutes")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if legend:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.savefig(out / file)
        plt.close(fig)
        written.append(file)

    line_plot(
        "max-load.png",
        "Busiest broker's load per configuration",
        "load (%)",
        lambda r: r.series["load_max"] * 100,
    )
    line_plot(
        "mean-load.png",
        "Average broker load per configuration",
        "load (%)",
        lambda r: r.series["load_mean"] * 100,
    )
    line_plot(
        "cumulative-moves.png",
        "Cumulative bundle moves per configuration",
        "moves",
        lambda r: np.cumsum(r.series["moves"]),
    )

    fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(configs) + 3), 4), dpi=90, layout="constrained")
    x = np.arange(len(configs))
    bottom = np.zeros(len(configs))
    causes = sorted({cause for r in results for cause in r.summary.get("moves_by_cause", {})})
    for cause in causes:
        counts = np.asarray([r.summary["moves_by_cause"].get(cause, 0) for r in results], dtype=float)
        if counts.any():
            ax.bar(x, counts, bottom=bottom, label=cause)
            bottom += counts
    flaps = np.asarray([r.summary.get("flaps", 0) for r in results], dtype=float)
    ax.plot(x, flaps, "kv", label="flaps (within the grace period)")
    ax.set_xticks(x, [c.name for c in configs], rotation=45 if len(configs) > 12 else 0)
    ax.set_title("Bundle moves per configuration, by cause")
    ax.set_ylabel("moves")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7, loc="best")
    fig.savefig(out / "moves.png")
    plt.close(fig)
    written.append("moves.png")
    return written
