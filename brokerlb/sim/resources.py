"""Broker capacity and the resource model: from traffic to the usage a broker reports.

Units are Pulsar's host-usage units (see :class:`~brokerlb.sim.spec.ResourceModelSpec`):

* cpu: percent summed over cores, limit ``100 * cores``;
* bandwidth in/out: Kbit/s, limit ``nic_gbps * 1e6``;
* memory / direct memory: MB.

cpu of a broker = ``base_cpu * cores`` + the cost of the messages and bytes it moves (in +
out) + a seeded multiplicative measurement noise; NIC = its throughput. The same cost
function gives each bundle's *demand*, used by the metrics' lower bound.

What a broker *measures* (``measured=True``: what its load report says) cannot exceed its
limits -- a broker asked for 12 cores' work on 8 cores reports 800 of 800 -- while the
metrics use the *demand* (``measured=False``), so a load above 100% in a report means the
broker is saturated: its clients see the difference as latency and backlog.

>>> from brokerlb.sim.spec import ResourceModelSpec
>>> model = ResourceModel(ResourceModelSpec(cpu_us_per_msg=10, cpu_us_per_mb=0, base_cpu=0))
>>> float(model.cpu_demand(np.array([100_000.0]), np.array([0.0]))[0])   # 100k msg/s x 10 us = 1 core
100.0
>>> float(kbps(np.array([1_250_000.0]))[0])   # 1.25 MB/s = 10 Mbit/s
10000.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from brokerlb.sim.spec import BrokerSpec, ResourceModelSpec

__all__ = ["ResourceModel", "BrokerUsage", "Capacities", "kbps"]


def kbps(bytes_per_second: np.ndarray) -> np.ndarray:
    """Bytes/s to Kbit/s (Pulsar's bandwidth unit)."""
    return bytes_per_second * 0.008


@dataclass(slots=True)
class Capacities:
    """Per-broker limits (arrays indexed by broker index)."""

    cores: np.ndarray
    cpu_limit: np.ndarray
    nic_kbps: np.ndarray

    @classmethod
    def of(cls, brokers: list[BrokerSpec]) -> Capacities:
        cores = np.asarray([b.cores for b in brokers], dtype=float)
        return cls(cores, cores * 100.0, np.asarray([b.nic_gbps * 1e6 for b in brokers], dtype=float))


@dataclass(slots=True)
class BrokerUsage:
    """What every broker measures this cycle (usage arrays; limits are in :class:`Capacities`)."""

    cpu: np.ndarray
    bandwidth_in: np.ndarray
    bandwidth_out: np.ndarray
    memory: np.ndarray
    direct_memory: np.ndarray

    def load(self, caps: Capacities, spec: ResourceModelSpec) -> np.ndarray:
        """Max resource usage as a fraction: ``max(cpu%, directMemory%, bwIn%, bwOut%) / 100``
        (Pulsar's current ``getMaxResourceUsage``)."""
        return np.maximum.reduce(
            [
                self.cpu / caps.cpu_limit,
                self.direct_memory / spec.direct_memory_mb,
                self.bandwidth_in / caps.nic_kbps,
                self.bandwidth_out / caps.nic_kbps,
            ]
        )


class ResourceModel:
    """Turns traffic into resource usage (module docstring). ``rng`` drives the measurement noise."""

    def __init__(self, spec: ResourceModelSpec, rng: np.random.Generator | None = None) -> None:
        self.spec = spec
        self._rng = rng

    def cpu_demand(self, msg_rate: np.ndarray, throughput: np.ndarray) -> np.ndarray:
        """cpu (percent of one core) to move ``msg_rate`` msg/s and ``throughput`` bytes/s (in + out)."""
        s = self.spec
        return (msg_rate * s.cpu_us_per_msg + throughput * (s.cpu_us_per_mb / 1e6)) * 1e-4

    def direct_memory_demand(self, throughput: np.ndarray) -> np.ndarray:
        """Direct memory (MB) for ``throughput`` bytes/s, over the base."""
        return throughput * (self.spec.direct_memory_mb_per_mbps / 1e6)

    def broker_usage(
        self,
        caps: Capacities,
        msg_rate: np.ndarray,
        throughput_in: np.ndarray,
        throughput_out: np.ndarray,
        up: np.ndarray,
        *,
        measured: bool = True,
    ) -> BrokerUsage:
        """Usage of every broker given its served traffic (rates in + out, throughputs per direction).

        Brokers that are down (``up`` False) report zeros. ``measured``: with the measurement
        noise (drawn for all brokers, so the random stream does not depend on which are up)
        and capped at the limits; else the plain demand.
        """
        s = self.spec
        throughput = throughput_in + throughput_out
        cpu = s.base_cpu * caps.cores + self.cpu_demand(msg_rate, throughput)
        if measured and self._rng is not None and s.measurement_noise > 0:
            z = self._rng.standard_normal(len(cpu))
            cpu = cpu * np.exp(s.measurement_noise * z - 0.5 * s.measurement_noise**2)
        direct = s.direct_memory_base_mb + self.direct_memory_demand(throughput)
        memory = np.full(len(cpu), s.heap_used_mb)
        bw_in, bw_out = kbps(throughput_in), kbps(throughput_out)
        if measured:
            cpu = np.minimum(cpu, caps.cpu_limit)
            bw_in, bw_out = np.minimum(bw_in, caps.nic_kbps), np.minimum(bw_out, caps.nic_kbps)
            direct = np.minimum(direct, s.direct_memory_mb)
        zero = ~up
        for arr in (cpu, direct, memory):
            arr[zero] = 0.0
        return BrokerUsage(
            cpu=cpu,
            bandwidth_in=np.where(up, bw_in, 0.0),
            bandwidth_out=np.where(up, bw_out, 0.0),
            memory=memory,
            direct_memory=direct,
        )
