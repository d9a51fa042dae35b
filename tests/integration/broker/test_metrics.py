"""``/metrics`` on every broker, read with Prometheus' own text parser, checked against the load reports,
against lookups the test made, and (in-process) against the leader's decisions the test caused.
"""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from brokerlb.admin import AsyncAdminClient
from brokerlb.errors import RemoteBrokerError
from brokerlb.loadbalance.balance_score import BalanceScore
from brokerlb.ring import NamespaceBundles
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.waiting import eventually

from .helpers import (
    FAST_SHEDDING,
    carried_out_moves,
    lookup_many,
    new_namespace,
    overload_one_broker,
    topics_of,
)

pytestmark = pytest.mark.asyncio(loop_scope="package")

#: The load-balancer metric families the broker must export (the parser strips a counter's ``_total``).
REQUIRED = {
    "pulsar_lb_cpu_usage",
    "pulsar_lb_memory_usage",
    "pulsar_lb_directMemory_usage",
    "pulsar_lb_bandwidth_in_usage",
    "pulsar_lb_bandwidth_out_usage",
    "pulsar_lb_unload_broker",
    "pulsar_lb_unload_bundle",
    "pulsar_lb_bundles_split",
    "pulsar_lb_unload_broker_breakdown",
    "pulsar_lb_bundles_split_breakdown",
    "pulsar_lb_assign_broker_breakdown",
    "pulsar_lb_resource_usage",
    "pulsar_broker_lookup",
    "pulsar_broker_lookup_redirects",
    "pulsar_broker_lookup_failures",
    "pulsar_broker_load_manager_bundle_assigment",
    "pulsar_rate_in",
    "pulsar_rate_out",
    "pulsar_throughput_in",
    "pulsar_throughput_out",
    "pulsar_producers_count",
    "pulsar_subscriptions_count",
    "pulsar_msg_backlog",
    "brokerlb_balancedness",
    "brokerlb_busiest_broker_distance_from_lower_bound",
    "brokerlb_moves",
    "brokerlb_leader_cycles",
}
BUNDLE_SERIES = {
    "pulsar_bundle_msg_rate_in",
    "pulsar_bundle_msg_rate_out",
    "pulsar_bundle_msg_throughput_in",
    "pulsar_bundle_msg_throughput_out",
    "pulsar_bundle_topics_count",
    "pulsar_bundle_producer_count",
    "pulsar_bundle_consumer_count",
}


async def scrape(url: str, path: str = "/metrics") -> dict[str, list]:
    """Family name -> its samples, parsed by prometheus_client's parser."""
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.get(url + path)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {f.name: f.samples for f in text_string_to_metric_families(response.text)}


def value(samples: list, name: str | None = None, **labels: str) -> float:
    found = [
        s.value for s in samples if (name is None or s.name == name) and labels.items() <= s.labels.items()
    ]
    assert len(found) == 1, f"{name} {labels}: {found}"
    return float(found[0])


async def test_every_series_on_every_broker_agrees_with_its_load_report(cluster) -> None:
    for url, broker in zip(cluster.urls, cluster.broker_ids, strict=True):
        metrics = await scrape(url, "/metrics/")
        assert REQUIRED <= set(metrics), sorted(REQUIRED - set(metrics))
        assert not BUNDLE_SERIES & set(metrics), "bundle series only with exposeBundlesMetricsInPrometheus"
        async with AsyncAdminClient(url) as admin:
            report = await admin.get_load_report()
        for family, key in (
            ("pulsar_lb_cpu_usage", "cpu"),
            ("pulsar_lb_memory_usage", "memory"),
            ("pulsar_lb_bandwidth_in_usage", "bandwidthIn"),
            ("pulsar_lb_bandwidth_out_usage", "bandwidthOut"),
        ):
            usage = report[key]
            percent = 100.0 * usage["usage"] / usage["limit"] if usage["limit"] > 0 else 0.0
            got = value(metrics[family], cluster="e2e", broker=broker, metric="loadBalancing")
            assert got == pytest.approx(percent, abs=1.0), family
        assert value(metrics["pulsar_lb_resource_usage"], feature="max") == pytest.approx(
            report["maxResourceUsage"], abs=0.01
        )
    loads = {}
    for url, broker in zip(cluster.urls, cluster.broker_ids, strict=True):
        async with AsyncAdminClient(url) as admin:
            loads[broker] = (await admin.get_load_report())["maxResourceUsage"] * 100
    metrics = await scrape(cluster.urls[0])
    assert value(metrics["brokerlb_balancedness"]) == pytest.approx(
        BalanceScore.of(loads).balancedness, abs=2.0
    )
    assert 0 <= value(metrics["brokerlb_balancedness"]) <= 100


async def test_lookups_are_counted_as_answers_redirects_and_failures(cluster) -> None:
    ns = new_namespace("mlookup")
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=4)
    url, broker = cluster.urls[1], cluster.broker_ids[1]
    before = await scrape(url)
    answers = await lookup_many(url, topics_of(ns, 30), follow_redirects=False)
    codes = [r.status_code for r in answers.values()]
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        missing = await client.get("/lookup/v2/topic/persistent/public/no-such-ns/t")
    assert missing.status_code == 404
    after = await scrape(url)

    def delta(family: str, name: str) -> float:
        return value(after[family], name, broker=broker) - value(before[family], name, broker=broker)

    assert delta("pulsar_broker_lookup_redirects", "pulsar_broker_lookup_redirects_total") == codes.count(307)
    assert delta("pulsar_broker_lookup_answers", "pulsar_broker_lookup_answers_total") == codes.count(200)
    assert delta("pulsar_broker_lookup_failures", "pulsar_broker_lookup_failures_total") == 1
    assert delta("pulsar_broker_lookup", "pulsar_broker_lookup_count") == 31
    quantiles = {s.labels["quantile"] for s in after["pulsar_broker_lookup"] if "quantile" in s.labels}
    assert quantiles == {"0.5", "0.99", "0.999", "1.0"}


async def test_placements_are_counted_on_the_broker_that_decides(cluster) -> None:
    ns = new_namespace("massign")
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=4)
        leader = (await admin.get_leader_broker())["brokerId"]
    leader_url = cluster.urls[cluster.broker_ids.index(leader)]
    name = "pulsar_lb_assign_broker_breakdown_total"
    timed = "pulsar_broker_load_manager_bundle_assigment_count"
    before = await scrape(leader_url)
    answers = await lookup_many(cluster.urls[0], topics_of(ns, 40))
    assert all(r.status_code == 200 for r in answers.values())
    after = await scrape(leader_url)
    placed = value(after["pulsar_lb_assign_broker_breakdown"], name, result="Success") - value(
        before["pulsar_lb_assign_broker_breakdown"], name, result="Success"
    )
    # every bundle placed at least once (a lookup arriving before the chosen broker took the bundle places it
    # again: preallocated, same broker); every placement timed
    assert placed >= 4
    assert (
        value(after["pulsar_broker_load_manager_bundle_assigment"], timed)
        - value(before["pulsar_broker_load_manager_bundle_assigment"], timed)
        == placed
    )


async def test_bundle_series_follow_the_dynamic_flag_and_topic_series_the_topics(cluster) -> None:
    ns = new_namespace("mbundle")
    topic = f"persistent://{ns}/metered"
    async with AsyncAdminClient(cluster.urls[2]) as admin:
        await admin.create_namespace(ns, num_bundles=2)
        await admin.create_topic(topic)
        owner = (await admin.lookup_topic(topic))["httpUrl"]
        await admin.update_dynamic_config("exposeBundlesMetricsInPrometheus", "true")
        try:
            for url in cluster.urls:

                async def exposed(url: str = url) -> bool:
                    return BUNDLE_SERIES <= set(await scrape(url))

                await eventually(exposed, timeout=20, message=f"bundle series on {url}")
            metrics = await scrape(owner)
            bundle = (await admin.topic_bundle_range(topic)).strip()
            assert value(metrics["pulsar_bundle_topics_count"], bundle=f"{ns}/{bundle}") == 1.0
            assert value(metrics["pulsar_rate_in"], namespace=ns, topic=topic) == 0.0
        finally:
            await admin.delete_dynamic_config("exposeBundlesMetricsInPrometheus")
            await admin.delete_topic(topic)


async def test_an_unload_increments_the_leaders_counters_with_its_labels() -> None:
    cluster = await InProcessCluster(3, FAST_SHEDDING).start()
    clients = None
    try:
        clients, hot = await overload_one_broker(cluster, new_namespace("mshed"))
        leader = next(s for s in cluster.services if s.is_leader)
        feed = leader.operations.feed
        await eventually(lambda: carried_out_moves(leader), timeout=30, message="the leader moves a bundle")
        async with AsyncAdminClient(
            cluster.urls[0]
        ) as admin:  # no more moves: shedding off at the next cycle
            await admin.update_dynamic_config("loadBalancerSheddingEnabled", "false")

            async def off() -> bool:
                return (await admin.get_balancer_status())["state"] == "off"

            await eventually(off, timeout=20, message="the balancer reports off")

        def disabled_cycle() -> bool:
            last = feed.last("shedding")
            return bool(last and any(str(d.reason) == "Disabled" for d in last.decisions))

        await eventually(disabled_cycle, timeout=20, message="the leader's next cycle saw shedding disabled")
        metrics = await scrape(leader.url)
        done = carried_out_moves(leader)
        transfers = [m for m in done if m.transfer]
        assert value(metrics["pulsar_lb_unload_bundle"], "pulsar_lb_unload_bundle_total") == len(done)
        assert value(metrics["pulsar_lb_unload_broker"], "pulsar_lb_unload_broker_total") >= 1
        overloaded = value(
            metrics["pulsar_lb_unload_broker_breakdown"],
            "pulsar_lb_unload_broker_breakdown_total",
            result="Success",
            reason="Overloaded",
        )
        decided = [
            d
            for r in feed.recent
            for d in r.decisions
            if str(d.label) == "Success" and str(d.reason) == "Overloaded"
        ]
        assert overloaded == len(decided) >= 1
        moves = value(metrics["brokerlb_moves"], "brokerlb_moves_total", kind="transfer", cause="Overloaded")
        assert moves == len([m for m in transfers if m.reason == "Overloaded"])
        assert value(metrics["pulsar_lb_unload_broker_breakdown"], result="Skip", reason="Disabled") >= 1
        assert done[0].source == hot
    finally:
        if clients is not None:
            await clients.close()
        await cluster.stop()


async def test_balancer_status_is_answered_by_the_leader(cluster) -> None:
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        leader = (await admin.get_leader_broker())["brokerId"]
    other = next(u for u, b in zip(cluster.urls, cluster.broker_ids, strict=True) if b != leader)
    async with httpx.AsyncClient(timeout=30) as client:
        redirected = await client.get(f"{other}/admin/v2/brokers/balancer")
    assert redirected.status_code == 307
    assert redirected.headers["location"].startswith(cluster.urls[cluster.broker_ids.index(leader)])
    async with AsyncAdminClient(other) as admin:
        status = await admin.get_balancer_status()
    assert status["leader"] == leader and status["brokers"] == len(cluster.broker_ids)
    # the shared cluster sheds every 10 minutes: no cycle yet, nothing in flight
    assert (status["state"], status["movesInFlight"]) == ("ready", 0)
    assert 0 <= status["balancedness"] <= 100


async def test_a_scrape_has_the_process_collectors_and_no_nan(cluster) -> None:
    """prometheus-client's default collectors (process_*, python_gc_*); summaries with nothing in
    their window (a broker no lookup reached) export no NaN quantile."""
    for url in cluster.urls:
        async with httpx.AsyncClient(timeout=30) as client:
            text = (await client.get(f"{url}/metrics")).text
        assert "NaN" not in text, [line for line in text.splitlines() if "NaN" in line][:5]
        families = {f.name for f in text_string_to_metric_families(text)}
        assert {"process_cpu_seconds", "process_resident_memory_bytes", "process_open_fds"} <= families
        assert "python_gc_collections" in families


async def test_operator_actions_are_counted_with_reason_admin(cluster) -> None:
    """As Pulsar's extensible manager: an operator's unload, transfer and split count as Success/Admin
    in the breakdowns and as unloaded or split bundles, on the broker that carried them out."""
    ns = new_namespace("madmin")
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=2)
        await lookup_many(cluster.urls[0], topics_of(ns, 20))
        bundles = (await admin.get_bundles(ns))["boundaries"]
        first, second = f"{bundles[0]}_{bundles[1]}", f"{bundles[1]}_{bundles[2]}"

        async def totals() -> dict[str, float]:
            out = {"unload": 0.0, "split": 0.0, "unloaded": 0.0, "splits": 0.0, "admin_moves": 0.0}
            for url in cluster.urls:
                m = await scrape(url)
                out["unload"] += value(
                    m["pulsar_lb_unload_broker_breakdown"], result="Success", reason="Admin"
                )
                out["split"] += value(
                    m["pulsar_lb_bundles_split_breakdown"], result="Success", reason="Admin"
                )
                out["unloaded"] += value(m["pulsar_lb_unload_bundle"])
                out["splits"] += value(m["pulsar_lb_bundles_split"])
                out["admin_moves"] += sum(
                    s.value for s in m["brokerlb_moves"] if s.labels.get("cause") == "Admin"
                )
            return out

        before = await totals()
        await admin.unload_bundle(ns, first)
        ring = NamespaceBundles.create(ns, 2)
        in_first = next(t for t in topics_of(ns, 20) if ring.find_bundle(t).range == first)

        async def owner_of_first() -> str | None:  # owned again (a lookup during the release is a 503)
            try:
                return str((await admin.lookup_topic(in_first))["httpUrl"]).rstrip("/")
            except RemoteBrokerError as exc:
                if exc.status != 503:
                    raise
                return None

        owner = await eventually(owner_of_first, timeout=30, message="the bundle owned again")
        other = next(
            b for b, u in zip(cluster.broker_ids, cluster.urls, strict=True) if u.rstrip("/") != owner
        )
        await admin.unload_bundle(ns, first, destination_broker=other)
        await admin.split_bundle(ns, second)
        after = await totals()
    assert after["unload"] - before["unload"] == 2  # the unload and the transfer
    assert after["split"] - before["split"] == 1
    assert after["unloaded"] - before["unloaded"] == 2
    assert after["splits"] - before["splits"] == 1
    assert after["admin_moves"] - before["admin_moves"] == 3
