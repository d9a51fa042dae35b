"""``brokerlb admin``: a pulsar-admin-style client of any broker (``--url``, redirects followed).

::

    brokerlb admin namespaces create public/demo --bundles 16
    brokerlb admin namespaces bundles public/demo
    brokerlb admin namespaces unload public/demo [--bundle 0x00000000_0x10000000 [--destination-broker H:P]]
    brokerlb admin namespaces split-bundle public/demo --bundle 0x00000000_0x10000000 [--unload]
          [--split-algorithm-name topic_count_equally_divide] [--split-boundaries 0x08000000 ...]
    brokerlb admin namespaces split-bundle public/demo --bundle-type LARGEST
    brokerlb admin namespaces merge-bundles public/demo -b 0x00000000_0x10000000 -b 0x10000000_0x20000000
    brokerlb admin namespaces set-anti-affinity-group public/demo --group g1
    brokerlb admin topics lookup persistent://public/demo/t1
    brokerlb admin topics partitioned-lookup persistent://public/demo/p
    brokerlb admin topics bundle-range persistent://public/demo/t1
    brokerlb admin topics create-partitioned-topic persistent://public/demo/p --partitions 4
    brokerlb admin brokers list | leader | owned-namespaces [BROKER]
    brokerlb admin broker-stats load-report | topics
    brokerlb admin namespaces list public | policies public/demo | delete public/demo [--force]
    brokerlb admin namespaces grant-permission public/demo --role app --actions produce,consume
    brokerlb admin namespaces permissions public/demo | revoke-permission public/demo --role app

More verbs: ``tenants`` (:mod:`.admin_tenants`), ``clusters`` and ``ns-isolation-policy``
(:mod:`.admin_clusters`), topic administration (:mod:`.admin_topics`), broker version and
dynamic configuration (:mod:`.admin_brokers`).

Tables by default, ``--json`` for machines (before the area: ``brokerlb admin --json ...``).
"""

from __future__ import annotations

import time
from typing import Any

import typer
from rich.table import Table

from brokerlb.admin.client import DEFAULT_URL, AdminClient
from brokerlb.cli.admin_brokers import add_broker_verbs
from brokerlb.cli.admin_clusters import clusters, isolation
from brokerlb.cli.admin_common import kv_table, list_table, run, split_list
from brokerlb.cli.admin_tenants import tenants
from brokerlb.cli.admin_topics import add_topic_verbs
from brokerlb.cli.common import console

app = typer.Typer(no_args_is_help=True, help="pulsar-admin-style client of a broker's REST API.")
namespaces = typer.Typer(no_args_is_help=True, help="Namespaces and bundles.")
topics = typer.Typer(no_args_is_help=True, help="Topics: lookup, create, delete, list, stats, subscriptions.")
brokers = typer.Typer(
    no_args_is_help=True, help="Active brokers, the leader, owned bundles, version, dynamic configuration."
)
broker_stats = typer.Typer(no_args_is_help=True, help="A broker's load report and topic stats.")
app.add_typer(namespaces, name="namespaces")
app.add_typer(topics, name="topics")
app.add_typer(brokers, name="brokers")
app.add_typer(broker_stats, name="broker-stats")
app.add_typer(tenants, name="tenants")
app.add_typer(clusters, name="clusters")
app.add_typer(isolation, name="ns-isolation-policy")
add_topic_verbs(topics)
add_broker_verbs(brokers)


_BOUNDARIES = typer.Option(
    [], "--split-boundaries", "-sb", help="positions for specified_positions_divide (repeatable)"
)
_ACTIONS = typer.Option(..., "--actions", help="produce, consume, ... (repeatable or a,b)")
_MERGE_BUNDLES = typer.Option(..., "--bundle", "-b", help="adjacent bundle ranges (2 or more)")


@app.callback()
def _options(
    ctx: typer.Context,
    url: str = typer.Option(DEFAULT_URL, "--url", "-u", envvar="BROKERLB_URL", help="any broker's web URL"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable JSON output"),
    auth_plugin: str | None = typer.Option(
        None,
        "--auth-plugin",
        envvar="BROKERLB_AUTH_PLUGIN",
        help="as pulsar-admin: org.apache.pulsar.client.impl.auth.AuthenticationToken",
    ),
    auth_params: str | None = typer.Option(
        None,
        "--auth-params",
        envvar="BROKERLB_AUTH_PARAMS",
        help='as pulsar-admin: token:<token>, file:///path/to/token or {"token": ...}',
    ),
    tls_trust_certs_file_path: str | None = typer.Option(
        None, "--tls-trust-cert-path", help="CA certificates (PEM) for https:// brokers"
    ),
) -> None:
    ctx.obj = {
        "url": url,
        "json": as_json,
        "auth": (auth_plugin, auth_params),
        "verify": tls_trust_certs_file_path or True,
    }


# --------------------------------------------------------------------------- namespaces


@namespaces.command("create")
def ns_create(
    ctx: typer.Context,
    namespace: str,
    bundles: int | None = typer.Option(None, "--bundles", "-b", help="number of bundles"),
) -> None:
    """Create a namespace (default bundle count: defaultNumberOfNamespaceBundles)."""
    run(ctx, lambda a: a.create_namespace(namespace, num_bundles=bundles), done=f"created {namespace}")


@namespaces.command("list")
def ns_list(ctx: typer.Context, tenant: str) -> None:
    """The tenant's namespaces."""
    run(ctx, lambda a: a.get_namespaces(tenant), lambda names: list_table(tenant, "namespace", names))


@namespaces.command("policies")
def ns_policies(ctx: typer.Context, namespace: str) -> None:
    """The namespace's policies (Pulsar's Policies JSON)."""
    import json

    run(ctx, lambda a: a.get_namespace_policies(namespace), lambda p: console.print_json(json.dumps(p)))


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
    """Grant actions on the namespace to a role (as pulsar-admin)."""
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


def story_row(entry: dict[str, Any]) -> tuple[str, str, str, str, str, str]:
    """One line of a bundle's story: ``(at, recorded by, what, by, reason, stimulus)``.

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
        str(entry.get("stimulusId", "")),
    )


def story_table(data: dict[str, Any]) -> None:
    t = Table(title=f"{data['bundle']}: owned by {data.get('owner') or 'nobody'}")
    for column in ("at", "recorded by", "what", "by", "reason", "stimulus"):
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
    """Why a bundle is where it is: its ownership transitions on every broker (brokerlb extension)."""
    run(ctx, lambda a: a.bundle_story(namespace, bundle), story_table)


@namespaces.command("unload")
def ns_unload(
    ctx: typer.Context,
    namespace: str,
    bundle: str | None = typer.Option(None, "--bundle", "-b", help="only this bundle range"),
    destination: str | None = typer.Option(
        None, "--destination-broker", "-d", help="transfer the bundle to this broker (host:port)"
    ),
) -> None:
    """Unload the namespace, or one bundle (optionally to a destination broker)."""
    if bundle is None and destination is not None:
        raise typer.BadParameter("--destination-broker needs --bundle")
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
    target = bundle or bundle_type
    if not target or (bundle and bundle_type):
        raise typer.BadParameter("give exactly one of --bundle and --bundle-type")
    run(
        ctx,
        lambda a: a.split_bundle(
            namespace, target, unload=unload, algorithm=algorithm, boundaries=boundaries or None
        ),
        done=f"split {namespace}/{target}",
    )


@namespaces.command("merge-bundles")
def ns_merge(ctx: typer.Context, namespace: str, bundles: list[str] = _MERGE_BUNDLES) -> None:
    """brokerlb extension: merge adjacent bundles into one."""
    run(ctx, lambda a: a.merge_bundles(namespace, bundles), lambda r: kv_table("merged", r))


@namespaces.command("set-anti-affinity-group")
def ns_set_group(
    ctx: typer.Context,
    namespace: str,
    group: str = typer.Option(..., "--group", "-g", help="anti-affinity group name"),
) -> None:
    run(ctx, lambda a: a.set_anti_affinity_group(namespace, group), done=f"{namespace}: group {group}")


@namespaces.command("get-anti-affinity-group")
def ns_get_group(ctx: typer.Context, namespace: str) -> None:
    run(ctx, lambda a: a.get_anti_affinity_group(namespace), lambda g: console.print(g or "(none)"))


@namespaces.command("delete-anti-affinity-group")
def ns_delete_group(ctx: typer.Context, namespace: str) -> None:
    run(ctx, lambda a: a.delete_anti_affinity_group(namespace), done=f"{namespace}: group removed")


# --------------------------------------------------------------------------- topics


def _lookup_table(rows: list[tuple[str, dict[str, Any]]]) -> None:
    t = Table()
    for col in ("topic", "brokerUrl", "httpUrl"):
        t.add_column(col, overflow="fold")
    for topic, data in rows:
        t.add_row(topic, data.get("brokerUrl", ""), data.get("httpUrl", ""))
    console.print(t)


@topics.command("lookup")
def topics_lookup(ctx: typer.Context, topic: str) -> None:
    """The broker serving the topic."""
    run(ctx, lambda a: a.lookup_topic(topic), lambda d: _lookup_table([(topic, d)]))


@topics.command("partitioned-lookup")
def topics_partitioned_lookup(ctx: typer.Context, topic: str) -> None:
    """The broker serving each partition of a partitioned topic."""
    from brokerlb.naming import TopicName

    def call(a: AdminClient) -> dict[str, Any]:
        name = TopicName.parse(topic)
        partitions = a.get_partitioned_topic_metadata(name)["partitions"]
        names = [name.partition(i) for i in range(partitions)] if partitions else [name]
        return {str(n): a.lookup_topic(n) for n in names}

    run(ctx, call, lambda d: _lookup_table(list(d.items())))


@topics.command("bundle-range")
def topics_bundle_range(ctx: typer.Context, topic: str) -> None:
    """The bundle range the topic belongs to."""
    run(ctx, lambda a: a.topic_bundle_range(topic), lambda r: console.print(r, highlight=False))


@topics.command("create-partitioned-topic")
def topics_create_partitioned(
    ctx: typer.Context, topic: str, partitions: int = typer.Option(..., "--partitions", "-p")
) -> None:
    run(ctx, lambda a: a.create_partitioned_topic(topic, partitions), done=f"created {topic} ({partitions})")


# --------------------------------------------------------------------------- brokers


@brokers.command("list")
def brokers_list(ctx: typer.Context, cluster: str | None = typer.Argument(None)) -> None:
    """Active brokers."""

    def table(ids: list[str]) -> None:
        t = Table(title="active brokers")
        t.add_column("broker")
        for b in ids:
            t.add_row(b)
        console.print(t)

    run(ctx, lambda a: a.get_active_brokers(cluster), table)


@brokers.command("leader")
def brokers_leader(ctx: typer.Context) -> None:
    """The leader broker."""
    run(ctx, lambda a: a.get_leader_broker(), lambda d: kv_table("leader", d))


@brokers.command("owned-namespaces")
def brokers_owned(
    ctx: typer.Context,
    broker: str | None = typer.Argument(None, help="broker id (default: --url's)"),
    cluster: str | None = typer.Option(None, "--cluster", "-c"),
) -> None:
    """Bundles a broker owns, with their isolation status."""

    def call(a: AdminClient) -> Any:
        target = broker or a.url.split("://", 1)[-1]
        name = cluster or a.get_clusters()[0]
        return a.get_owned_namespaces(name, target)

    def table(data: dict[str, Any]) -> None:
        t = Table()
        for col in ("bundle", "assignment", "controlled", "active"):
            t.add_column(col, overflow="fold")
        for bundle, s in sorted(data.items()):
            t.add_row(bundle, s["broker_assignment"], str(s["is_controlled"]), str(s["is_active"]))
        console.print(t)

    run(ctx, call, table)


# --------------------------------------------------------------------------- broker-stats


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
def stats_topics(ctx: typer.Context) -> None:
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
