"""``brokerlb admin topics`` verbs beyond lookups: pulsar-admin's topic administration.

::

    brokerlb admin topics list public/default [--domain non-persistent]
    brokerlb admin topics list-partitioned-topics public/default
    brokerlb admin topics create persistent://public/default/t
    brokerlb admin topics delete persistent://public/default/t [--force]
    brokerlb admin topics delete-partitioned-topic persistent://public/default/p [--force]
    brokerlb admin topics stats persistent://public/default/t
    brokerlb admin topics partitioned-stats persistent://public/default/p [--per-partition]
    brokerlb admin topics subscriptions persistent://public/default/t
"""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from brokerlb.cli.admin_common import list_table, run
from brokerlb.cli.common import console

__all__ = ["add_topic_verbs"]

_DOMAIN = typer.Option("persistent", "--domain", "-d", help="persistent or non-persistent")


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
            st.add_column(col)
        for name, sub in sorted(subs.items()):
            st.add_row(
                name,
                str(sub.get("type", "")),
                str(len(sub.get("consumers", []))),
                str(sub.get("msgBacklog", 0)),
                str(sub.get("unackedMessages", 0)),
            )
        console.print(st)


def add_topic_verbs(topics: typer.Typer) -> None:
    """Register the verbs on the ``topics`` group."""

    @topics.command("list")
    def topics_list(ctx: typer.Context, namespace: str, domain: str = _DOMAIN) -> None:
        """The namespace's topics (partitions listed one by one)."""
        run(ctx, lambda a: a.get_topics(namespace, domain), lambda n: list_table(namespace, "topic", n))

    @topics.command("list-partitioned-topics")
    def topics_list_partitioned(ctx: typer.Context, namespace: str, domain: str = _DOMAIN) -> None:
        run(
            ctx,
            lambda a: a.get_partitioned_topics(namespace, domain),
            lambda n: list_table(namespace, "partitioned topic", n),
        )

    @topics.command("create")
    def topics_create(ctx: typer.Context, topic: str) -> None:
        """Create a non-partitioned topic."""
        run(ctx, lambda a: a.create_topic(topic), done=f"created {topic}")

    @topics.command("delete")
    def topics_delete(
        ctx: typer.Context,
        topic: str,
        force: bool = typer.Option(False, "--force", "-f", help="disconnect its producers and consumers"),
    ) -> None:
        run(ctx, lambda a: a.delete_topic(topic, force=force), done=f"deleted {topic}")

    @topics.command("delete-partitioned-topic")
    def topics_delete_partitioned(
        ctx: typer.Context, topic: str, force: bool = typer.Option(False, "--force", "-f")
    ) -> None:
        run(ctx, lambda a: a.delete_partitioned_topic(topic, force=force), done=f"deleted {topic}")

    @topics.command("stats")
    def topics_stats(ctx: typer.Context, topic: str) -> None:
        """Pulsar's TopicStats: rates, publishers, subscriptions."""
        run(ctx, lambda a: a.get_topic_stats(topic), lambda s: _stats_table(topic, s))

    @topics.command("partitioned-stats")
    def topics_partitioned_stats(
        ctx: typer.Context,
        topic: str,
        per_partition: bool = typer.Option(False, "--per-partition", help="include each partition's stats"),
    ) -> None:
        run(
            ctx,
            lambda a: a.get_partitioned_stats(topic, per_partition=per_partition),
            lambda s: _stats_table(topic, s),
        )

    @topics.command("subscriptions")
    def topics_subscriptions(ctx: typer.Context, topic: str) -> None:
        run(ctx, lambda a: a.get_subscriptions(topic), lambda n: list_table(topic, "subscription", n))
