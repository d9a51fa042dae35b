"""``brokerlb plan apply PLAN --url URL``: send a plan's bundle operations to a running cluster.

Registered into the ``plan`` group by ``brokerlb/cli/plan.py`` (one line); the plan format is
``docs/plan-format.md`` and the requests are described in :mod:`brokerlb.plan.apply`.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from brokerlb.cli.common import cli_errors, console, print_json

__all__ = ["apply_cmd"]

_PLAN = typer.Argument(..., help="plan JSON file (e.g. written by 'brokerlb pipeline recommend')")


def apply_cmd(
    plan: Path = _PLAN,
    url: str = typer.Option(..., "--url", help="admin URL of any broker, e.g. http://localhost:8080"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the requests, send nothing"),
    no_verify: bool = typer.Option(
        False, "--no-verify", help="do not read the layout before and after each split/merge"
    ),
    continue_on_error: bool = typer.Option(
        False, "--continue-on-error", help="go on after a failed operation"
    ),
    token: str | None = typer.Option(None, "--token", help="bearer token (default: $BROKERLB_ADMIN_TOKEN)"),
    timeout: float = typer.Option(30.0, "--timeout", help="seconds per request"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable JSON output"),
) -> None:
    """Apply a plan (splits, merges, unloads) through the admin REST API; exit 1 if an operation failed."""
    from brokerlb.cli.progress import progress_bar
    from brokerlb.plan import Plan
    from brokerlb.plan.apply import OpResult, apply_plan

    with cli_errors():
        loaded = Plan.load(plan)
        with progress_bar(quiet=as_json or dry_run, unit="operations") as progress:
            task = progress.add_task(f"apply {plan.name}", total=len(loaded.operations))

            def advance(result: OpResult) -> None:
                progress.update(task, advance=1, description=f"{result.op} {result.target}"[:28])

            report = apply_plan(
                loaded,
                url,
                token=token or os.environ.get("BROKERLB_ADMIN_TOKEN") or None,
                dry_run=dry_run,
                verify=not no_verify,
                continue_on_error=continue_on_error,
                timeout=timeout,
                on_result=advance,
            )
    if as_json:
        print_json(report.to_json())
    else:
        for r in report.results:
            colour = "green" if r.ok else "red"
            console.print(
                f"[{colour}]{r.status:9}[/] #{r.index} {r.op} {r.target}"
                + (f" -- {r.detail}" if r.detail else ""),
                highlight=False,
                soft_wrap=True,
            )
            if dry_run:
                for line in r.requests:
                    console.print(f"            {line}", highlight=False, soft_wrap=True)
        skipped = len(loaded.operations) - len(report.results)
        if skipped:
            console.print(f"[yellow]not run[/]   {skipped} operation(s) after the failure", highlight=False)
    if not report.ok:
        raise typer.Exit(1)
