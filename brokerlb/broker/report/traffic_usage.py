"""Host usage modelled from a broker's own traffic (``brokerlbHostUsage=traffic``).

Several brokers of a standalone cluster share one process on one host: the measured
CPU, memory and NIC numbers are the same for all of them and say nothing about their
load. In that setting (and in tests that need a controlled load) each broker reports
usage computed from the traffic of the topics it serves:

* cpu: ``100 × (msgRateIn + msgRateOut) / brokerlbModelMsgRatePerCore`` of a limit of
  ``100 × brokerlbModelCores``;
* bandwidth in / out: ``msgThroughputIn/Out × 8 / 1000`` Kbit/s of the NIC speed
  (``loadBalancerOverrideBrokerNicSpeedGbps``, else 10 Gbit/s);
* memory: this process's resident memory of the host's memory (shared, as measured);
* direct memory: unknown, as with measured usage.

So a broker carrying twice the messages reports twice the CPU, which is what the
shedding and placement strategies need to see. The numbers are a model, and the
load reports say so in the broker logs at start.
"""

from __future__ import annotations

from collections.abc import Callable

from brokerlb.model import NamespaceBundleStats, ResourceUsage, SystemResourceUsage

__all__ = ["TrafficHostUsage", "DEFAULT_NIC_KBPS"]

DEFAULT_NIC_KBPS = 1e7  # 10 Gbit/s


class TrafficHostUsage:
    """``sample()`` from ``totals()``: the broker's summed bundle stats now."""

    def __init__(
        self,
        totals: Callable[[], NamespaceBundleStats],
        *,
        cores: float = 4.0,
        msg_rate_per_core: float = 50_000.0,
        nic_speed_gbps: float | None = None,
    ) -> None:
        self._totals = totals
        self.cores = cores
        self.msg_rate_per_core = msg_rate_per_core
        self.nic_kbps = nic_speed_gbps * 1e6 if nic_speed_gbps else DEFAULT_NIC_KBPS
        import psutil

        self._process = psutil.Process()
        self._memory_mb = psutil.virtual_memory().total / (1024 * 1024)

    def sample(self) -> SystemResourceUsage:
        t = self._totals()
        cpu = 100.0 * (t.msg_rate_in + t.msg_rate_out) / self.msg_rate_per_core
        return SystemResourceUsage(
            cpu=ResourceUsage(cpu, 100.0 * self.cores),
            memory=ResourceUsage(self._process.memory_info().rss / (1024 * 1024), self._memory_mb),
            direct_memory=ResourceUsage.unknown(),
            bandwidth_in=ResourceUsage(t.msg_throughput_in * 8 / 1000, self.nic_kbps),
            bandwidth_out=ResourceUsage(t.msg_throughput_out * 8 / 1000, self.nic_kbps),
        )
