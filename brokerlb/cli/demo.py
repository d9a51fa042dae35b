"""``brokerlb demo``: the main job -- a live 3-broker cluster balancing skewed traffic (about a minute).

See :mod:`brokerlb.demo.run` for what happens and what is synthetic.
"""

from __future__ import annotations

import json
import logging

import typer

from brokerlb.cli.common import cli_errors, console

_SET = typer.Option([], "--set", help="broker.conf key=value (repeatable)")


def demo(
    duration: float = typer.Option(55.0, "--duration", help="seconds to run (it ends by itself)"),
    brokers: int = typer.Option(3, "--brokers", "-n"),
    web_port: int = typer.Option(0, "--web-port", help="web port of the first broker (0 = free ports)"),
    seed: int = typer.Option(42, "--seed", help="seed of the traffic model"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON at the end"),
    overrides: list[str] = _SET,
) -> None:
    """Run the main demo: lookups, a traffic surge, the leader shedding and splitting; ends by itself."""
    from brokerlb.config import parse_overrides
    from brokerlb.demo import DemoOptions, run_demo

    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    with cli_errors():
        options = DemoOptions(
            brokers=brokers,
            duration=duration,
            web_port=web_port,
            seed=seed,
            overrides=dict(parse_overrides(overrides)),
        )
        import asyncio

        from rich.console import Console

        out = console if console.is_terminal else Console(width=max(console.width, 130))
        summary = asyncio.run(run_demo(options, out))
    if as_json:
        print(json.dumps(summary, indent=2))
