"""``brokerlb pipeline``: the Spark jobs over load history (needs the ``pipeline`` extra).

Each command starts a SparkSession (``--master``, default ``local[*]``), runs one job and
prints a JSON summary on stdout; on a terminal, stderr shows the job's running Spark stages and
tasks meanwhile. pyspark is imported only inside the commands.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from brokerlb.cli.common import cli_errors, print_json
from brokerlb.errors import InvalidInputError, PipelineError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

app = typer.Typer(no_args_is_help=True)

T = TypeVar("T")

_MASTER = typer.Option(None, "--master", help="Spark master URL (default local[*]; e.g. spark://host:7077)")
_CONF = typer.Option([], "--conf", help="Spark setting key=value (repeatable)")
_WAREHOUSE = typer.Option(..., "--warehouse", "-w", help="warehouse directory (Parquet tables)")
_SINCE = typer.Option(None, "--since", help="start of the window: ms since the epoch or ISO 8601 (UTC)")
_UNTIL = typer.Option(None, "--until", help="end of the window (inclusive): ms or ISO 8601 (UTC)")
_HISTORY = typer.Option(
    ..., "--history", "-i", help="history root (broker-samples/, topic-samples/, bundle-boundaries/)"
)
_KINDS = typer.Option([], "--kind", help="only these record kinds (repeatable)")
_OUTPUT = typer.Option(None, "--output", help="default <warehouse>/loaddata/<source>-<cycles>")
_JSON_OUT = typer.Option(None, "--json", help="also write the final load data as Pulsar JSON")
_PLAN_OUT = typer.Option(None, "--out", "-o", help="plan file to write (default: stdout)")
_OVERRIDES = typer.Option([], "--set", help="broker.conf key=value for the bundle limits (repeatable)")


def parse_time(value: str | None, option: str) -> int | None:
    """Milliseconds since the epoch from ``1700000000000`` or ``2026-11-21T10:00:00`` (UTC unless an offset is given)."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInputError(
            f"Invalid {option} {value!r}: expected milliseconds since the epoch or ISO 8601"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _conf(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInputError(f"Invalid --conf {pair!r}: expected key=value")
        out[key.strip()] = value.strip()
    return out


@contextmanager
def _spark(master: str | None, conf: list[str]) -> Iterator[SparkSession]:
    try:
        from brokerlb.pipeline.session import spark_session
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise PipelineError("The pipeline needs the 'pipeline' extra (pyspark, pyarrow, pandas)") from exc
    from pyspark.sql import SparkSession

    reused = SparkSession.getActiveSession() is not None  # e.g. a notebook's or a test's session
    spark = spark_session(master, conf=_conf(conf))
    try:
        yield spark
    finally:
        if not reused:
            spark.stop()


def _run(job: str, fn: Callable[[], T]) -> T:
    """Run a job (its Spark stages' progress on stderr when it is a terminal; the JSON result goes to
    stdout either way); Spark's own errors become :class:`PipelineError` with their first line."""
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    from brokerlb.cli.progress import spark_progress

    spark = SparkSession.getActiveSession()
    try:
        if spark is None:
            return fn()
        with spark_progress(spark, job):
            return fn()
    except PySparkException as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PipelineError(f"{job} failed: {first}") from exc


@app.command("publish")
def publish_cmd(
    url: str = typer.Option(..., "--url", help="admin URL of any broker, e.g. http://localhost:8080"),
    local: bool = typer.Option(False, "--local", help="only the broker at --url (default: every broker)"),
    token: str | None = typer.Option(None, "--token", help="bearer token (default: $BROKERLB_ADMIN_TOKEN)"),
) -> None:
    """Ask a live cluster to publish its open load-history files now (no Spark): what ingest reads next."""
    import os

    from brokerlb.admin import AdminClient

    with cli_errors():
        with AdminClient(url, token=token or os.environ.get("BROKERLB_ADMIN_TOKEN") or None) as admin:
            print_json(admin.publish_load_history(local=local))


@app.command("ingest")
def ingest_cmd(
    history: Path = _HISTORY,
    warehouse: Path = _WAREHOUSE,
    kind: list[str] = _KINDS,
    max_files_per_trigger: int | None = typer.Option(None, "--max-files-per-trigger", min=1),
    master: str | None = _MASTER,
    conf: list[str] = _CONF,
) -> None:
    """Ingest new history files into Parquet tables by date (incremental; bad rows go to 'rejects')."""
    from brokerlb.history import RECORD_KINDS

    with cli_errors(), _spark(master, conf) as spark:
        from brokerlb.pipeline.ingest import ingest

        result = _run(
            "ingest",
            lambda: ingest(
                spark,
                str(history),
                str(warehouse),
                kinds=kind or RECORD_KINDS,
                max_files_per_trigger=max_files_per_trigger,
            ),
        )
        print_json(result.to_json())


@app.command("loaddata")
def loaddata_cmd(
    warehouse: Path = _WAREHOUSE,
    source: str = typer.Option(
        "reports", "--source", help="reports (broker samples) or topics (topic samples)"
    ),
    cycles: str = typer.Option(
        "leader", "--cycles", help="leader (Pulsar: every report re-folds all) or report"
    ),
    since: str | None = _SINCE,
    until: str | None = _UNTIL,
    output: Path | None = _OUTPUT,
    json_out: Path | None = _JSON_OUT,
    master: str | None = _MASTER,
    conf: list[str] = _CONF,
) -> None:
    """Bundle short/long-term averages and broker time averages, with their history."""
    with cli_errors():
        window = (parse_time(since, "--since"), parse_time(until, "--until"))
        with _spark(master, conf) as spark:
            from brokerlb.pipeline.loaddata import load_data, load_data_json

            result = _run(
                "loaddata",
                lambda: load_data(
                    spark,
                    str(warehouse),
                    source=source,
                    cycles=cycles,
                    since=window[0],
                    until=window[1],
                    output=str(output) if output else None,
                ),
            )
            if json_out is not None:
                doc = _run("loaddata", lambda: load_data_json(spark, result))
                json_out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
            print_json(result.to_json())


@app.command("recommend")
def recommend_cmd(
    warehouse: Path = _WAREHOUSE,
    out: Path | None = _PLAN_OUT,
    since: str | None = _SINCE,
    until: str | None = _UNTIL,
    statistic: str = typer.Option(
        "mean", "--statistic", help="per-topic load over the window: mean, p95 or max"
    ),
    overrides: list[str] = _OVERRIDES,
    target_fill: float = typer.Option(
        0.8, "--target-fill", help="children at most this fraction of every limit"
    ),
    isolate_fraction: float = typer.Option(
        0.5, "--isolate-fraction", help="a topic using this fraction gets its own bundle"
    ),
    cold_fill: float = typer.Option(0.1, "--cold-fill", help="bundles below this fraction are cold"),
    merge_fill: float = typer.Option(0.5, "--merge-fill", help="merged bundles stay at most this fraction"),
    min_bundles: int = typer.Option(
        1, "--min-bundles", help="merges keep at least this many bundles per namespace"
    ),
    no_unload: bool = typer.Option(
        False, "--no-unload", help="splits keep their children on the same broker"
    ),
    no_placement: bool = typer.Option(
        False,
        "--no-placement",
        help="splits unload their children for the cluster to place (Pulsar's way) instead of transfers "
        "to the lightest brokers",
    ),
    master: str | None = _MASTER,
    conf: list[str] = _CONF,
) -> None:
    """A plan of balanced splits, merges of cold bundles and bundle-count advice (for 'brokerlb plan apply')."""
    from brokerlb.config import ServiceConfig
    from brokerlb.config.loader import parse_overrides
    from brokerlb.pipeline.advisor import AdvisorOptions, BundleLimits

    with cli_errors():
        window = (parse_time(since, "--since"), parse_time(until, "--until"))
        config = ServiceConfig().with_overrides(parse_overrides(overrides))
        limits = BundleLimits.from_config(config)
        options = AdvisorOptions(
            target_fill=target_fill,
            isolate_fraction=isolate_fraction,
            cold_fill=cold_fill,
            merge_fill=merge_fill,
            min_bundles=min_bundles,
            unload=not no_unload,
            place=not no_placement,
        )
        with _spark(master, conf) as spark:
            from brokerlb.pipeline.recommend import recommend

            plan = _run(
                "recommend",
                lambda: recommend(
                    spark,
                    str(warehouse),
                    since=window[0],
                    until=window[1],
                    statistic=statistic,
                    limits=limits,
                    options=options,
                ),
            )
        if out is None:
            print_json(plan.to_json())
        else:
            plan.save(out)
            summary: dict[str, Any] = {
                "plan": str(out),
                "operations": len(plan.operations),
                "splits": sum(1 for op in plan.operations if op.op == "split"),
                "transfers": sum(1 for op in plan.operations if op.op == "unload"),
                "merges": sum(1 for op in plan.operations if op.op == "merge"),
                "namespaces": len(plan.advice),
            }
            sys.stdout.write(json.dumps(summary) + "\n")


_GRID = typer.Option(None, "--grid", "-g", help="grid file (YAML/JSON): scenario, base, grid axes")
_AXES = typer.Option(
    [],
    "--set",
    help="KEY=V1,V2: a grid axis (broker.conf key, strategy, seed, duration, "
    "timing.*, resources.*; repeatable)",
)
_SCENARIO = typer.Option(
    None, "--scenario", "-s", help="scenario YAML or library name for the cluster (default: from the history)"
)
_BACKTEST_OUT = typer.Option(None, "--output", "-o", help="directory for the tables and plots")


@app.command("backtest")
def backtest_cmd(
    history: Path = _HISTORY,
    grid: Path | None = _GRID,
    axes: list[str] = _AXES,
    scenario: str | None = _SCENARIO,
    output: Path | None = _BACKTEST_OUT,
    tick: str = typer.Option("1m", "--tick", help="cycle length of the cluster derived from the history"),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="with --output, write PNG plots"),
    as_json: bool = typer.Option(False, "--json", help="print the JSON summary instead of the table"),
    master: str | None = _MASTER,
    conf: list[str] = _CONF,
) -> None:
    """Replay the recorded topic traffic under a grid of strategies and settings (one Spark task each)."""
    from brokerlb.pipeline.backtest import prepare_backtest, run_backtest
    from brokerlb.pipeline.backtest_grid import BacktestGrid
    from brokerlb.sim.units import parse_duration

    with cli_errors():
        try:
            tick_seconds = parse_duration(tick)
        except ValueError as exc:
            raise InvalidInputError(f"--tick: {exc}") from None
        base = BacktestGrid.load(grid) if grid is not None else BacktestGrid({})
        plan = prepare_backtest(str(history), base.with_axes(axes), scenario, tick=tick_seconds)
        with _spark(master, conf) as spark:
            result = _run("backtest", lambda: run_backtest(spark, plan, output, plots=plots))
        if as_json:
            print_json(result.to_json())
        else:
            _print_backtest(result)


def _print_backtest(result: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    from brokerlb.cli.common import console
    from brokerlb.pipeline.backtest_grid import short_key
    from brokerlb.pipeline.backtest_report import TABLE_COLUMNS

    plan = result.plan
    title = (
        f"backtest: {plan.scenario.name}, {len(plan.workload.topics):,} topics, "
        f"{plan.scenario.cycles} cycles of {plan.scenario.tick:g}s, {len(result.results)} configurations "
        f"in {result.seconds:.1f}s"
    )
    table = Table(title=title)
    axes = [key for key in plan.grid.axes if key not in ("strategy", "loadBalancerLoadSheddingStrategy")]
    table.add_column("config")
    table.add_column("strategy")
    for key in axes:
        table.add_column(short_key(key), justify="right")
    for _, heading, _ in TABLE_COLUMNS:
        table.add_column(heading, justify="right")
    for row in result.rows():
        cells = []
        for key, _, fmt in TABLE_COLUMNS:
            value = row.get(key)
            if value is None:
                cells.append("-")
            elif fmt == "pct":
                cells.append(f"{value * 100:.1f}%")
            elif fmt == "mb":
                cells.append(f"{value / 1e6:,.1f}")
            else:
                cells.append(fmt.format(value))
        table.add_row(row["configuration"], row["strategy"], *(str(row[key]) for key in axes), *cells)
    out = console if console.is_terminal else Console(width=200)  # a file or pipe gets whole lines
    out.print(table)
    if result.output:
        out.print(f"tables and plots: {result.output}")
