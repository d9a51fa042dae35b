"""Helpers of the ``brokerlb admin`` verbs: one call to a broker, then a table, a line or JSON."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import typer
from rich.table import Table

from brokerlb.admin.client import AdminClient
from brokerlb.cli.common import cli_errors, console, print_json

__all__ = ["run", "kv_table", "list_table", "split_list"]


def run(
    ctx: typer.Context,
    call: Callable[[AdminClient], Any],
    table: Callable[[Any], None] | None = None,
    done: str | None = None,
) -> None:
    """Call the broker at ``--url``; print ``table(result)``, ``done``, or JSON with ``--json``.

    Authenticates with ``--auth-plugin`` / ``--auth-params`` and trusts ``--tls-trust-cert-path``
    as pulsar-admin does (set on ``brokerlb admin``, in ``ctx.obj``).
    """
    from brokerlb.security.client_auth import client_token

    with cli_errors():
        token = client_token(*ctx.obj.get("auth", (None, None)))
        with AdminClient(ctx.obj["url"], token=token, verify=ctx.obj.get("verify", True)) as admin:
            result = call(admin)
    if ctx.obj["json"]:
        print_json(result if result is not None else {})
    elif table is not None:
        table(result)
    elif done is not None:
        console.print(done, highlight=False)


def kv_table(title: str, rows: dict[str, Any]) -> None:
    t = Table(title=title)
    t.add_column("key")
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
