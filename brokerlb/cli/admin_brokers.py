"""``brokerlb admin brokers`` verbs for the version and the (dynamic) configuration, as pulsar-admin's.

::

    brokerlb admin brokers version
    brokerlb admin brokers list-dynamic-config
    brokerlb admin brokers get-all-dynamic-config
    brokerlb admin brokers update-dynamic-config --config loadBalancerSheddingEnabled --value false
    brokerlb admin brokers delete-dynamic-config --config loadBalancerSheddingEnabled
    brokerlb admin brokers get-runtime-config
    brokerlb admin brokers get-internal-config
    brokerlb admin brokers balancer
"""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape

from brokerlb.cli.admin_common import kv_table, list_table, run
from brokerlb.cli.common import console

__all__ = ["add_broker_verbs"]

_KEY = typer.Option(..., "--config", "-c", help="config key (one that can change at run time)")


def _balancer_table(status: dict[str, Any]) -> None:
    colour = {"ready": "green", "in_progress": "yellow", "stalled": "red", "off": "dim"}.get(
        status["state"], ""
    )
    console.print(
        f"[bold {colour}]{status['state']}[/] {escape(str(status.get('reason', '')))}", highlight=False
    )
    rows: dict[str, Any] = {
        key: status.get(key)
        for key in (
            "leader",
            "strategy",
            "lastCycleAtMs",
            "movesInFlight",
            "balancedness",
            "busiestBroker",
            "busiestDistanceFromLowerBound",
        )  # fmt: skip
        if key in status
    }
    last = status.get("lastCycle") or {}
    if last:
        rows["lastCycle decisions"] = ", ".join(f"{k}: {v}" for k, v in last.get("decisions", {}).items())
        rows["lastCycle moves"] = len(last.get("moves", []))
    kv_table("balancer", rows)


def add_broker_verbs(brokers: typer.Typer) -> None:
    """Register the verbs on the ``brokers`` group."""

    @brokers.command("version")
    def brokers_version(ctx: typer.Context) -> None:
        run(
            ctx,
            lambda a: {"version": a.get_version()},
            lambda d: console.print(d["version"], highlight=False),
        )

    @brokers.command("list-dynamic-config")
    def list_dynamic(ctx: typer.Context) -> None:
        """Keys that can be changed at run time."""
        run(ctx, lambda a: a.get_dynamic_config_names(), lambda n: list_table("dynamic keys", "key", n))

    @brokers.command("get-all-dynamic-config")
    def all_dynamic(ctx: typer.Context) -> None:
        """The stored dynamic configuration (what every broker applies)."""
        run(ctx, lambda a: a.get_dynamic_config(), lambda d: kv_table("dynamic configuration", d))

    @brokers.command("update-dynamic-config")
    def update_dynamic(
        ctx: typer.Context, key: str = _KEY, value: str = typer.Option(..., "--value", "-v", help="new value")
    ) -> None:
        """Set a key for every broker; the leader uses it from its next cycle."""
        run(ctx, lambda a: a.update_dynamic_config(key, value), done=f"{key}={value} stored")

    @brokers.command("delete-dynamic-config")
    def delete_dynamic(ctx: typer.Context, key: str = _KEY) -> None:
        """Remove a key (brokers go back to their broker.conf value)."""
        run(ctx, lambda a: a.delete_dynamic_config(key), done=f"{key} removed")

    @brokers.command("get-runtime-config")
    def runtime(ctx: typer.Context) -> None:
        run(ctx, lambda a: a.get_runtime_config(), lambda d: kv_table("runtime configuration", d))

    @brokers.command("balancer")
    def balancer(ctx: typer.Context) -> None:
        """brokerlb: the balancer's status -- off, ready, in_progress or stalled, and why."""
        run(ctx, lambda a: a.get_balancer_status(), _balancer_table)

    @brokers.command("get-internal-config")
    def internal(ctx: typer.Context) -> None:
        run(ctx, lambda a: a.get_internal_config(), lambda d: kv_table("internal configuration", d))
