"""The simulated cluster's load history, in the data pipeline's input format.

A :class:`HistoryWriter` attached to a :class:`~brokerlb.sim.simulation.Simulation` writes,
through :mod:`brokerlb.history` (``docs/load-history.md``), what a real cluster's leader and
brokers would write:

* ``broker-samples/`` -- every load report a broker writes (``BrokerSample``: the full
  ``LocalBrokerData``), and a removal record when a broker's registration vanishes;
* ``bundle-boundaries/`` -- every namespace's bundles at the start and after each split;
* ``topic-samples/`` -- every served topic's stats (``broker-stats/topics`` flattened) every
  ``topic_interval`` seconds (default 15 minutes: a topic-level dump every cycle of a large
  cluster would be gigabytes a day).

So a simulated run can be fed to ``brokerlb pipeline`` like a recorded one, and its topic
samples can be replayed as a :class:`~brokerlb.sim.recorded.RecordedWorkload`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from brokerlb.sim.brokers import SimBroker
    from brokerlb.sim.simulation import Simulation
    from brokerlb.sim.workloads import TopicTraffic

__all__ = ["HistoryWriter", "DEFAULT_TOPIC_INTERVAL"]

#: seconds between two topic-stats dumps
DEFAULT_TOPIC_INTERVAL = 900.0


class HistoryWriter:
    """Writes a simulation's history under ``root`` (module docstring)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        writer_id: str = "sim",
        topic_interval: float = DEFAULT_TOPIC_INTERVAL,
    ) -> None:
        from brokerlb.history import HistoryWriter as Files

        self.root = os.fspath(root)
        self._files = Files(self.root, writer_id.replace("+", "_"))
        self.topic_interval = topic_interval
        self._next_topics_s = 0.0
        self._boundaries_written: dict[str, tuple[int, ...]] = {}
        self._registered: set[str] = set()

    def start(self, sim: Simulation) -> None:
        """The simulation starts: every namespace's bundles."""
        self._boundaries(sim)

    def report(self, broker: SimBroker) -> None:
        """A broker wrote its load report."""
        from brokerlb.history import BrokerSample

        assert broker.report is not None
        self._registered.add(broker.broker_id)
        self._files.write(BrokerSample(broker.report.last_update, broker.broker_id, broker.report))

    def sample(self, sim: Simulation, traffic: TopicTraffic, served: np.ndarray) -> None:
        """The cycle's sampling instant: topic stats when due (before the leader moves anything)."""
        t = (sim.now_ms - sim.start_ms) / 1000
        if self.topic_interval > 0 and t + 1e-9 >= self._next_topics_s:
            self._next_topics_s = t + self.topic_interval
            self._topics(sim, traffic, served, sim.now_ms)

    def cycle(self, sim: Simulation) -> None:
        """End of a cycle: registrations that vanished, new bundle boundaries (after splits)."""
        from brokerlb.history import BrokerSample

        now = sim.now_ms
        registered = {b.broker_id for b in sim.brokers if b.registered}
        for gone in sorted(self._registered - registered):
            self._files.write(BrokerSample.removed(now, gone))
        self._registered &= registered
        self._boundaries(sim)

    def _boundaries(self, sim: Simulation) -> None:
        from brokerlb.history import BundleBoundaries

        now = sim.now_ms
        topo = sim.topology
        for i, ns in enumerate(topo.namespaces):
            bounds = tuple(topo.ns_bundles[i].boundaries)
            if self._boundaries_written.get(ns) != bounds:
                self._files.write(BundleBoundaries.of(now, topo.ns_bundles[i]))
                self._boundaries_written[ns] = bounds

    def _topics(self, sim: Simulation, traffic: TopicTraffic, served: np.ndarray, now: int) -> None:
        from brokerlb.history import TopicSample

        topo = sim.topology
        owner = sim.ownership.owner
        ids = np.flatnonzero(traffic.active & served[topo.topic_bundle])
        rin, rout = traffic.msg_rate_in, traffic.msg_rate_out
        tin, tout = traffic.msg_throughput_in, traffic.msg_throughput_out
        for t in ids:
            b = int(topo.topic_bundle[t])
            size = float(tin[t] / rin[t]) if rin[t] > 0 else 0.0
            self._files.write(
                TopicSample(
                    timestamp=now,
                    broker=sim.broker_ids[int(owner[b])],
                    topic=topo.topic_names[t],
                    bundle=topo.bundle_names[b],
                    msg_rate_in=float(rin[t]),
                    msg_rate_out=float(rout[t]),
                    msg_throughput_in=float(tin[t]),
                    msg_throughput_out=float(tout[t]),
                    producer_count=int(traffic.producers[t]),
                    consumer_count=int(traffic.consumers[t]),
                    subscription_count=int(traffic.consumers[t]),
                    average_msg_size=size,
                )
            )

    def close(self) -> list[Any]:
        return self._files.close()
