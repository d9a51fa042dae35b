"""``brokerlb admin clusters`` and ``brokerlb admin ns-isolation-policy``: pulsar-admin's verbs.

::

    brokerlb admin clusters list | get CLUSTER
    brokerlb admin clusters list-failure-domains CLUSTER
    brokerlb admin clusters get-failure-domain CLUSTER --domain-name rack-a
    brokerlb admin clusters create-failure-domain CLUSTER --domain-name rack-a --broker-list b1:8080,b2:8080
    brokerlb admin clusters update-failure-domain CLUSTER --domain-name rack-a --broker-list b1:8080
    brokerlb admin clusters delete-failure-domain CLUSTER --domain-name rack-a
    brokerlb admin ns-isolation-policy set CLUSTER NAME --namespaces 'public/iso-.*' --primary 'b1:.*'
          [--secondary 'b2:.*'] [--auto-failover-policy-type min_available]
          [--auto-failover-policy-params min_limit=1,usage_threshold=80]
    brokerlb admin ns-isolation-policy get CLUSTER NAME | list CLUSTER | delete CLUSTER NAME
    brokerlb admin ns-isolation-policy brokers CLUSTER | broker CLUSTER --broker b1:8080
"""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from brokerlb.cli.admin_common import kv_table, list_table, run, split_list
from brokerlb.cli.common import console

clusters = typer.Typer(no_args_is_help=True, help="Clusters and their failure domains.")
isolation = typer.Typer(no_args_is_help=True, help="Namespace isolation policies of a cluster.")

_DOMAIN = typer.Option(..., "--domain-name", help="failure domain name")
_BROKERS = typer.Option([], "--broker-list", help="brokers of the domain (host:port, comma-separated)")


@clusters.command("list")
def clusters_list(ctx: typer.Context) -> None:
    """The clusters (brokerlb: the one its brokers are configured with, clusterName)."""
    run(ctx, lambda a: a.get_clusters(), lambda names: list_table("clusters", "cluster", names))


@clusters.command("get")
def clusters_get(ctx: typer.Context, cluster: str) -> None:
    """The cluster's ClusterData (service URLs)."""
    run(ctx, lambda a: a.get_cluster(cluster), lambda data: kv_table(cluster, data))


def _domains_table(domains: dict[str, Any]) -> None:
    t = Table(title="failure domains")
    t.add_column("domain")
    t.add_column("brokers", overflow="fold")
    for name, domain in sorted(domains.items()):
        t.add_row(name, ", ".join(domain.get("brokers", [])))
    console.print(t)


@clusters.command("list-failure-domains")
def domains_list(ctx: typer.Context, cluster: str) -> None:
    """The cluster's failure domains and their brokers."""
    run(ctx, lambda a: a.get_failure_domains(cluster), _domains_table)


@clusters.command("get-failure-domain")
def domains_get(ctx: typer.Context, cluster: str, domain: str = _DOMAIN) -> None:
    """One failure domain's brokers."""
    run(ctx, lambda a: a.get_failure_domain(cluster, domain), lambda d: _domains_table({domain: d}))


@clusters.command("create-failure-domain")
def domains_create(
    ctx: typer.Context, cluster: str, domain: str = _DOMAIN, brokers: list[str] = _BROKERS
) -> None:
    """Create a failure domain (a broker may be in one domain only)."""
    run(ctx, lambda a: a.set_failure_domain(cluster, domain, split_list(brokers)), done=f"created {domain}")


@clusters.command("update-failure-domain")
def domains_update(
    ctx: typer.Context, cluster: str, domain: str = _DOMAIN, brokers: list[str] = _BROKERS
) -> None:
    """Replace a failure domain's brokers (creates it if it does not exist)."""
    run(ctx, lambda a: a.set_failure_domain(cluster, domain, split_list(brokers)), done=f"updated {domain}")


@clusters.command("delete-failure-domain")
def domains_delete(ctx: typer.Context, cluster: str, domain: str = _DOMAIN) -> None:
    """Delete a failure domain."""
    run(ctx, lambda a: a.delete_failure_domain(cluster, domain), done=f"deleted {domain}")


# --------------------------------------------------------------------------- ns-isolation-policy


_NAMESPACES = typer.Option(..., "--namespaces", help="namespace regexes (comma-separated)")
_PRIMARY = typer.Option(..., "--primary", help="primary broker regexes")
_SECONDARY = typer.Option([], "--secondary", help="secondary broker regexes")
_PARAMS = typer.Option(
    ["min_limit=1,usage_threshold=80"], "--auto-failover-policy-params", help="key=value,..."
)


def _params(values: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in split_list(values):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(
                f"expected key=value, got {item!r}", param_hint="--auto-failover-policy-params"
            )
        out[key.strip()] = value.strip()
    return out


@isolation.command("set")
def isolation_set(
    ctx: typer.Context,
    cluster: str,
    name: str,
    namespaces: list[str] = _NAMESPACES,
    primary: list[str] = _PRIMARY,
    secondary: list[str] = _SECONDARY,
    policy_type: str = typer.Option("min_available", "--auto-failover-policy-type"),
    params: list[str] = _PARAMS,
) -> None:
    """Create or replace a namespace isolation policy."""
    policy = {
        "namespaces": split_list(namespaces),
        "primary": split_list(primary),
        "secondary": split_list(secondary),
        "auto_failover_policy": {"policy_type": policy_type, "parameters": _params(params)},
    }
    run(ctx, lambda a: a.set_isolation_policy(cluster, name, policy), done=f"set isolation policy {name}")


def _policy_rows(name: str, p: dict[str, Any]) -> list[str]:
    failover = p.get("auto_failover_policy") or {}
    params = ",".join(f"{k}={v}" for k, v in sorted((failover.get("parameters") or {}).items()))
    return [
        name,
        ", ".join(p.get("namespaces", [])),
        ", ".join(p.get("primary", [])),
        ", ".join(p.get("secondary", [])),
        f"{failover.get('policy_type', '')} {params}".strip(),
    ]


def _policies_table(policies: dict[str, Any]) -> None:
    t = Table(title="namespace isolation policies")
    for col in ("policy", "namespaces", "primary", "secondary", "auto failover"):
        t.add_column(col, overflow="fold")
    for name, policy in sorted(policies.items()):
        t.add_row(*_policy_rows(name, policy))
    console.print(t)


@isolation.command("get")
def isolation_get(ctx: typer.Context, cluster: str, name: str) -> None:
    run(ctx, lambda a: a.get_isolation_policy(cluster, name), lambda p: _policies_table({name: p}))


@isolation.command("list")
def isolation_list(ctx: typer.Context, cluster: str) -> None:
    run(ctx, lambda a: a.get_isolation_policies(cluster), _policies_table)


@isolation.command("delete")
def isolation_delete(ctx: typer.Context, cluster: str, name: str) -> None:
    run(ctx, lambda a: a.delete_isolation_policy(cluster, name), done=f"deleted isolation policy {name}")


def _brokers_table(rows: list[dict[str, Any]]) -> None:
    t = Table(title="brokers and their isolation policies")
    for col in ("broker", "policy", "primary", "namespaces"):
        t.add_column(col, overflow="fold")
    for row in rows:
        t.add_row(
            row["brokerName"],
            row.get("policyName", ""),
            str(row.get("isPrimary", False)),
            ", ".join(row["namespaceRegex"]),
        )
    console.print(t)


@isolation.command("brokers")
def isolation_brokers(ctx: typer.Context, cluster: str) -> None:
    """Every active broker with the isolation policies that name it."""
    run(ctx, lambda a: a.get_brokers_with_isolation_policies(cluster), _brokers_table)


@isolation.command("broker")
def isolation_broker(
    ctx: typer.Context, cluster: str, broker: str = typer.Option(..., "--broker", help="host:port")
) -> None:
    """One broker with the isolation policies that name it."""
    run(
        ctx,
        lambda a: a.get_broker_with_isolation_policies(cluster, broker),
        lambda row: _brokers_table([row]),
    )
