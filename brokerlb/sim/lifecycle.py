"""The simulated cluster's life between two cycles: the timeline of events and ownership moves.

:class:`ClusterLifecycle` is a part of :class:`~brokerlb.sim.simulation.Simulation` (a mixin; it
uses the simulation's brokers, topology, ownership table, timeline, leader and config). It runs
what the timeline holds, in time order, with the clock at each instant:

* scenario events -- a broker added (it registers and writes its first report at once),
  restarted (deregisters, unloads its bundles, comes back after ``downtime`` owning nothing),
  crashed (stops serving; its bundles keep their dead owner until its session expires), a
  dynamic config change;
* unloads and transfers completing (``timing.unload`` / ``timing.transfer``);
* lookups (``timing.lookup`` after a bundle lost its owner): the leader's placement
  (:meth:`~brokerlb.loadbalance.leader.Leader.place`: the one-shot destination of a shedding
  decision, else the placement pipeline); a failed lookup (no leader, no broker, a dead broker
  chosen) retries with exponential back-off up to 60 s;
* sessions of crashed brokers expiring (``BrokerLost``: their bundles are free for lookups).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from brokerlb.config import is_extensible_load_manager
from brokerlb.model import ResourceWeights
from brokerlb.sim.brokers import BundleTraffic, SimBroker
from brokerlb.sim.ownership import BundleState, Move
from brokerlb.sim.parts import SimulationParts
from brokerlb.sim.spec import AddBroker, FailBroker, RestartBroker, SetConfig
from brokerlb.sim.workloads import TopicTraffic

__all__ = ["ClusterLifecycle", "MAX_LOOKUP_BACKOFF_S"]

#: longest wait between two lookups of a bundle nobody could take (client back-off cap)
MAX_LOOKUP_BACKOFF_S = 60.0


class ClusterLifecycle(SimulationParts):
    """The timeline's handlers (module docstring)."""

    def _run_timeline(self, until_ms: float) -> None:
        handlers: dict[str, Callable[[Any], None]] = {
            "scenario": self._on_scenario_event,
            "release_done": self._on_release_done,
            "lookup": self._on_lookup,
            "session_expired": self._on_session_expired,
            "broker_up": self._on_broker_up,
        }
        for time_ms, kind, payload in self.timeline.pop_due(until_ms):
            self.clock.set_ms(max(time_ms, self.clock.now_ms()))
            handlers[kind](payload)

    def _on_scenario_event(self, event: Any) -> None:
        if isinstance(event, AddBroker):
            self._start_broker(self.brokers[self.broker_index[event.broker.broker_id]])
        elif isinstance(event, RestartBroker):
            self._restart_broker(self.brokers[self.broker_index[event.broker]], event.downtime)
        elif isinstance(event, FailBroker):
            self._fail_broker(self.brokers[self.broker_index[event.broker]])
        elif isinstance(event, SetConfig):
            self.config = self.config.with_overrides(dict(event.config), strict=True)
            if self.leader is not None:
                self.leader.config = self.config
            if self._schedule is not None:
                self._schedule.config = self.config
        self._elect_leader()

    def _start_broker(self, broker: SimBroker) -> None:
        """Register a (re)started broker; it writes its first report at once (no bundles yet)."""
        now = self.now_ms
        broker.start(now)
        self.ownership.broker_registered(broker.index, now)
        if broker.index in self._registration_order:
            self._registration_order.remove(broker.index)
        self._registration_order.append(broker.index)
        zero = np.zeros(len(self.brokers))
        up = np.zeros(len(self.brokers), dtype=bool)
        up[broker.index] = True
        idle = self.model.broker_usage(self.caps, zero, zero, zero, up, measured=False)
        system = self.writer.usage_of(broker.index, idle)
        n = self.topology.num_bundle_ids
        empty = BundleTraffic(
            *(np.zeros(n) for _ in range(4)), *(np.zeros(n, dtype=np.int64) for _ in range(3))
        )
        self.writer.write_local_data(
            broker,
            now,
            system,
            (0.0, 0.0, 0.0, 0.0, 0),
            np.zeros(0, dtype=np.int64),
            empty,
            self.topology.bundle_names,
            self.config,
            force=True,
        )
        if is_extensible_load_manager(
            self.config.loadManagerClassName
        ):  # extensible reporters publish at start too
            self.writer.publish_load_data(
                broker,
                now,
                system,
                (0.0, 0.0, 0.0, 0.0, 0),
                0,
                self.config,
                ResourceWeights.from_config(self.config),
            )
            self.writer.publish_top_bundles(
                broker, np.zeros(0, dtype=np.int64), empty, self.topology.bundle_names, 0, None
            )
        if self.history is not None:
            self.history.report(broker)
        self._mark_changed(structure=True)

    def _on_broker_up(self, index: int) -> None:
        self._start_broker(self.brokers[index])
        self._elect_leader()

    def _restart_broker(self, broker: SimBroker, downtime: float) -> None:
        if not broker.up:
            return
        now = self.now_ms
        for b in self.ownership.owned_by(broker.index):
            self.ownership.release(int(b), now, "restart", self._throughput_of(int(b)))
            self.timeline.schedule(now + self.scenario.timing.unload * 1000, "release_done", (int(b), -1))
        broker.stop()
        self._mark_changed(structure=True)
        self.timeline.schedule(now + downtime * 1000, "broker_up", broker.index)

    def _fail_broker(self, broker: SimBroker) -> None:
        if not broker.up:
            return
        broker.up = False  # still registered until its session expires
        self.ownership.broker_down(broker.index)
        tput = np.zeros(self.topology.num_bundle_ids)
        if self._bundle_traffic is not None:
            known = self._bundle_traffic.throughput
            tput[: len(known)] = known
        self.ownership.owner_lost(self.ownership.owned_by(broker.index), self.now_ms, tput)
        timeout = self.scenario.timing.session_timeout
        if timeout is None:
            timeout = self.config.metadataStoreSessionTimeoutMillis / 1000
        self.timeline.schedule(self.now_ms + timeout * 1000, "session_expired", broker.index)

    def _on_session_expired(self, index: int) -> None:
        broker = self.brokers[index]
        if broker.up:
            return  # came back meanwhile
        broker.registered = False
        now = self.now_ms
        for b in self.ownership.broker_lost(index, now, f"session of {broker.broker_id} expired"):
            self._schedule_lookup(b, now)
        self._mark_changed(structure=True)
        self._elect_leader()

    def _on_release_done(self, payload: tuple[int, int]) -> None:
        b, _ = payload
        if not self.topology.bundle_live[b] or self.ownership.state[b] != BundleState.RELEASING:
            return
        now = self.now_ms
        if self.ownership.release_done(b, now):
            dest = int(self.ownership.owner[b])
            if self.brokers[dest].up:
                self._moved(self.ownership.assign(b, dest, now, "transfer"))
            # else: Assigning to a crashed broker until its session expires (BrokerLost frees it)
            return
        self._schedule_lookup(b, now)

    def _schedule_lookup(self, b: int, now: float) -> None:
        if self.ownership.lookup_pending[b]:
            return
        self.ownership.request_lookup(b, now)
        self.timeline.schedule(now + self.scenario.timing.lookup * 1000, "lookup", b)

    def _request_lookups(self, traffic: TopicTraffic) -> None:
        """Clients of topics in bundles nobody owns or looks up yet do a lookup now."""
        topo = self.topology
        wanted = np.zeros(topo.num_bundle_ids, dtype=bool)
        wanted[topo.topic_bundle[traffic.active]] = True
        free = (
            wanted
            & topo.bundle_live
            & (self.ownership.state == BundleState.FREE)
            & ~self.ownership.lookup_pending
        )
        for b in np.flatnonzero(free):
            self._schedule_lookup(int(b), self.now_ms)

    def _on_lookup(self, b: int) -> None:
        own = self.ownership
        if not self.topology.bundle_live[b] or own.state[b] != BundleState.FREE:
            own.lookup_pending[b] = False
            return
        now = self.now_ms
        own.lookup_pending[b] = False
        target = -1
        if self.leader_available:
            assert self.leader is not None
            started = time.process_time()
            inputs = self._inputs()
            self._ensure_refreshed(inputs)
            phase = time.process_time()
            decision = self.leader.place(now, self.topology.bundle_names[b], inputs)
            self._phase("place", phase)
            self.engine_seconds += time.process_time() - started
            self._cycle_decisions[f"placement/{decision.label}/{decision.reason}"] += 1
            if decision.broker is not None:
                target = self.broker_index.get(decision.broker, -1)
        if target < 0 or not self.brokers[target].up:
            attempts = self._lookup_attempts.get(b, 0) + 1
            self._lookup_attempts[b] = attempts
            backoff = min(self.scenario.timing.lookup * 2**attempts, MAX_LOOKUP_BACKOFF_S)
            own.lookup_pending[b] = True
            self.timeline.schedule(now + max(backoff, 0.001) * 1000, "lookup", b)
            return
        self._lookup_attempts.pop(b, None)
        self._moved(own.assign(b, target, now, "lookup"))

    def _throughput_of(self, b: int) -> float:
        """Bundle ``b``'s throughput at the last sample (0 for a bundle created since, by a split)."""
        traffic = self._bundle_traffic
        if traffic is None or b >= len(traffic.throughput):
            return 0.0
        return float(traffic.throughput[b])

    def _moved(self, move: Move | None) -> None:
        if move is not None:
            self._cycle_moves.append(move)
