"""A local cluster shows its load: a standalone's brokers model a small broker (one core of 500 msg/s),
so a developer's traffic reads tens of percent, and the modelled CPU follows the traffic from the first
report that carries it (it read 0.0 % for the first minute while messages flowed: the modelled usage
was sampled once per ``loadBalancerHostUsageCheckIntervalMinutes``, a minute)."""

from __future__ import annotations

import uuid

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.broker.data.synthetic import SyntheticClients
from brokerlb.broker.data.topics import TopicStats
from brokerlb.broker.standalone import StandaloneCluster
from brokerlb.testing import eventually

from .helpers import topics_of

pytestmark = pytest.mark.asyncio(loop_scope="package")


async def test_local_traffic_reads_tens_of_percent_from_the_first_report() -> None:
    cluster = StandaloneCluster(
        3, metadata_store=f"memory:standalone-load-{uuid.uuid4().hex[:8]}", web_port=0, broker_port=0
    )
    await cluster.start()
    clients = None
    try:
        conf = cluster.configs[0]
        assert (conf.brokerlbHostUsage, conf.brokerlbModelCores, conf.brokerlbModelMsgRatePerCore) == (
            "traffic",
            1,
            500,
        )
        assert conf.loadBalancerHostUsageCheckIntervalMinutes == 1  # Pulsar's: not what makes it show
        await cluster.wait_for_leader()
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace("public/dev", num_bundles=4)
        # what `brokerlb perf produce` sends by default (100 msg/s) and a consumer reads back
        clients = SyntheticClients(cluster.brokers)
        await clients.add_many(
            {t: TopicStats(msg_rate_in=25, msg_rate_out=25) for t in topics_of("public/dev", 4)}
        )
        busiest = max(set(clients.placement().values()), key=list(clients.placement().values()).count)
        service = next(b for b in cluster.brokers if b.broker_id == busiest)

        def written_with_traffic():
            data = service.reporter.last_data
            return data if data.msg_rate_in + data.msg_rate_out > 0 else None

        report = await eventually(written_with_traffic, timeout=60, message="a report with the traffic")
        # the first report that carries the traffic carries its CPU too: (in + out) / 500 msg/s
        rate = report.msg_rate_in + report.msg_rate_out
        assert report.cpu.percent_usage() == pytest.approx(100 * rate / 500, rel=1e-3)
        assert report.cpu.percent_usage() >= 10, "tens of percent, not 0.0"
    finally:
        if clients is not None:
            await clients.close()
        await cluster.stop()
