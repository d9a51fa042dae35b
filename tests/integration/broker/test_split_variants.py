"""Split variants that need topics on the brokers (injected with synthetic clients, in-process):
``LARGEST``, ``HOT``, ``specified_positions_divide`` with body boundaries, ``topic_count_equally_divide``;
namespace creation with explicit boundaries; ``broker-stats/topics`` with served topics."""

from __future__ import annotations

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.broker.data.synthetic import SyntheticClients
from brokerlb.broker.data.topics import TopicStats
from brokerlb.ring import NamespaceBundles
from brokerlb.testing import eventually
from brokerlb.testing.clusters import InProcessCluster

from .helpers import new_namespace

pytestmark = pytest.mark.asyncio(loop_scope="package")

BOUNDARIES = ["0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"]


def topics_in(ns: str, bundles: NamespaceBundles, index: int, count: int) -> list[str]:
    out, i = [], 0
    while len(out) < count:
        topic = f"persistent://{ns}/t-{i}"
        if bundles.find_bundle(topic) == bundles.bundles[index]:
            out.append(topic)
        i += 1
    return out


async def test_largest_hot_and_specified_positions() -> None:
    cluster = await InProcessCluster(2, {"loadBalancerReportUpdateMinIntervalMillis": 100}).start()
    clients = SyntheticClients(cluster.services)
    try:
        ns = new_namespace("variants")
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(ns, boundaries=BOUNDARIES)
            assert (await admin.get_bundles(ns))["boundaries"] == BOUNDARIES
            bundles = NamespaceBundles.from_json(ns, await admin.get_bundles(ns))
            many = topics_in(ns, bundles, 1, 8)  # the LARGEST bundle: 8 topics, light
            hot = topics_in(ns, bundles, 3, 2)  # the HOT bundle: 2 topics, heavy
            await clients.add_many({t: TopicStats(msg_rate_in=1, msg_throughput_in=100) for t in many})
            await clients.add_many({t: TopicStats(msg_rate_in=500, msg_throughput_in=5e6) for t in hot})

            stats = {}
            for url in cluster.urls:
                async with AsyncAdminClient(url) as direct:
                    stats.update((await direct.get_topics_stats()).get(ns, {}))
            assert sum(len(d["persistent"]) for d in stats.values()) == 10
            assert stats[bundles.bundles[3].range]["persistent"][hot[0]]["msgThroughputIn"] == 5e6

            async def reported() -> bool:  # LARGEST / HOT read the brokers' load reports
                reports = []
                for u in cluster.urls:
                    async with AsyncAdminClient(u) as direct:
                        reports.append(await direct.get_load_report())
                return (
                    sum(s["topics"] for r in reports for b, s in r["lastStats"].items() if b.startswith(ns))
                    == 10
                )

            await eventually(reported, timeout=10, message="the topics reached the load reports")
            await admin.split_bundle(ns, "LARGEST")
            after = NamespaceBundles.from_json(ns, await admin.get_bundles(ns))
            assert after.num_bundles == 5 and bundles.bundles[1] not in after
            await admin.split_bundle(ns, "HOT", algorithm="topic_count_equally_divide")
            after = NamespaceBundles.from_json(ns, await admin.get_bundles(ns))
            assert after.num_bundles == 6 and bundles.bundles[3] not in after
            # the two hot topics now live in different bundles
            assert after.find_bundle(hot[0]) != after.find_bundle(hot[1])
            # specified positions: the body's boundary, for a bundle with more than one topic
            target = after.find_bundle(many[0])
            position = target.lower + (target.upper - target.lower) // 3
            await admin.split_bundle(
                ns, target.range, algorithm="specified_positions_divide", boundaries=[position]
            )
            final = NamespaceBundles.from_json(ns, await admin.get_bundles(ns))
            assert f"0x{position:08x}" in final.to_json()["boundaries"]
    finally:
        await clients.close()
        await cluster.stop()
