"""PNG plots of simulation results (matplotlib, Agg backend; imported only here).

Comparison plots overlay every strategy on one chart:

* ``max-load.png`` -- the busiest broker's load, with the lower bound dashed;
* ``spread.png`` -- std-dev of broker loads;
* ``distance.png`` -- max load minus the lower bound;
* ``moves.png`` -- cumulative bundle moves (solid) and flaps (dotted);
* ``unowned.png`` -- cumulative bundle-seconds without an owner.

Per strategy: ``brokers-<label>.png`` (each broker's load over time; a broker added or
restarted appears where its line starts) and ``heatmap-<label>.png`` (brokers x time).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from brokerlb.sim.result import SimulationResult

__all__ = ["write_plots", "file_label", "COMPARISON_PLOTS"]

#: (file, title, y label) of the comparison plots, in page order
COMPARISON_PLOTS = (
    ("max-load.png", "Busiest broker (dashed: lower bound)", "load"),
    ("spread.png", "Spread of broker loads (std-dev)", "std-dev"),
    ("distance.png", "Distance from the lower bound", "max load - bound"),
    ("moves.png", "Cumulative bundle moves (dotted: flaps)", "moves"),
    ("unowned.png", "Cumulative time bundles had no owner", "bundle-seconds"),
)


def file_label(label: str) -> str:
    """A strategy label as a file-name part (``A+B`` -> ``A_B``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label)


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _hours(result: SimulationResult) -> tuple[np.ndarray, str]:
    t = result.series["time_s"]
    span = float(t[-1]) if len(t) else 0.0
    if span <= 3 * 3600:
        return t / 60.0, "minutes"
    return t / 3600.0, "hours"


def write_plots(results: Sequence[SimulationResult], out_dir: str | Path) -> dict[str, list[str]]:
    """Write every plot into ``out_dir``; returns ``{"comparison": [files], "<label>": [files]}``."""
    plt = _pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    written: dict[str, list[str]] = {"comparison": []}

    def figure():  # type: ignore[no-untyped-def]
        return plt.subplots(figsize=(8, 3.6), dpi=90, layout="constrained")

    for name, title, ylabel in COMPARISON_PLOTS:
        fig, ax = figure()
        for i, r in enumerate(results):
            x, unit = _hours(r)
            s = r.series
            color = colors[i % len(colors)]
            if name == "max-load.png":
                ax.plot(x, s["load_max"] * 100, color=color, label=r.label)
                if i == 0:
                    ax.plot(
                        x,
                        s["lower_bound"] * 100,
                        color="black",
                        linestyle="--",
                        linewidth=1,
                        label="lower bound",
                    )
            elif name == "spread.png":
                ax.plot(x, s["load_std"] * 100, color=color, label=r.label)
            elif name == "distance.png":
                ax.plot(x, s["distance"] * 100, color=color, label=r.label)
            elif name == "moves.png":
                ax.plot(x, np.cumsum(s["moves"]), color=color, label=r.label)
                ax.plot(x, np.cumsum(s["flaps"]), color=color, linestyle=":")
            else:
                ax.plot(x, np.cumsum(s["unowned_seconds"]), color=color, label=r.label)
            ax.set_xlabel(unit)
        ax.set_title(title)
        ax.set_ylabel(ylabel + (" (%)" if name in ("max-load.png", "spread.png", "distance.png") else ""))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        fig.savefig(out / name)
        plt.close(fig)
        written["comparison"].append(name)

    for r in results:
        label = file_label(r.label)
        files = []
        x, unit = _hours(r)
        fig, ax = figure()
        for j, broker in enumerate(r.brokers):
            ax.plot(x, r.broker_load[:, j] * 100, linewidth=1, label=broker if len(r.brokers) <= 12 else None)
        ax.set_title(f"{r.label}: load of every broker")
        ax.set_xlabel(unit)
        ax.set_ylabel("load (%)")
        ax.grid(alpha=0.3)
        if len(r.brokers) <= 12:
            ax.legend(fontsize=7, ncol=2, loc="best")
        name = f"brokers-{label}.png"
        fig.savefig(out / name)
        plt.close(fig)
        files.append(name)

        fig, ax = figure()
        data = np.ma.masked_invalid(r.broker_load.T * 100)
        image = ax.imshow(
            data,
            aspect="auto",
            interpolation="nearest",
            cmap="viridis",
            vmin=0,
            vmax=max(
                100.0, float(np.nanmax(r.broker_load) * 100) if np.isfinite(r.broker_load).any() else 100.0
            ),
            extent=(float(x[0]) if len(x) else 0, float(x[-1]) if len(x) else 1, len(r.brokers), 0),
        )
        ax.set_title(f"{r.label}: broker load over time (blank: down)")
        ax.set_xlabel(unit)
        ax.set_ylabel("broker")
        fig.colorbar(image, ax=ax, label="load (%)")
        name = f"heatmap-{label}.png"
        fig.savefig(out / name)
        plt.close(fig)
        files.append(name)
        written[r.label] = files
    return written
