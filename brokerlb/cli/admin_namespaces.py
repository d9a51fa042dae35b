"""``brokerlb admin namespaces``: pulsar-admin's namespace and bundle verbs, with its flags.

::

    brokerlb admin namespaces list public
    brokerlb admin namespaces topics public/demo [--mode persistent|non_persistent|all]
    brokerlb admin namespaces create public/demo [--bundles 16] [--clusters standalone]
    brokerlb admin namespaces policies public/demo | bundles public/demo | get-clusters public/demo
    brokerlb admin namespaces delete public/demo [--force]
    brokerlb admin namespaces permissions public/demo
    brokerlb admin namespaces grant-permission public/demo --role app --actions produce,consume
    brokerlb admin namespaces revoke-permission public/demo --role app
    brokerlb admin namespaces unload public/demo [--bundle 0x00000000_0x10000000 [--destinationBroker H:P]]
    brokerlb admin namespaces split-bundle public/demo --bundle 0x00000000_0x10000000 [--unload]
          [--split-algorithm-name topic_count_equally_divide] [--split-boundaries 0x08000000 ...]
    brokerlb admin namespaces split-bundle public/demo --bundle-type LARGEST
    brokerlb admin namespaces get-topic-positions public/demo --bundle 0x00000000_0x10000000 [-tl t1]
    brokerlb admin namespaces set-anti-affinity-group public/demo --group g1
    brokerlb admin namespaces get-anti-affinity-group public/demo | delete-anti-affinity-group public/demo
    brokerlb admin namespaces get-anti-affinity-namespaces --cluster standalone --group g1

brokerlb's own verbs: ``merge-bundles`` (adjacent bundles into one) and ``bundle-story`` (why a
bundle is where it is).
"""

from __future__ import annotations

import json
import time
from typing import Any

import typer
from rich.table import Table

from brokerlb.admin.client import AdminClient
from brokerlb.cli.admin_common import kv_table, list_table, run, split_list
from brokerlb.cli.common import console

__all__ = ["namespaces", "story_row", "story_table"]

namespaces = typer.Typer(no_args_is_help=True, help="Namespaces and bundles.")

_BOUNDARIES = typer.Option(
    [], "--split-boundaries", "-sb", help="positions for specified_positions_divide (repeatable)"
)
_ACTIONS = typer.Option(..., "--actions", help="produce, consume, ... (repeatable or a,b)")
_MERGE_BUNDLES = typer.Option(..., "--bundle", "-b", help="adjacent bundle ranges (2 or more)")
_CLUSTERS = typer.Option([], "--clusters", "-c", help="clusters of the namespace (comma-separated)")
_TOPIC_LIST = typer.Option([], "--topic-list", "-tl", help="topics to place (repeatable; default: all)")
#: pulsar-admin's --mode values -> the topic domains listed
_MODES = {
    "persistent": ("persistent",),
    "non_persistent": ("non-persistent",),
    "non-persistent": ("non-persistent",),
    "all": ("persistent", "non-persistent"),
}


@namespaces.command("list")
def ns_list(ctx: typer.Context, tenant: str) -> None:
    """The tenant's namespaces."""
    run(ctx, lambda a: a.get_namespaces(tenant), lambda names: list_table(tenant, "namespace", names))


def _topics(namespace: str, mode: str) -> Any:
    domains = _MODES.get(mode)
    if domains is None:
        raise typer.BadParameter(f"{mode!r}: expected persistent, non_persistent or all", param_hint="--mode")

    def call(admin: AdminClient) -> list[str]:
        return [topic for domain in domains for topic in admin.get_topics(namespace, domain)]

    return call


@namespaces.command("topics")
def ns_topics(
    ctx: typer.Context,
    namespace: str,
    mode: str = typer.Option("persistent", "--mode", "-m", help="persistent, non_persistent or all"),
) -> None:
    """The namespace's topics (partitions one by one), as pulsar-admin's default mode: persistent."""
    run(ctx, _topics(namespace, mode), lambda names: list_table(namespace, "topic", names))


@namespaces.command("destinations", hidden=True)
def ns_destinations(ctx: typer.Context, namespace: str) -> None:
    """pulsar-admin's hidden, older name of ``topics``."""
    run(ctx, _topics(namespace, "persistent"), lambda names: list_table(namespace, "topic", names))


@namespaces.command("bundles")
def ns_bundles(ctx: typer.Context, namespace: str) -> None:
    """The namespace's bundle boundaries (BundlesData)."""

    def table(data: dict[str, Any]) -> None:
        t = Table(title=f"{namespace}: {data['numBundles']} bundles")
        t.add_column("bundle", overflow="fold")
        b = data["boundaries"]
        for lo, hi in zip(b, b[1:], strict=False):
            t.add_row(f"{lo}_{hi}")
        console.print(t)

    run(ctx, lambda a: a.get_bundles(namespace), table)


@namespaces.command("policies")
def ns_policies(ctx: typer.Context, namespace: str) -> None:
    """The namespace's policies (Pulsar's Policies JSON)."""
    run(ctx, lambda a: a.get_namespace_policies(namespace), lambda p: console.print_json(json.dumps(p)))


@namespaces.command("create")
def ns_create(
    ctx: typer.Context,
    namespace: str,
    bundles: int | None = typer.Option(None, "--bundles", "-b", help="number of bundles"),
    clusters: list[str] = _CLUSTERS,
) -> None:
    """Create a namespace (default bundle count: defaultNumberOfNamespaceBundles)."""
    chosen = split_list(clusters) or None
    run(
        ctx,
        lambda a: a.create_namespace(namespace, num_bundles=bundles, clusters=chosen),
        done=f"created {namespace}",
    )


@namespaces.command("delete")
def ns_delete(
    ctx: typer.Context,
    namespace: str,
    force: bool = typer.Option(
        False, "--force", "-f", help="delete its topics too (forceDeleteNamespaceAllowed)"
    ),
) -> None:
    """Delete a namespace (it must have no topics, unless --force)."""
    run(ctx, lambda a: a.delete_namespace(namespace, force=force), done=f"deleted {namespace}")


@namespaces.command("permissions")
def ns_permissions(ctx: typer.Context, namespace: str) -> None:
    """Roles and the actions granted to them on the namespace."""
    run(
        ctx,
        lambda a: a.get_permissions(namespace),
        lambda p: kv_table(f"{namespace} permissions", {r: ", ".join(a) for r, a in p.items()}),
    )


@namespaces.command("grant-permission")
def ns_grant(
    ctx: typer.Context,
    namespace: str,
    role: str = typer.Option(..., "--role", help="the role (a token's subject)"),
    actions: list[str] = _ACTIONS,
) -> None:
    """Grant actions on the namespace to a role."""
    chosen = split_list(actions)
    run(ctx, lambda a: a.grant_permission(namespace, role, chosen), done=f"granted {chosen} to {role}")


@namespaces.command("revoke-permission")
def ns_revoke(
    ctx: typer.Context,
    namespace: str,
    role: str = typer.Option(..., "--role", help="the role"),
) -> None:
    """Revoke a role's permissions on the namespace."""
    run(ctx, lambda a: a.revoke_permission(namespace, role), done=f"revoked {role} on {namespace}")


@namespaces.command("get-clusters")
def ns_get_clusters(ctx: typer.Context, namespace: str) -> None:
    """The namespace's clusters (its policies' replication_clusters)."""
    run(
        ctx,
        lambda a: list(a.get_namespace_policies(namespace).get("replication_clusters", [])),
        lambda names: list_table(namespace, "cluster", names),
    )


@namespaces.command("get-anti-affinity-group")
def ns_get_group(ctx: typer.Context, namespace: str) -> None:
    """The namespace's anti-affinity group."""
    run(ctx, lambda a: a.get_anti_affinity_group(namespace), lambda g: console.print(g or "(none)"))


@namespaces.command("set-anti-affinity-group")
def ns_set_group(
    ctx: typer.Context,
    namespace: str,
    group: str = typer.Option(..., "--group", "-g", help="anti-affinity group name"),
) -> None:
    """Put the namespace in an anti-affinity group (its bundles spread over brokers and domains)."""
    run(ctx, lambda a: a.set_anti_affinity_group(namespace, group), done=f"{namespace}: group {group}")


@namespaces.command("get-anti-affinity-namespaces")
def ns_group_members(
    ctx: typer.Context,
    cluster: str = typer.Option(..., "--cluster", "-c", help="cluster name"),
    group: str = typer.Option(..., "--group", "-g", help="anti-affinity group name"),
    tenant: str | None = typer.Option(None, "--tenant", "-p", help="as pulsar-admin: for authorization only"),
) -> None:
    """The namespaces of an anti-affinity group."""
    run(
        ctx,
        lambda a: a.get_anti_affinity_namespaces(cluster, group),
        lambda names: list_table(f"anti-affinity group {group}", "namespace", names),
    )


@namespaces.command("delete-anti-affinity-group")
def ns_delete_group(ctx: typer.Context, namespace: str) -> None:
    """Take the namespace out of its anti-affinity group."""
    run(ctx, lambda a: a.delete_anti_affinity_group(namespace), done=f"{namespace}: group removed")


@namespaces.command("unload")
def ns_unload(
    ctx: typer.Context,
    namespace: str,
    bundle: str | None = typer.Option(None, "--bundle", "-b", help="only this bundle range"),
    destination: str | None = typer.Option(
        None,
        "--destinationBroker",
        "--destination-broker",
        "-d",
        help="transfer the bundle to this broker (host:port)",
    ),
) -> None:
    """Unload the namespace, or one bundle (optionally to a destination broker)."""
    if bundle is None and destination is not None:
        raise typer.BadParameter("--destinationBroker cannot be set when --bundle is not specified.")
    if bundle is None:
        run(ctx, lambda a: a.unload_namespace(namespace), done=f"unloaded {namespace}")
    else:
        run(
            ctx,
            lambda a: a.unload_bundle(namespace, bundle, destination_broker=destination),
            done=f"unloaded {namespace}/{bundle}" + (f" to {destination}" if destination else ""),
        )


@namespaces.command("split-bundle")
def ns_split(
    ctx: typer.Context,
    namespace: str,
    bundle: str | None = typer.Option(None, "--bundle", "-b", help="bundle range"),
    bundle_type: str | None = typer.Option(None, "--bundle-type", "-bt", help="LARGEST or HOT"),
    unload: bool = typer.Option(False, "--unload", "-u", help="unload the new bundles"),
    algorithm: str | None = typer.Option(None, "--split-algorithm-name", "-san"),
    boundaries: list[str] = _BOUNDARIES,
) -> None:
    """Split a bundle (range, or --bundle-type LARGEST|HOT)."""
    if not bundle and not bundle_type:
        raise typer.BadParameter("Must pass one of the params: --bundle / --bundle-type")
    if bundle and bundle_type:
        raise typer.BadParameter("--bundle and --bundle-type are mutually exclusive")
    target = bundle or bundle_type or ""
    run(
        ctx,
        lambda a: a.split_bundle(
            namespace, target, unload=unload, algorithm=algorithm, boundaries=_positions(boundaries)
        ),
        done=f"split {namespace}/{target}",
    )


def _positions(values: list[str]) -> list[int | str] | None:
    """Split positions as pulsar-admin takes them (decimal, as its ``List<Long>``) or in hex."""
    chosen = split_list(values)
    return [int(v) if v.isdigit() else v for v in chosen] or None


@namespaces.command("get-topic-positions")
def ns_topic_positions(
    ctx: typer.Context,
    namespace: str,
    bundle: str = typer.Option(..., "--bundle", "-b", help="bundle range"),
    topics: list[str] = _TOPIC_LIST,
) -> None:
    """Each topic's position on the hash ring, within one bundle (TopicHashPositions)."""

    def table(data: dict[str, Any]) -> None:
        positions = data.get("topicHashPositions") or {}
        kv_table(
            f"{data.get('namespace')}/{data.get('bundle')}", {t: f"0x{p:08x}" for t, p in positions.items()}
        )

    run(ctx, lambda a: a.topic_hash_positions(namespace, bundle, split_list(topics)), table)


@namespaces.command("merge-bundles")
def ns_merge(ctx: typer.Context, namespace: str, bundles: list[str] = _MERGE_BUNDLES) -> None:
    """brokerlb: merge adjacent bundles into one."""
    run(ctx, lambda a: a.merge_bundles(namespace, bundles), lambda r: kv_table("merged", r))


def story_row(entry: dict[str, Any]) -> tuple[str, str, str, str, str, str]:
    """One line of a bundle's story: ``(at, recorded by, what, by, reason, version)``.

    A story mixes the ownership machines' transitions (``kind: transition``: ``from`` -> ``to``)
    with the leader's decisions (``kind: decision``: transfer, unload, split or merge, with a
    reason and whether it was carried out); an entry of a kind this client does not know is
    shown by its kind.
    """
    at_ms = int(entry.get("atMs", 0))
    at = time.strftime("%H:%M:%S", time.gmtime(at_ms / 1000)) + f".{at_ms % 1000:03d}"
    brokers = " -> ".join(str(entry[k]) for k in ("source", "destination") if entry.get(k))
    kind = entry.get("kind", "transition")
    if kind == "transition":
        what = f"{entry.get('from')} -> {entry.get('to')}" + (f" ({brokers})" if brokers else "")
        if entry.get("forced"):
            what += " FORCED"
    elif kind == "decision":
        what = f"leader decided {entry.get('decision')}" + (f" ({brokers})" if brokers else "")
        if not entry.get("executed", True):
            what += " NOT CARRIED OUT"
    else:
        what = str(kind)
    reason = str(entry.get("reason", ""))
    if entry.get("detail"):
        reason += f": {entry['detail']}"
    return (
        at,
        str(entry.get("recordedBy", "")),
        what,
        str(entry.get("by", "")),
        reason,
        f"v{entry['version']}" if entry.get("version") else "",
    )


def story_table(data: dict[str, Any]) -> None:
    t = Table(title=f"{data['bundle']}: owned by {data.get('owner') or 'nobody'}")
    for column in ("at", "recorded by", "what", "by", "reason", "version"):
        t.add_column(column, overflow="fold")
    for entry in data.get("transitions", []):
        t.add_row(*story_row(entry))
    console.print(t)
    if data.get("unreachable"):
        console.print(f"not reached: {', '.join(data['unreachable'])}", highlight=False)


@namespaces.command("bundle-story")
def ns_bundle_story(
    ctx: typer.Context,
    namespace: str,
    bundle: str = typer.Option(..., "--bundle", "-b", help="bundle range, e.g. 0x00000000_0x40000000"),
) -> None:
    """brokerlb: why a bundle is where it is -- its transitions on every broker, the leader's decisions."""
    run(ctx, lambda a: a.bundle_story(namespace, bundle), story_table)
