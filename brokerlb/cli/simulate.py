"""``brokerlb simulate``: run a cluster scenario through the real decision engine.

``brokerlb simulate SCENARIO`` runs a scenario (a YAML file or a library name, see
``--list``) under one or several strategies, shows a progress bar while it runs and prints
a summary table (one column per strategy). With ``--report DIR`` it also writes PNG plots,
an HTML page comparing the strategies side by side (``DIR/index.html``) and ``summary.json``;
with ``--history`` too, the simulated cluster's load history and topic stats in the data
pipeline's input format (``DIR/history/<strategy>/``: off by default, it made a report of a
few strategies over two hours hundreds of megabytes).

Which strategies run: ``--compare A,B,...``, else ``--strategy S``, else the scenario's
``strategies`` list. Progress (a bar per strategy) shows on stderr when it is a terminal, and
never with ``--json``. A strategy is ``SHEDDER[+PLACEMENT]`` with Pulsar class names or short
names (``ThresholdShedder+LeastResourceUsageWithWeight``); ``pulsar`` in ``--compare`` stands for
every Pulsar shedder with the placement Pulsar pairs it with (``--compare brokerlb,pulsar``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from brokerlb.cli.common import cli_errors, console, err_console

__all__ = ["simulate"]


_SCENARIO = typer.Argument(None, help="scenario YAML file or library name (see --list)")
_STRATEGY = typer.Option(None, "--strategy", "-s", help="SHEDDER[+PLACEMENT]: Pulsar class or short names")
_COMPARE = typer.Option(
    None,
    "--compare",
    "-c",
    help="comma-separated strategies, side by side; 'pulsar' stands for every Pulsar shedder with "
    "the placement Pulsar pairs it with (AvgShedder+AvgShedder, ThresholdShedder+LeastResourceUsageWithWeight, ...)",
)
_SET = typer.Option(
    None,
    "--set",
    help="key=value: broker.conf key, or seed / duration / tick / timing.* / resources.* (repeatable)",
)
_SEED = typer.Option(None, "--seed", help="replace the scenario's seed")
_REPORT = typer.Option(
    None, "--report", "-r", help="write plots and HTML (and the history with --history) into DIR"
)
_WORKLOAD = typer.Option(
    None,
    "--workload",
    help="replay recorded topic samples instead of the scenario's "
    "workloads: a JSON Lines file or a load-history directory",
)
_TOPICS_EVERY = typer.Option(
    "15m",
    "--history-topics-every",
    help="with the history, topic stats every DURATION (0: none; a topic-level dump "
    "of a large cluster every cycle is gigabytes a day)",
)
_JOBS = typer.Option(1, "--jobs", "-j", min=1, help="run strategies in this many processes")
_HISTORY = typer.Option(
    False,
    "--history/--no-history",
    help="with --report, also write the load history (pipeline format; tens of MB per strategy-hour)",
)
_VALIDATE = typer.Option(False, "--validate", help="check the simulator's invariants every cycle")
_JSON = typer.Option(False, "--json", help="print the summaries as JSON instead of a table")
_LIST = typer.Option(False, "--list", help="list the library's scenarios and exit")


def simulate(
    scenario: str | None = _SCENARIO,
    strategy: str | None = _STRATEGY,
    compare: str | None = _COMPARE,
    set_: list[str] | None = _SET,
    seed: int | None = _SEED,
    report: Path | None = _REPORT,
    workload: Path | None = _WORKLOAD,
    jobs: int = _JOBS,
    history: bool = _HISTORY,
    topics_every: str = _TOPICS_EVERY,
    validate: bool = _VALIDATE,
    as_json: bool = _JSON,
    list_: bool = _LIST,
) -> None:
    """Simulate a cluster scenario under load-balancing strategies and compare them."""
    with cli_errors():
        if list_:
            _list_scenarios(as_json)
            return
        if scenario is None:
            from brokerlb.errors import InvalidInputError

            raise InvalidInputError("give a SCENARIO (a YAML file or a library name; see --list)")
        _run(
            scenario,
            strategy,
            compare,
            set_ or [],
            seed,
            report,
            workload,
            jobs,
            history,
            topics_every,
            validate,
            as_json,
        )


def _list_scenarios(as_json: bool) -> None:
    from rich.table import Table

    from brokerlb.sim import list_scenarios
    from brokerlb.sim.units import format_duration

    items = list_scenarios()
    if as_json:
        sys.stdout.write(
            json.dumps(
                [
                    {
                        "name": s.name,
                        "description": s.description,
                        "path": str(s.path),
                        "duration": s.duration,
                        "brokers": s.brokers,
                        "bundles": s.bundles,
                    }
                    for s in items
                ],
                indent=2,
            )
            + "\n"
        )
        return
    table = Table(title="brokerlb scenario library (full descriptions: --list --json)", show_lines=True)
    for column in ("name", "duration", "brokers", "bundles", "what it shows"):
        table.add_column(column)
    for s in items:
        first = s.description.split(". ")[0].rstrip(".") + "."
        table.add_row(s.name, format_duration(s.duration), str(s.brokers), str(s.bundles), first)
    console.print(table)


def _run(
    scenario_arg: str,
    strategy: str | None,
    compare: str | None,
    set_: list[str],
    seed: int | None,
    report: Path | None,
    workload_path: Path | None,
    jobs: int,
    history: bool,
    topics_every: str,
    validate: bool,
    as_json: bool,
) -> None:
    from brokerlb.config import parse_overrides
    from brokerlb.sim import RecordedWorkload, resolve_scenario
    from brokerlb.sim import compare as run_compare
    from brokerlb.sim.runner import prepare
    from brokerlb.sim.strategies import expand_labels, strategy_label

    overrides = parse_overrides(set_)
    scenario = resolve_scenario(scenario_arg)
    if compare:
        labels = [part.strip() for part in compare.split(",") if part.strip()]
    elif strategy:
        labels = [strategy]
    else:
        labels = list(scenario.strategies)
    labels = [
        strategy_label(label) for label in expand_labels(labels)
    ]  # unknown names fail here, before any run
    prepared, _, _ = prepare(scenario, labels[0], overrides, seed)
    recorded = RecordedWorkload.load(workload_path) if workload_path is not None else None
    history_dir = (report / "history") if report is not None and history and _history_available() else None

    from brokerlb.cli.progress import progress_bar

    with progress_bar(quiet=as_json, unit="cycles") as progress:
        tasks = {label: progress.add_task(label, total=prepared.cycles) for label in labels}

        def on_cycle(label: str, done: int, total: int) -> None:
            progress.update(tasks[label], completed=done, total=total)

        results = run_compare(
            scenario,
            labels,
            overrides,
            seed,
            workload=recorded,
            jobs=jobs,
            validate=validate,
            on_cycle=on_cycle,
            history_dir=history_dir,
            history_topic_interval=_duration("--history-topics-every", topics_every),
        )

    if as_json:
        sys.stdout.write(json.dumps({r.label: r.to_json()["summary"] for r in results}, indent=2) + "\n")
    else:
        _print_summary(prepared.name, results)
    if report is not None:
        from brokerlb.sim.report import write_report

        links = {"load history and topic stats (pipeline input)": "history/"} if history_dir else {}
        index = write_report(prepared, results, report, extra_links=links)
        err_console.print(f"report: {index}")


def _duration(option: str, value: str) -> float:
    from brokerlb.errors import InvalidInputError
    from brokerlb.sim.units import parse_duration

    try:
        return parse_duration(value)
    except ValueError as exc:
        raise InvalidInputError(f"{option}: {exc}") from None


def _history_available() -> bool:
    import importlib.util

    if importlib.util.find_spec("brokerlb.history") is None:
        err_console.print("note: brokerlb.history is not installed; no load history written")
        return False
    return True


def _print_summary(name: str, results: list) -> None:  # type: ignore[type-arg]
    """The summary table; strategies that do not fit the terminal's width side by side go to
    further tables (each with the metric column), so no name or number is broken across lines."""
    from rich import box
    from rich.table import Table

    from brokerlb.sim.report import summary_table

    rows = summary_table(results)
    metric_width = max(len(row.title) for row, _, _ in rows)
    widths = [max(len(r.label), *(len(values[i]) for _, values, _ in rows)) for i, r in enumerate(results)]
    groups: list[list[int]] = [[]]
    used = metric_width + 4
    for i, width in enumerate(widths):
        if groups[-1] and used + width + 3 > console.width:
            groups.append([])
            used = metric_width + 4
        groups[-1].append(i)
        used += width + 3
    for n, group in enumerate(groups, 1):
        title = f"{name}: summary" + (f" ({n}/{len(groups)})" if len(groups) > 1 else "")
        table = Table(title=title, box=box.SIMPLE_HEAD)
        table.add_column("metric", no_wrap=True)
        for i in group:
            table.add_column(results[i].label, justify="right", no_wrap=True)
        for row, values, best in rows:
            cells = [f"[green]{values[i]}[/green]" if i == best else values[i] for i in group]
            table.add_row(row.title, *cells)
        console.print(table)
