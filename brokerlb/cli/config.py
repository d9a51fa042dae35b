"""``brokerlb config``: the broker.conf keys and the effective configuration."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import typer
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from brokerlb.cli.common import cli_errors, console, err_console, print_json
from brokerlb.errors import ConfigWarning

app = typer.Typer(no_args_is_help=True)

_JSON = typer.Option(False, "--json", help="machine-readable JSON output")
_CONFIG = typer.Option(None, "--config", "-f", help="broker.conf file")
_SET = typer.Option([], "--set", help="key=value, overrides the file (repeatable)")


@app.command("keys")
def keys_cmd(
    as_json: bool = _JSON,
    markdown: bool = typer.Option(False, "--markdown", help="print docs/configuration.md"),
    category: str | None = typer.Option(
        None, "--category", "-c", help="only keys whose category contains this text"
    ),
) -> None:
    """List every config key: type, default, whether it is dynamic, what it does."""
    from brokerlb.config.docs import format_default, key_rows, render_markdown
    from brokerlb.config.service_config import REGISTRY

    if markdown:
        sys.stdout.write(render_markdown())
        return
    keys = [k for k in REGISTRY if category is None or category.lower() in k.category.lower()]
    if as_json:
        names = {k.name for k in keys}
        print_json([row for row in key_rows() if row["key"] in names])
        return
    category_shown = None
    for k in keys:
        if k.category != category_shown:
            category_shown = k.category
            console.print(f"\n[bold underline]{k.category}[/]")
        flags = " ".join(
            f
            for f in (
                "dynamic" if k.dynamic else "",
                "required" if k.required else "",
                "deprecated" if k.deprecated else "",
            )
            if f
        )
        console.print(
            f"[bold]{k.name}[/] [cyan]{k.kind.name}[/] = {escape(format_default(k))}"
            + (f" [dim]({flags})[/]" if flags else ""),
            highlight=False,
            soft_wrap=True,
        )
        doc = k.doc + (f" Deprecated: {k.deprecated}." if k.deprecated else "")
        console.print(Padding(Text(doc), (0, 0, 0, 4)))


@app.command("show")
def show_cmd(
    config: Path | None = _CONFIG,
    overrides: list[str] = _SET,
    as_json: bool = _JSON,
    changed_only: bool = typer.Option(False, "--changed", help="only values that differ from defaults"),
    strict: bool = typer.Option(False, "--strict", help="unknown keys are errors"),
) -> None:
    """Print the effective configuration (defaults, then the file, then --set)."""
    from brokerlb.config.docs import format_value
    from brokerlb.config.loader import load_broker_conf
    from brokerlb.config.service_config import REGISTRY

    with cli_errors(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConfigWarning)
        conf = load_broker_conf(config, overrides, strict=strict)
    for warning in caught:
        err_console.print(f"[yellow]warning:[/yellow] {warning.message}", highlight=False, soft_wrap=True)
    if as_json:
        print_json(conf.to_dict(changed_only=changed_only))
        return
    changed = conf.changed()
    table = Table(title="effective configuration" + (f" ({config})" if config else ""))
    table.add_column("key", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("")
    for k in REGISTRY:
        is_changed = k.name in changed
        if changed_only and not is_changed:
            continue
        value = conf.get(k.name)
        mark = "changed" if is_changed else ("set" if k.name in conf.explicit_keys else "")
        table.add_row(k.name, format_value(k, value), mark, style="bold" if is_changed else None)
    console.print(table)
