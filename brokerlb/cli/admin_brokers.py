"""``brokerlb admin brokers`` and ``broker-stats``: pulsar-admin's verbs, with its flags.

::

    brokerlb admin brokers list [CLUSTER]
    brokerlb admin brokers leader-broker
    brokerlb admin brokers namespaces CLUSTER --url 127.0.0.1:8080
    brokerlb admin brokers healthcheck
    brokerlb admin brokers version
    brokerlb admin brokers list-dynamic-config
    brokerlb admin brokers get-all-dynamic-config
    brokerlb admin brokers update-dynamic-config --config loadBalancerSheddingEnabled --value false
    brokerlb admin brokers delete-dynamic-config --config loadBalancerSheddingEnabled
    brokerlb admin brokers get-runtime-config
    brokerlb admin brokers get-internal-config
    brokerlb admin brokers balancer                       (brokerlb: the balancer's status)
    brokerlb admin broker-stats load-report | topics
"""

from __future__ import annotations

import time
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from brokerlb.cli.admin_common import kv_table, list_table, run
from brokerlb.cli.common import console

__all__ = ["brokers", "broker_stats", "balancer_rows"]

brokers = typer.Typer(
    no_args_is_help=True, help="Active brokers, the leader, owned bundles, version, dynamic configuration."
)
broker_stats = typer.Typer(no_args_is_help=True, help="A broker's load report and topic stats.")

_KEY = typer.Option(..., "--config", "-c", help="config key (one that can change at run time)")


def _iso(ms: Any) -> str:
    """Epoch milliseconds as an ISO-8601 UTC time (``2026-11-27T21:54:32Z``)."""
    if not isinstance(ms, int | float) or ms <= 0:
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def balancer_rows(status: dict[str, Any]) -> dict[str, Any]:
    """The balancer's status as ``key -> value`` lines, times as ISO-8601."""
    rows: dict[str, Any] = {
        key: status.get(key)
        for key in (
            "leader",
            "strategy",
            "movesInFlight",
            "balancedness",
            "busiestBroker",
            "busiestDistanceFromLowerBound",
        )  # fmt: skip
        if key in status
    }
    if "lastCycleAtMs" in status:
        rows["lastCycleAt"] = status.get("lastCycleAt") or _iso(status["lastCycleAtMs"])
    if status.get("graceUntilMs"):
        rows["graceUntil"] = status.get("graceUntil") or _iso(status["graceUntilMs"])
    band = status.get("band")
    if isinstance(band, dict):
        rows["band"] = f"{band.get('lower')} - {band.get('upper')} %"
    last = status.get("lastCycle") or {}
    if last:
        rows["lastCycle decisions"] = ", ".join(f"{k}: {v}" for k, v in last.get("decisions", {}).items())
        rows["lastCycle moves"] = len(last.get("moves", []))
    return rows


def _balancer_table(status: dict[str, Any]) -> None:
    colour = {
        "ready": "green",
        "in_progress": "yellow",
        "waiting": "yellow",
        "stalled": "red",
        "off": "dim",
    }.get(str(status["state"]).split(" ")[0], "")
    state = str(status["state"])
    if status.get("graceUntil"):
        state += f" (grace until {status['graceUntil']})"
    console.print(
        f"[bold {colour}]{escape(state)}[/] {escape(str(status.get('reason', '')))}", highlight=False
    )
    kv_table("balancer", balancer_rows(status))


def _owned_table(data: dict[str, Any]) -> None:
    t = Table()
    for col in ("bundle", "assignment", "controlled", "active"):
        t.add_column(col, overflow="fold")
    for bundle, s in sorted(data.items()):
        t.add_row(bundle, s["broker_assignment"], str(s["is_controlled"]), str(s["is_active"]))
    console.print(t)


@brokers.command("list")
def brokers_list(ctx: typer.Context, cluster: str | None = typer.Argument(None)) -> None:
    """Active brokers."""
    run(ctx, lambda a: a.get_active_brokers(cluster), lambda ids: list_table("active brokers", "broker", ids))


@brokers.command("leader-broker")
def brokers_leader(ctx: typer.Context) -> None:
    """The leader broker (BrokerInfo: serviceUrl, brokerId)."""
    run(ctx, lambda a: a.get_leader_broker(), lambda d: kv_table("leader", d))


@brokers.command("leader", hidden=True)
def brokers_leader_old(ctx: typer.Context) -> None:
    """brokerlb's earlier name of ``leader-broker``."""
    brokers_leader(ctx)


@brokers.command("namespaces")
def brokers_namespaces(
    ctx: typer.Context,
    cluster: str,
    broker: str = typer.Option(..., "--url", "-u", help="the broker (host:port)"),
) -> None:
    """The bundles a broker owns, with their isolation status (NamespaceOwnershipStatus)."""
    run(ctx, lambda a: a.get_owned_namespaces(cluster, broker.split("://", 1)[-1].rstrip("/")), _owned_table)


@brokers.command("healthcheck")
def brokers_healthcheck(ctx: typer.Context) -> None:
    """Run a health check against the broker: ``ok``, or an error and exit code 1."""
    run(ctx, lambda a: a.health_check(), lambda answer: console.print(answer, highlight=False))


@brokers.command("version")
def brokers_version(ctx: typer.Context) -> None:
    """The broker's version."""
    run(ctx, lambda a: a.get_version(), lambda v: console.print(v, highlight=False))


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
    """The broker's configuration as it runs (broker.conf with the dynamic values applied)."""
    run(ctx, lambda a: a.get_runtime_config(), lambda d: kv_table("runtime configuration", d))


@brokers.command("get-internal-config")
def internal(ctx: typer.Context) -> None:
    """The metadata store and storage the broker uses (InternalConfigurationData)."""
    run(ctx, lambda a: a.get_internal_config(), lambda d: kv_table("internal configuration", d))


@brokers.command("balancer")
def balancer(ctx: typer.Context) -> None:
    """brokerlb: the balancer's status -- off, ready, in_progress, waiting or stalled, and why."""
    run(ctx, lambda a: a.get_balancer_status(), _balancer_table)


@broker_stats.command("load-report")
def stats_load_report(ctx: typer.Context) -> None:
    """The broker's LocalBrokerData."""

    def table(d: dict[str, Any]) -> None:
        rows: dict[str, Any] = {
            k: d[k]
            for k in (
                "webServiceUrl",
                "numBundles",
                "numTopics",
                "msgRateIn",
                "msgRateOut",
                "msgThroughputIn",
                "msgThroughputOut",
                "maxResourceUsage",
            )
            if k in d
        }
        for res in ("cpu", "memory", "bandwidthIn", "bandwidthOut"):
            if res in d:
                rows[res] = f"{d[res]['usage']:.1f} / {d[res]['limit']:.1f}"
        kv_table("load report", rows)

    run(ctx, lambda a: a.get_load_report(), table)


@broker_stats.command("topics")
def stats_topics(
    ctx: typer.Context,
    indent: bool = typer.Option(False, "--indent", "-i", help="as pulsar-admin (JSON is always indented)"),
) -> None:
    """Stats of the topics the broker serves."""

    def table(d: dict[str, Any]) -> None:
        t = Table()
        for col in ("topic", "bundle", "msgRateIn", "msgRateOut", "msgThroughputIn"):
            t.add_column(col, overflow="fold")
        for ns, bundles in d.items():
            for rng, domains in bundles.items():
                for _domain, tops in domains.items():
                    for name, s in tops.items():
                        t.add_row(
                            name,
                            f"{ns}/{rng}",
                            f"{s['msgRateIn']:.1f}",
                            f"{s['msgRateOut']:.1f}",
                            f"{s['msgThroughputIn']:.0f}",
                        )
        console.print(t)

    run(ctx, lambda a: a.get_topics_stats(), table)
