"""``brokerlb plan``: the offline planner over cluster snapshots (docs/snapshot.md).

``shed``, ``split`` and ``place`` read one snapshot (``--snapshot FILE``, ``-`` or nothing
for stdin, or ``--load-reports DIR``) and print the answer as JSON (default) or tables;
``optimize`` writes the plan brokerlb's balancer would carry out (docs/balancer.md);
``batch`` answers JSON Lines requests from stdin, one line per request, keeping strategy
state per ``session``; ``snapshot`` prints the snapshot a ``--load-reports`` folder gives.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from typing import Any

import typer
from rich.markup import escape

from brokerlb.cli.common import cli_errors, console, err_console, print_json
from brokerlb.cli.plan_apply import apply_cmd

app = typer.Typer(no_args_is_help=True)
app.command("apply")(
    apply_cmd
)  # brokerlb plan apply PLAN --url ... (the pipeline's plans, docs/plan-format.md)


class OutputFormat(StrEnum):
    JSON = "json"
    TABLE = "table"


_SNAPSHOT = typer.Option(None, "--snapshot", "-s", help="snapshot JSON file ('-' or omitted: stdin)")
_REPORTS = typer.Option(
    None, "--load-reports", help="folder of `pulsar-admin broker-stats load-report` JSON files"
)
_STRATEGY = typer.Option(
    None, "--strategy", help="Pulsar class name or short name (default: from the config)"
)
_SET = typer.Option(None, "--set", help="config override key=value (repeatable)")
_SEED = typer.Option(None, "--seed", help="seed of the tie-breaking random source (default 0)")
_FORMAT = typer.Option(OutputFormat.JSON, "--format", "-f", help="json or table")
_RAW = typer.Option(False, "--raw", help="the strategy's own selection only (no loop / pipeline rules)")


def _overrides(pairs: list[str] | None) -> dict[str, str]:
    from brokerlb.config import parse_overrides

    return parse_overrides(pairs or [])


def _snapshot_doc(snapshot: str | None, load_reports: str | None) -> Any:
    from brokerlb.errors import InvalidInputError
    from brokerlb.loadbalance.snapshot import read_snapshot_text, snapshot_from_load_reports

    if load_reports is not None:
        if snapshot is not None:
            raise InvalidInputError("give either --snapshot or --load-reports, not both")
        return snapshot_from_load_reports(load_reports)
    if snapshot in (None, "-"):
        return read_snapshot_text(sys.stdin.read(), "stdin")
    try:
        with open(snapshot, encoding="utf-8") as handle:
            return read_snapshot_text(handle.read(), snapshot)
    except OSError as exc:
        from brokerlb.errors import InvalidSnapshotError

        raise InvalidSnapshotError(f"cannot read snapshot file {snapshot}: {exc.strerror or exc}") from exc


def _planner(default_snapshot: Any = None) -> Any:
    from brokerlb.clock import SystemClock
    from brokerlb.loadbalance.planner import Planner

    return Planner(clock=SystemClock().now_ms, default_snapshot=default_snapshot)


def _answer(
    op: str,
    snapshot: str | None,
    load_reports: str | None,
    strategy: str | None,
    set_: list[str] | None,
    seed: int | None,
    raw: bool,
    bundle: str | None,
    output: OutputFormat,
) -> None:
    from brokerlb.loadbalance.planner import PlanRequest

    with cli_errors():
        request = PlanRequest(
            op, _snapshot_doc(snapshot, load_reports), strategy, bundle, None, seed, raw, _overrides(set_)
        )
        answer = _planner().run(request)
        if output is OutputFormat.TABLE:
            for warning in answer.get("warnings", ()):
                err_console.print(
                    f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False, soft_wrap=True
                )
            _print_tables(answer)
        else:
            print_json(answer)


@app.command("shed")
def shed_cmd(
    snapshot: str | None = _SNAPSHOT,
    load_reports: str | None = _REPORTS,
    strategy: str | None = _STRATEGY,
    set_: list[str] | None = _SET,
    seed: int | None = _SEED,
    raw: bool = _RAW,
    output: OutputFormat = _FORMAT,
) -> None:
    """What the leader's shedding loop would unload (--raw: the strategy alone)."""
    _answer("shed", snapshot, load_reports, strategy, set_, seed, raw, None, output)


@app.command("split")
def split_cmd(
    snapshot: str | None = _SNAPSHOT,
    load_reports: str | None = _REPORTS,
    strategy: str | None = _STRATEGY,
    set_: list[str] | None = _SET,
    seed: int | None = _SEED,
    output: OutputFormat = _FORMAT,
) -> None:
    """Which bundles the split check would split."""
    _answer("split", snapshot, load_reports, strategy, set_, seed, False, None, output)


@app.command("place")
def place_cmd(
    bundle: str = typer.Option(..., "--bundle", "-b", help="bundle to place: tenant/ns/0x…_0x…"),
    snapshot: str | None = _SNAPSHOT,
    load_reports: str | None = _REPORTS,
    strategy: str | None = _STRATEGY,
    set_: list[str] | None = _SET,
    seed: int | None = _SEED,
    raw: bool = _RAW,
    output: OutputFormat = _FORMAT,
) -> None:
    """Where the placement pipeline would put a bundle (--raw: the strategy alone)."""
    _answer("place", snapshot, load_reports, strategy, set_, seed, raw, bundle, output)


@app.command("optimize")
def optimize_cmd(
    snapshot: str | None = _SNAPSHOT,
    load_reports: str | None = _REPORTS,
    target: float | None = typer.Option(
        None,
        "--target",
        help="busiest broker's target as a ratio to the balanced load, e.g. 1.05 "
        "(default: 1 + brokerlbBalancerTargetTolerance)",
    ),
    max_moves: int | None = typer.Option(
        None, "--max-moves", help="moves the plan may hold (default: as many as the target needs)"
    ),
    exact: bool = typer.Option(
        False, "--exact", help="solve exactly with the MIP oracle (small snapshots; needs brokerlb[optimize])"
    ),
    set_: list[str] | None = _SET,
    out: str | None = typer.Option(None, "--out", "-o", help="write the plan to this file (default: stdout)"),
    execute: bool = typer.Option(
        False, "--execute", help="apply the plan through --url (default: a dry run that only writes the plan)"
    ),
    url: str | None = typer.Option(None, "--url", help="admin URL of any broker, for --execute"),
    token: str | None = typer.Option(None, "--token", help="bearer token (default: $BROKERLB_ADMIN_TOKEN)"),
) -> None:
    """brokerlb's balancer offline: the moves (in waves under the per-cycle budgets), splits and
    merges that bring the snapshot's cluster to its target, as a plan `brokerlb plan apply` runs."""
    import os

    from brokerlb.clock import SystemClock
    from brokerlb.errors import InvalidInputError
    from brokerlb.loadbalance.balancer.optimize import optimize, to_plan
    from brokerlb.loadbalance.planner import Planner

    with cli_errors():
        if execute and not url:
            raise InvalidInputError("--execute needs --url (the admin URL of a broker)")
        planner = Planner(clock=SystemClock().now_ms)
        view = planner.view_of(_snapshot_doc(snapshot, load_reports), _overrides(set_))
        plan = to_plan(optimize(view, target=target, max_moves=max_moves, exact=exact), view)
        if out is not None:
            plan.save(out)
            console.print(
                f"wrote {len(plan.operations)} operation(s) to {out} "
                f"({plan.source.get('moves', 0)} moves in {plan.source.get('waves', 0)} wave(s), "
                f"busiest {plan.source.get('busiestBefore', 0):.3f} -> {plan.source.get('busiestAfter', 0):.3f})",
                highlight=False,
                soft_wrap=True,
            )
        else:
            print_json(plan.to_json())
        if not execute:
            return
        from brokerlb.plan.apply import apply_plan

        assert url is not None
        report = apply_plan(plan, url, token=token or os.environ.get("BROKERLB_ADMIN_TOKEN") or None)
    for r in report.results:
        console.print(
            f"{r.status:9} #{r.index} {r.op} {r.target}" + (f" -- {r.detail}" if r.detail else ""),
            highlight=False,
        )
    if not report.ok:
        raise typer.Exit(1)


@app.command("batch")
def batch_cmd(
    snapshot: str | None = typer.Option(
        None, "--snapshot", "-s", help="snapshot file used by requests that carry none"
    ),
) -> None:
    """Answer JSON Lines requests from stdin: {"op", "snapshot", "strategy", "bundle", "session", "seed", "raw"}."""
    with cli_errors():
        default = _snapshot_doc(snapshot, None) if snapshot not in (None, "-") else None
        planner = _planner(default)
        for answer in planner.run_batch(sys.stdin):
            sys.stdout.write(json.dumps(answer, separators=(",", ":"), default=str) + "\n")
            sys.stdout.flush()


@app.command("snapshot")
def snapshot_cmd(
    load_reports: str = typer.Option(..., "--load-reports", help="folder of load-report JSON files"),
    now: int | None = typer.Option(None, "--now", help="'now' in ms (default: newest lastUpdate)"),
) -> None:
    """Print the snapshot a folder of load reports gives (to edit and feed back with --snapshot)."""
    from brokerlb.loadbalance.snapshot import snapshot_from_load_reports

    with cli_errors():
        print_json(snapshot_from_load_reports(load_reports, now_ms=now))


def _print_tables(answer: dict[str, Any]) -> None:
    from rich.table import Table

    console.print(f"[bold]{answer['op']}[/bold] with {answer['strategy']}", highlight=False)
    if answer["op"] == "shed":
        table = Table("broker", "bundle", "destination", "label", "reason", "detail", title="unload")
        for d in answer["unload"]:
            table.add_row(
                d["broker"] or "-",
                d["bundle"] or "-",
                d["destination"] or "-",
                d["label"],
                d["reason"],
                d["detail"],
            )
        console.print(table)
    elif answer["op"] == "split":
        table = Table("bundle", "boundaries", "label", "reason", "detail", title="split")
        for d in answer["split"]:
            table.add_row(
                d["bundle"], ", ".join(d["boundaries"]) or "-", d["label"], d["reason"], d["detail"]
            )
        console.print(table)
    else:
        p = answer["placement"]
        table = Table("bundle", "broker", "candidates", "reason", "detail", title="placement")
        table.add_row(
            p["bundle"], p["broker"] or "-", ", ".join(p["candidates"]) or "-", p["reason"], p["detail"]
        )
        console.print(table)
    if answer["stats"]:
        stats = Table("stat", "value", title="stats")
        for key, value in answer["stats"].items():
            stats.add_row(str(key), json.dumps(value) if not isinstance(value, str) else value)
        console.print(stats)
