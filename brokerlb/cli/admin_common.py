"""Helpers of the ``brokerlb admin`` verbs: one call to a broker, then a table, a line or JSON.

Output, as the pulsar-admin contract of ``docs/pulsar-admin.md`` says: on a terminal, tables
(or one line); when standard output is not a terminal (a pipe, a file, ``$(...)``), JSON -- the
objects pulsar-admin prints, with Pulsar's field names, lists as JSON arrays and single values
(a broker URL, a bundle range, a version) as JSON strings, so ``| jq`` works on every verb. A
verb that answers nothing prints nothing in JSON. ``--json`` and ``--table`` (before the group)
choose the format whatever standard output is.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

import typer
from rich.table import Table

from brokerlb.admin.client import AdminClient
from brokerlb.cli.common import cli_errors, console, print_json

__all__ = ["run", "kv_table", "list_table", "split_list", "wants_json"]


def wants_json(ctx: typer.Context) -> bool:
    """JSON when ``--json`` was given, tables with ``--table``, else JSON unless stdout is a terminal."""
    chosen = ctx.obj.get("output")
    if chosen is not None:
        return bool(chosen == "json")
    return not sys.stdout.isatty()


def run(
    ctx: typer.Context,
    call: Callable[[AdminClient], Any],
    table: Callable[[Any], None] | None = None,
    done: str | None = None,
) -> None:
    """Call the broker at ``--admin-url``; print ``table(result)`` or ``done`` on a terminal, JSON
    otherwise (module docstring).

    Authenticates with ``--auth-plugin`` / ``--auth-params`` and trusts ``--tls-trust-cert-path``
    as pulsar-admin does (set on ``brokerlb admin``, in ``ctx.obj``).
    """
    from brokerlb.security.client_auth import client_token

    obj = ctx.obj
    with cli_errors():
        token = client_token(*obj.get("auth", (None, None)))
        with AdminClient(
            obj["url"], token=token, verify=obj.get("verify", True), timeout=obj.get("timeout", 30.0)
        ) as admin:
            result = call(admin)
    if wants_json(ctx):
        if result is not None:
            print_json(result)
    elif table is not None:
        table(result)
    elif done is not None:
        console.print(done, highlight=False)


def kv_table(title: str, rows: dict[str, Any]) -> None:
    t = Table(title=title)
    t.add_column("key", overflow="fold")
    t.add_column("value", overflow="fold")
    for key, value in rows.items():
        t.add_row(str(key), str(value))
    console.print(t)


def list_table(title: str, column: str, values: Iterable[Any]) -> None:
    t = Table(title=title)
    t.add_column(column, overflow="fold")
    for value in values:
        t.add_row(str(value))
    console.print(t)


def split_list(values: Iterable[str]) -> list[str]:
    """Repeated and comma-separated option values, as pulsar-admin takes them (``-c a,b -c c``)."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]
