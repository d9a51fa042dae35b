"""Reports of simulation runs: summary table, PNG plots and an HTML page comparing strategies.

:func:`write_report` writes into a directory:

* ``index.html`` -- the side-by-side comparison (:mod:`brokerlb.sim.report.html`);
* ``*.png`` -- the plots (:mod:`brokerlb.sim.report.plots`);
* ``summary.json`` -- the scenario and every strategy's summary and series (JSON).

matplotlib is imported only when plots are written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from brokerlb.sim.loader import scenario_to_dict
from brokerlb.sim.report.table import SUMMARY_ROWS, decision_table, summary_table
from brokerlb.sim.result import SimulationResult
from brokerlb.sim.spec import Scenario

__all__ = ["write_report", "summary_table", "decision_table", "SUMMARY_ROWS"]


def write_report(
    scenario: Scenario,
    results: Sequence[SimulationResult],
    out_dir: str | Path,
    *,
    extra_links: Mapping[str, str] | None = None,
) -> Path:
    """Write the report of ``results`` (runs of ``scenario``) into ``out_dir``; returns ``index.html``."""
    from brokerlb.sim.report.html import render_html
    from brokerlb.sim.report.plots import write_plots

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = write_plots(results, out)
    document = {"scenario": scenario_to_dict(scenario), "results": [r.to_json() for r in results]}
    (out / "summary.json").write_text(json.dumps(document, indent=1, allow_nan=False), encoding="utf-8")
    links = {"summary.json (every number of this page)": "summary.json", **(extra_links or {})}
    return render_html(scenario, results, plots, out, links)
