"""``brokerlb admin topics``: pulsar-admin's topic verbs, with its flags.

::

    brokerlb admin topics list public/default [--topic-domain non_persistent] [--bundle RANGE]
    brokerlb admin topics list-partitioned-topics public/default
    brokerlb admin topics lookup persistent://public/default/t
    brokerlb admin topics partitioned-lookup persistent://public/default/p
    brokerlb admin topics bundle-range persistent://public/default/t
    brokerlb admin topics create persistent://public/default/t
    brokerlb admin topics create-partitioned-topic persistent://public/default/p --partitions 4
    brokerlb admin topics get-partitioned-topic-metadata persistent://public/default/p
    brokerlb admin topics delete persistent://public/default/t [--force]
    brokerlb admin topics delete-partitioned-topic persistent://public/default/p [--force]
    brokerlb admin topics stats persistent://public/default/t
    brokerlb admin topics partitioned-stats persistent://public/default/p [--per-partition]
    brokerlb admin topics stats-internal persistent://public/default/t
    brokerlb admin topics subscriptions persistent://public/default/t
"""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from brokerlb.admin.client import AdminClient
from brokerlb.cli.admin_common import kv_table, list_table, run
from brokerlb.cli.common import console
from brokerlb.ring import NamespaceBundles

__all__ = ["topics"]

topics = typer.Typer(no_args_is_help=True, help="Topics: lookup, create, delete, list, stats, subscriptions.")

_DOMAIN = typer.Option(
    None,
    "--topic-domain",
    "-td",
    "--domain",
    "-d",
    help="persistent (default) or non_persistent",
)
_METADATA = typer.Option([], "--metadata", "-m", help="key=value properties of the topic (repeatable)")


def _domain(value: str | None) -> str:
    """pulsar-admin's ``--topic-domain`` (``persistent``, ``non_persistent``) as a URL domain."""
    chosen = (value or "persistent").replace("_", "-")
    if chosen not in ("persistent", "non-persistent"):
        raise typer.BadParameter(
            f"{value!r}: expected persistent or non_persistent", param_hint="--topic-domain"
        )
    return chosen


def _properties(values: list[str]) -> dict[str, str] | None:
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected key=value, got {item!r}", param_hint="--metadata")
        out[key] = value
    return out or None


def _stats_table(title: str, s: dict[str, Any]) -> None:
    t = Table(title=title)
    t.add_column("metric")
    t.add_column("value", overflow="fold")
    for key in ("msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "averageMsgSize"):
        t.add_row(key, f"{s.get(key, 0.0):.2f}")
    t.add_row("publishers", str(len(s.get("publishers", []))))
    if "metadata" in s:
        t.add_row("partitions", str(s["metadata"].get("partitions")))
    if "ownerBroker" in s:
        t.add_row("ownerBroker", s["ownerBroker"])
    console.print(t)
    subs = s.get("subscriptions") or {}
    if subs:
        st = Table(title="subscriptions")
        for col in ("subscription", "type", "consumers", "msgBacklog", "unackedMessages"):
            st.add_column(col, overflow="fold")
        for name, sub in sorted(subs.items()):
            st.add_row(
                name,
                str(sub.get("type", "")),
                str(len(sub.get("consumers", []))),
                str(sub.get("msgBacklog", 0)),
                str(sub.get("unackedMessages", 0)),
            )
        console.print(st)


def _lookup_table(rows: dict[str, str]) -> None:
    t = Table()
    t.add_column("topic", overflow="fold")
    t.add_column("broker", overflow="fold")
    for topic, url in rows.items():
        t.add_row(topic, url)
    console.print(t)


def _broker_url(data: dict[str, Any]) -> str:
    """What pulsar-admin's lookup prints: the ``pulsar://`` URL (``pulsar+ssl://`` when that is all there is)."""
    return str(data.get("brokerUrl") or data.get("brokerUrlTls") or "")


@topics.command("list")
def topics_list(
    ctx: typer.Context,
    namespace: str,
    domain: str | None = _DOMAIN,
    bundle: str | None = typer.Option(None, "--bundle", "-b", help="only the topics of this bundle range"),
) -> None:
    """The namespace's topics (partitions listed one by one)."""

    def call(admin: AdminClient) -> list[str]:
        names = list(admin.get_topics(namespace, _domain(domain)))
        if bundle is None:
            return names
        ring = NamespaceBundles.from_json(namespace, admin.get_bundles(namespace))
        wanted = ring.get_bundle(bundle)  # a range that is not one of the namespace's bundles: an error
        return [n for n in names if ring.find_bundle(n) == wanted]

    run(ctx, call, lambda n: list_table(namespace, "topic", n))


@topics.command("list-partitioned-topics")
def topics_list_partitioned(ctx: typer.Context, namespace: str, domain: str | None = _DOMAIN) -> None:
    """The namespace's partitioned topics."""
    run(
        ctx,
        lambda a: a.get_partitioned_topics(namespace, _domain(domain)),
        lambda n: list_table(namespace, "partitioned topic", n),
    )


@topics.command("lookup")
def topics_lookup(ctx: typer.Context, topic: str) -> None:
    """The broker serving the topic (its pulsar:// URL)."""
    run(ctx, lambda a: _broker_url(a.lookup_topic(topic)), lambda url: _lookup_table({topic: url}))


@topics.command("partitioned-lookup")
def topics_partitioned_lookup(ctx: typer.Context, topic: str) -> None:
    """The broker serving each partition of a partitioned topic."""
    from brokerlb.naming import TopicName

    def call(a: AdminClient) -> dict[str, str]:
        name = TopicName.parse(topic)
        partitions = a.get_partitioned_topic_metadata(name)["partitions"]
        names = [name.partition(i) for i in range(partitions)] if partitions else [name]
        return {str(n): _broker_url(a.lookup_topic(n)) for n in names}

    run(ctx, call, _lookup_table)


@topics.command("bundle-range")
def topics_bundle_range(ctx: typer.Context, topic: str) -> None:
    """The bundle range the topic belongs to."""
    run(ctx, lambda a: a.topic_bundle_range(topic), lambda r: console.print(r, highlight=False))


@topics.command("create")
def topics_create(ctx: typer.Context, topic: str, metadata: list[str] = _METADATA) -> None:
    """Create a non-partitioned topic."""
    properties = _properties(metadata)
    run(ctx, lambda a: a.create_topic(topic, properties), done=f"created {topic}")


@topics.command("create-partitioned-topic")
def topics_create_partitioned(
    ctx: typer.Context,
    topic: str,
    partitions: int = typer.Option(..., "--partitions", "-p", help="number of partitions"),
) -> None:
    """Create a partitioned topic."""
    run(ctx, lambda a: a.create_partitioned_topic(topic, partitions), done=f"created {topic} ({partitions})")


@topics.command("get-partitioned-topic-metadata")
def topics_partitioned_metadata(ctx: typer.Context, topic: str) -> None:
    """A partitioned topic's metadata (its number of partitions; 0 for a non-partitioned topic)."""
    run(ctx, lambda a: a.get_partitioned_topic_metadata(topic), lambda d: kv_table(topic, d))


@topics.command("delete")
def topics_delete(
    ctx: typer.Context,
    topic: str,
    force: bool = typer.Option(False, "--force", "-f", help="disconnect its producers and consumers"),
) -> None:
    """Delete a topic."""
    run(ctx, lambda a: a.delete_topic(topic, force=force), done=f"deleted {topic}")


@topics.command("delete-partitioned-topic")
def topics_delete_partitioned(
    ctx: typer.Context, topic: str, force: bool = typer.Option(False, "--force", "-f")
) -> None:
    """Delete a partitioned topic and its partitions."""
    run(ctx, lambda a: a.delete_partitioned_topic(topic, force=force), done=f"deleted {topic}")


@topics.command("stats")
def topics_stats(ctx: typer.Context, topic: str) -> None:
    """Pulsar's TopicStats: rates, publishers, subscriptions."""
    run(ctx, lambda a: a.get_topic_stats(topic), lambda s: _stats_table(topic, s))


@topics.command("stats-internal")
def topics_stats_internal(ctx: typer.Context, topic: str) -> None:
    """Pulsar's PersistentTopicInternalStats: the managed ledger's ledgers, entries, sizes and cursors
    (mark-delete position), as JSON."""
    run(ctx, lambda a: a.get_internal_stats(topic), lambda s: console.print_json(data=s))


topics.command("internal-stats", hidden=True)(topics_stats_internal)


@topics.command("partitioned-stats")
def topics_partitioned_stats(
    ctx: typer.Context,
    topic: str,
    per_partition: bool = typer.Option(False, "--per-partition", help="include each partition's stats"),
) -> None:
    """A partitioned topic's stats, summed over its partitions."""
    run(
        ctx,
        lambda a: a.get_partitioned_stats(topic, per_partition=per_partition),
        lambda s: _stats_table(topic, s),
    )


@topics.command("subscriptions")
def topics_subscriptions(ctx: typer.Context, topic: str) -> None:
    """The topic's subscriptions."""
    run(ctx, lambda a: a.get_subscriptions(topic), lambda n: list_table(topic, "subscription", n))
