"""Entry point of the ``brokerlb`` command.

Each area lives in its own module under ``brokerlb.cli`` and exposes ``app``
(a ``typer.Typer``); :data:`SUBCOMMANDS` wires them in. Modules import their
heavy dependencies inside the commands, so ``brokerlb --help`` stays fast.
"""

from __future__ import annotations

import importlib
import sys

import typer

#: (command name, module exposing ``app``, help) -- one line per area.
SUBCOMMANDS: list[tuple[str, str, str]] = [
    ("ring", "brokerlb.cli.ring", "Offline hash-ring tools: bundles, topic → bundle, split, merge."),
    (
        "config",
        "brokerlb.cli.config",
        "broker.conf keys (Pulsar names and defaults) and the effective config.",
    ),
    ("kafka", "brokerlb.cli.kafka", "Producer partitioning and consumer-group assignors, offline."),
    (
        "metadata",
        "brokerlb.cli.metadata",
        "Metadata store in Pulsar's layout: brokers, leader, owners, bundles; a local ZooKeeper.",
    ),
    (
        "admin",
        "brokerlb.cli.admin",
        "pulsar-admin-style client of any broker: tenants, namespaces, topics, brokers, clusters, ns-isolation-policy.",
    ),
    (
        "plan",
        "brokerlb.cli.plan",
        "Offline planner: what shedding, split and placement would do on a snapshot.",
    ),
    (
        "pipeline",
        "brokerlb.cli.pipeline",
        "Spark jobs over load history: ingest, loaddata, recommend, backtest.",
    ),
    ("tokens", "brokerlb.cli.tokens", "Keys and tokens for token authentication (as `pulsar tokens`)."),
    ("perf", "brokerlb.cli.perf", "Load over the data path, like pulsar-perf: produce | consume with skew."),
]

#: (command name, module, function) -- single top-level commands.
COMMANDS: list[tuple[str, str, str]] = [
    ("demo", "brokerlb.cli.demo", "demo"),
    ("simulate", "brokerlb.cli.simulate", "simulate"),
    ("broker", "brokerlb.cli.serve", "broker"),
    ("standalone", "brokerlb.cli.serve", "standalone"),
    ("chaos", "brokerlb.cli.chaos", "chaos"),
]


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="brokerlb",
        help="Load balancing and topic ownership for message-broker clusters (Pulsar-faithful).",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for name, module, help_text in SUBCOMMANDS:
        sub = importlib.import_module(module).app
        app.add_typer(sub, name=name, help=help_text)
    for name, module, func in COMMANDS:
        app.command(name)(getattr(importlib.import_module(module), func))
    _plain_help(app)
    return app


def _plain_help(app: typer.Typer) -> None:
    """Help as click prints it: options and their text wrapped to the terminal's width. Rich's help
    panels gave the text a column of twenty characters or less at 80 columns."""
    app.rich_markup_mode = None
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _plain_help(group.typer_instance)


def main(argv: list[str] | None = None) -> None:
    app = build_app()
    app(args=argv if argv is not None else sys.argv[1:], prog_name="brokerlb")


if __name__ == "__main__":  # pragma: no cover
    main()
