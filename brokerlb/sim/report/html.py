"""The HTML report: one self-contained page comparing strategies side by side.

``index.html`` (no script, no external resource; images are the PNGs beside it):

1. the scenario: description, seed, duration, brokers, namespaces, events, config;
2. the summary table -- one column per strategy, the best value of each row marked;
3. the comparison plots (every strategy on one chart);
4. side by side, a column per strategy (as many per row as the window holds, wrapping: every
   strategy stays on screen): its per-broker load plot, its heat map, the engine's decisions by
   label and reason, and how many moves it made;
5. the moves of each strategy in a table of the page's full width: when, the bundle's namespace
   and range, from and to, the cause.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path

from brokerlb.sim.loader import scenario_to_dict
from brokerlb.sim.report.plots import COMPARISON_PLOTS
from brokerlb.sim.report.table import decision_table, summary_table
from brokerlb.sim.result import SimulationResult
from brokerlb.sim.spec import Scenario
from brokerlb.sim.units import format_duration

__all__ = ["render_html"]

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; }
h1 { margin-bottom: .2rem; } .muted { color: #666; }
table { border-collapse: collapse; margin: .5rem 0 1.5rem; font-size: .9rem; }
th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.best { background: #e3f6e3; font-weight: 600; }
td.explain { color: #666; text-align: left; font-size: .8rem; }
.plots img { max-width: 100%; margin: .3rem 0; }
.strategies { display: grid; gap: 1rem; grid-template-columns: repeat(auto-fit, minmax(400px, 1fr)); }
.strategy { border: 1px solid #ccc; border-radius: 6px; padding: .6rem; min-width: 0; }
.strategy img { width: 100%; }
.strategy table { width: 100%; font-size: .8rem; }
table.moves { font-size: .85rem; }
table.moves td { text-align: left; white-space: nowrap; }
table.moves td.range { font-family: ui-monospace, monospace; }
details.moves { margin: .6rem 0; } details.moves summary { font-weight: 600; cursor: pointer; }
.events li, .params li { margin: .1rem 0; }
code { background: #f4f4f4; padding: 0 .2rem; }
"""


def _scenario_section(scenario: Scenario, results: Sequence[SimulationResult]) -> str:
    data = scenario_to_dict(scenario)
    topics = sum(ns["topics"] for ns in data["namespaces"])
    bundles = sum(ns["bundles"] for ns in data["namespaces"])
    params = [
        f"seed <code>{results[0].seed if results else scenario.seed}</code>",
        f"duration {format_duration(scenario.duration)} in cycles of {format_duration(scenario.tick)}",
        f"{len(scenario.brokers)} brokers: "
        + ", ".join(
            f"{escape(b.name)} ({b.cores:g} cores, {b.nic_gbps:g} Gbit/s)" for b in scenario.brokers[:8]
        )
        + (" ..." if len(scenario.brokers) > 8 else ""),
        f"{len(scenario.namespaces)} namespaces, {bundles} bundles, {topics} topics",
        "timing: unload {unload}, transfer {transfer}, lookup {lookup}".format(
            **{k: format_duration(v) for k, v in data["timing"].items() if k != "session_timeout"}
        ),
    ]
    if scenario.config:
        params.append(
            "config: "
            + ", ".join(f"<code>{escape(str(k))}={escape(str(v))}</code>" for k, v in scenario.config.items())
        )
    events = "".join(
        f"<li>{format_duration(e['at'])}: {escape(e['type'])} {escape(_event_text(e))}</li>"
        for e in data["events"]
    )
    return (
        f"<p>{escape(scenario.description)}</p><ul class='params'>"
        + "".join(f"<li>{p}</li>" for p in params)
        + "</ul>"
        + (f"<h3>Events</h3><ul class='events'>{events}</ul>" if events else "")
    )


def _event_text(event: Mapping[str, object]) -> str:
    parts = []
    for key, value in event.items():
        if key in ("at", "type") or value is None:
            continue
        if isinstance(value, Mapping) and "name" in value:  # a broker spec
            value = f"{value['name']} ({value.get('cores', '?'):g} cores)"  # type: ignore[str-format]
        elif isinstance(value, float) and key in ("downtime", "ramp", "duration", "over"):
            value = format_duration(value)
        parts.append(f"{key}={value}")
    return ", ".join(parts)


def _summary_section(results: Sequence[SimulationResult]) -> str:
    head = "".join(f"<th>{escape(r.label)}</th>" for r in results)
    rows = []
    for row, values, best in summary_table(results):
        cells = "".join(
            f"<td class='{'best' if i == best else ''}'>{escape(v)}</td>" for i, v in enumerate(values)
        )
        rows.append(
            f"<tr data-metric='{escape(row.key)}'><td title='{escape(row.explanation)}'>"
            f"{escape(row.title)}</td>{cells}<td class='explain'>{escape(row.explanation)}</td></tr>"
        )
    return (
        f"<table class='summary'><thead><tr><th>metric</th>{head}<th></th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


#: moves listed per strategy in the moves section
MOVES_SHOWN = 50


def _strategy_column(result: SimulationResult, files: Sequence[str]) -> str:
    images = "".join(f"<img src='{escape(f)}' alt='{escape(f)}'>" for f in files)
    decisions = "".join(
        f"<tr><td>{escape(kind)}</td><td>{escape(label)}</td><td>{escape(reason)}</td><td>{count:,}</td></tr>"
        for kind, label, reason, count in decision_table(result)
    )
    engine = result.summary.get("engine_seconds", 0.0)
    cpu = result.summary.get("cpu_seconds", 0.0)
    wall = result.summary.get("wall_seconds", 0.0)
    count = len(result.moves)
    moves = (
        f"<p>{count:,} moves: <a href='#moves-{_anchor(result.label)}'>the list below</a></p>"
        if count
        else "<p class='muted'>no bundle moved</p>"
    )
    return (
        f"<section class='strategy' data-strategy='{escape(result.label)}'>"
        f"<h2>{escape(result.label)}</h2>"
        f"<p class='muted'>{result.cycles} cycles in {wall:.1f} s ({cpu:.1f} s CPU, {engine:.1f} s of it in "
        f"the decision engine)</p>"
        f"{images}<h3>Decisions</h3><table class='decisions'><thead><tr><th>kind</th><th>label</th>"
        f"<th>reason</th><th>count</th></tr></thead><tbody>{decisions}</tbody></table>"
        f"<h3>Moves</h3>{moves}</section>"
    )


def _anchor(label: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in label)


def _moves_section(results: Sequence[SimulationResult]) -> str:
    """Each strategy's moves, a full-width table per strategy (a narrow column made them unreadable)."""
    parts = []
    for result in results:
        if not result.moves:
            continue
        rows = []
        for m in result.moves[:MOVES_SHOWN]:
            namespace, _, bundle_range = str(m["bundle"]).rpartition("/")
            rows.append(
                f"<tr><td>{format_duration((m['time'] - result.start_ms) / 1000)}</td>"
                f"<td>{escape(namespace)}</td><td class='range'>{escape(bundle_range)}</td>"
                f"<td>{escape(m['from'])} → {escape(m['to'])}</td><td>{escape(m['cause'])}</td></tr>"
            )
        more = len(result.moves) - MOVES_SHOWN
        parts.append(
            f"<details class='moves' id='moves-{_anchor(result.label)}' open>"
            f"<summary>{escape(result.label)}: {len(result.moves):,} moves</summary>"
            f"<table class='moves' data-strategy='{escape(result.label)}'><thead><tr><th>at</th>"
            f"<th>namespace</th><th>bundle range</th><th>from → to</th><th>cause</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
            + (f"<p class='muted'>... {more:,} more (summary.json has every one)</p>" if more > 0 else "")
            + "</details>"
        )
    return "".join(parts) or "<p class='muted'>No strategy moved a bundle.</p>"


def render_html(
    scenario: Scenario,
    results: Sequence[SimulationResult],
    plots: Mapping[str, Sequence[str]],
    out_dir: str | Path,
    extra_links: Mapping[str, str] | None = None,
) -> Path:
    """Write ``index.html`` into ``out_dir`` (module docstring); returns its path."""
    title = f"brokerlb simulation: {scenario.name}"
    comparison = "".join(
        f"<figure><img src='{escape(name)}' alt='{escape(caption)}'><figcaption class='muted'>"
        f"{escape(caption)}</figcaption></figure>"
        for name, caption, _ in COMPARISON_PLOTS
        if name in plots.get("comparison", ())
    )
    columns = "".join(_strategy_column(r, plots.get(r.label, ())) for r in results)
    links = "".join(
        f"<li><a href='{escape(href)}'>{escape(text)}</a></li>" for text, href in (extra_links or {}).items()
    )
    page = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1><p class='muted'>strategies: "
        f"{escape(', '.join(r.label for r in results))}</p>"
        f"<section id='scenario'>{_scenario_section(scenario, results)}</section>"
        f"<section id='summary'><h2>Summary</h2>{_summary_section(results)}</section>"
        f"<section id='comparison' class='plots'><h2>Compared over time</h2>{comparison}</section>"
        f"<h2>Side by side</h2><div class='strategies'>{columns}</div>"
        f"<section id='moves'><h2>Moves</h2>{_moves_section(results)}</section>"
        + (f"<section id='files'><h2>Files</h2><ul>{links}</ul></section>" if links else "")
        + "</body></html>"
    )
    path = Path(out_dir) / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
