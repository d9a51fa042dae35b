"""Helpers shared by CLI modules: error reporting and output formats."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from brokerlb.errors import BrokerLBError

console = Console()
err_console = Console(stderr=True)


@contextmanager
def cli_errors() -> Iterator[None]:
    """Turn brokerlb errors into one red line on stderr and exit code 1 (2 for bad input)."""
    try:
        yield
    except BrokerLBError as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2 if isinstance(exc, ValueError) else 1) from None


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
