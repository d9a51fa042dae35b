"""Graceful shutdown is bounded by ``brokerShutdownTimeoutMs`` whatever the metadata store does,
and quiet when nothing is wrong.

* Three ``brokerlb broker`` processes own bundles on a real ZooKeeper; the ZooKeeper server is
  stopped, then every broker is sent SIGTERM. Each must exit by itself (before the guard below,
  which is only there to end a hung test), through the end of its own shutdown path: Pulsar users
  saw two of three brokers need a minute and the third still running after three minutes.
* A standalone cluster with clients connected is stopped with SIGINT (Ctrl-C): it exits 0 and
  prints no ERROR or WARNING line. (How long it takes is measured by
  ``benchmarks/bench_shutdown.py``, not asserted.)
"""

from __future__ import annotations

import asyncio
import re
import signal

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.testing.clusters import zookeeper_process_cluster
from brokerlb.testing.official_client import OfficialTraffic
from brokerlb.testing.standalone_process import StandaloneProcess
from brokerlb.testing.zookeeper import ZooKeeperServer

from .helpers import lookup_data, topics_of

pytestmark = pytest.mark.asyncio(loop_scope="package")

#: only ends a test whose process hangs: the processes are expected to be gone long before
GUARD = 180.0


@pytest.mark.zookeeper
@pytest.mark.slow
async def test_brokers_exit_within_their_shutdown_bound_when_zookeeper_is_stopped() -> None:
    zk = ZooKeeperServer().start()  # a server of this test's own: it is stopped below
    try:
        cluster = await zookeeper_process_cluster(zk, 3, {"brokerShutdownTimeoutMs": 3000}, prefix="bounds")
        try:
            async with AsyncAdminClient(cluster.urls[0]) as admin:
                await admin.create_namespace("public/bounds", num_bundles=8)
            await lookup_data(cluster.urls[0], topics_of("public/bounds", 40))
            zk.stop()
            for proc in cluster.processes:
                proc.send_signal(signal.SIGTERM)
            codes = [await asyncio.to_thread(proc.wait, GUARD) for proc in cluster.processes]
            logs = [cluster.log_path(i).read_text(errors="replace") for i in range(3)]
            for code, log in zip(codes, logs, strict=True):
                assert code in (0, 1), log[-3000:]
                # the broker went through its own stop (bounded), not the process guard
                assert re.search(r"Broker \S+ stopped in [\d.]+ s", log), log[-3000:]
                assert "Exiting without a complete shutdown" not in log, log[-3000:]
            # with the store gone, leaving the cluster cannot finish: every broker says where it was cut
            cut = [log for log in logs if "did not finish within 3000 ms" in log]
            assert cut, "\n---\n".join(log[-2000:] for log in logs)
        finally:
            await cluster.stop(timeout=10)
    finally:
        zk.stop()


@pytest.mark.slow
async def test_a_standalone_with_clients_stops_quietly_on_ctrl_c() -> None:
    standalone = StandaloneProcess(3, {"brokerShutdownTimeoutMs": 60000})
    await standalone.start()
    traffic = None
    try:
        async with AsyncAdminClient(standalone.urls[0]) as admin:
            await admin.create_namespace("public/quiet", num_bundles=8)
        traffic = OfficialTraffic(
            standalone.binary_urls[0], {t: 20.0 for t in topics_of("public/quiet", 16)}, timeout=20
        )
        await asyncio.to_thread(traffic.start)
        while traffic.acked() < 100:  # messages stored, durable subscriptions with state
            await asyncio.sleep(0.1)
        # the producers close while the brokers run (a producer blocked in a send to a broker that
        # is gone holds its thread for the send timeout); the consumers stay connected through Ctrl-C
        await asyncio.to_thread(traffic.stop_producing)
        assert standalone.process is not None
        standalone.process.send_signal(signal.SIGINT)
        code = await asyncio.to_thread(standalone.process.wait, GUARD)
        text = standalone.log.read_text(errors="replace")
        assert code == 0, text
        noisy = [line for line in text.splitlines() if " ERROR " in line or " WARNING " in line]
        assert noisy == [], text
    finally:
        if traffic is not None:
            await asyncio.to_thread(traffic.close)
        await standalone.stop()
