"""The discrete-time cluster simulation: traffic, brokers, ownership and the real leader.

One :meth:`Simulation.step` is one cycle of ``scenario.tick`` seconds on a
:class:`~brokerlb.clock.ManualClock`:

1. everything due on the timeline up to the end of the cycle runs in time order, with the
   clock set to its instant: scenario events (broker added / restarted / failed, config
   changes), unloads and transfers completing, lookups placing free bundles, sessions of
   dead brokers expiring;
2. the workload gives every topic's traffic; it is summed per bundle (the bundle each topic
   hashes into) and per broker (the broker serving each bundle);
3. the resource model turns each broker's traffic into the usage it measures; each live
   broker decides with the real report-update rule whether to write its load report;
4. the leader -- the real decision engine -- refreshes its load data when reports changed,
   runs the shedding loop every ``loadBalancerSheddingIntervalMinutes`` and the split check,
   and its decisions are executed: unloads and transfers take ``timing.unload`` /
   ``timing.transfer``; an unloaded bundle is placed at the clients' next lookup
   (``timing.lookup``) by the leader's placement pipeline; split bundles are replaced by
   their children on the ring (and unloaded if
   :func:`~brokerlb.loadbalance.registry.unloads_split_children`);
5. the metrics of the cycle are recorded (:mod:`brokerlb.sim.metrics`).

Leadership: the leader is the longest-registered live broker. A crashed leader keeps
its registration until its session expires; meanwhile lookups redirected to it fail (they
are retried) and nothing is shed. The next leader starts with empty strategy memory and
reads the bundle histories last persisted (every
``loadBalancerResourceQuotaUpdateIntervalMinutes``), as a new Pulsar leader does.

With ``validate=True`` every cycle checks the invariants of :mod:`brokerlb.testing.simulation`
(load conservation, topics in live bundles) and :func:`~brokerlb.testing.assert_ring_covers_keyspace`
after splits.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from operator import is_
from typing import Any

import numpy as np

from brokerlb.clock import ManualClock
from brokerlb.config import ServiceConfig, short_class_name
from brokerlb.loadbalance.cycle import LeaderSchedule
from brokerlb.loadbalance.leader import ClusterInputs, Leader
from brokerlb.model import ResourceWeights
from brokerlb.naming import is_system_service_namespace
from brokerlb.sim.brokers import BundleTraffic, ReportWriter, SimBroker
from brokerlb.sim.leadership import LeaderDuties, LeaderFactory, new_leader
from brokerlb.sim.lifecycle import ClusterLifecycle
from brokerlb.sim.metrics import CycleMetrics, MetricsRecorder, lower_bound
from brokerlb.sim.ownership import Move, OwnershipTable
from brokerlb.sim.recorded import RecordedWorkload
from brokerlb.sim.resources import BrokerUsage, Capacities, ResourceModel
from brokerlb.sim.result import SimulationResult
from brokerlb.sim.spec import (
    AddBroker,
    BrokerSpec,
    Scenario,
)
from brokerlb.sim.timeline import Timeline
from brokerlb.sim.topology import Topology
from brokerlb.sim.workloads import SyntheticWorkload, TopicTraffic, Workload

__all__ = ["Simulation", "DEFAULT_START_MS"]

#: Simulated time 0 (2023-11-14T22:13:20Z), unless a recorded workload says otherwise.
DEFAULT_START_MS = 1_700_000_000_000


class Simulation(LeaderDuties, ClusterLifecycle):
    """One run of a scenario under one configuration (see the module docstring).

    ``config_overrides`` apply over the scenario's ``config`` (e.g. the strategy under test);
    ``workload`` replaces the synthetic workload with recorded topic traffic; ``seed``
    replaces the scenario's seed. ``on_cycle(done, total)`` is called after each cycle
    (progress bars). ``history`` receives what the cluster wrote (see
    :mod:`brokerlb.sim.history`). ``leader_factory`` replaces the real engine (tests of the
    simulator's own mechanics only).
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        config_overrides: Mapping[str, Any] | None = None,
        workload: RecordedWorkload | None = None,
        seed: int | None = None,
        validate: bool = False,
        on_cycle: Callable[[int, int], None] | None = None,
        history: Any | None = None,
        leader_factory: LeaderFactory | None = None,
        label: str | None = None,
    ) -> None:
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else int(seed)
        self.config = ServiceConfig.from_mapping({**scenario.config, **(config_overrides or {})}, strict=True)
        self.validate = validate
        self.label = label or short_class_name(self.config.loadBalancerLoadSheddingStrategy)
        self.on_cycle = on_cycle
        self.history = history
        streams = np.random.SeedSequence(self.seed).spawn(3)
        workload_rng, noise_rng = (np.random.default_rng(s) for s in streams[:2])
        self._leader_seed = int(streams[2].generate_state(1)[0])

        if workload is None and scenario.recorded_workload is not None:
            workload = RecordedWorkload.load(scenario.recorded_workload)
        self.workload: Workload
        if workload is not None:
            self.workload = workload.player()
            start_ms = workload.start_ms
        else:
            self.workload = SyntheticWorkload(scenario, workload_rng)
            start_ms = DEFAULT_START_MS
        self.clock = ManualClock(start_ms)
        self.start_ms = start_ms

        self.topology = Topology(self._namespace_bundles(), self.workload.topics)
        self.anti_affinity = {
            ns.name: ns.anti_affinity_group for ns in scenario.namespaces if ns.anti_affinity_group
        }

        specs: list[BrokerSpec] = list(scenario.brokers)
        specs += [e.broker for e in scenario.events if isinstance(e, AddBroker)]
        self.brokers = [SimBroker(i, spec) for i, spec in enumerate(specs)]
        self.broker_index = {b.broker_id: b.index for b in self.brokers}
        self.broker_ids = [b.broker_id for b in self.brokers]
        self.caps = Capacities.of(specs)
        self.model = ResourceModel(scenario.resources, noise_rng)
        self.writer = ReportWriter(self.caps, scenario.resources)
        self._registration_order: list[int] = []

        grace_s = self.config.duration_seconds("loadBalancerSheddingGracePeriodMinutes")
        self.ownership = OwnershipTable(self.topology.bundle_names, self.broker_ids, grace_s * 1000)
        self.ownership.grow(self.topology.num_bundle_ids)
        self.metrics = MetricsRecorder(self.broker_ids, grace_s)
        self._lookup_attempts: dict[int, int] = {}

        self.timeline = Timeline()
        for event in scenario.events:
            self.timeline.schedule(start_ms + event.at * 1000, "scenario", event)

        self._leader_factory: LeaderFactory = leader_factory or new_leader
        self.leader: Leader | None = None
        self._leader_broker = -1
        self._stored_bundle_data: dict[str, Any] = {}
        self._schedule: LeaderSchedule | None = None
        #: reports written since the leader's last refresh / brokers or bundles changed since then
        self._reports_changed = False
        self._structure_changed = True
        self._change_version = 0
        self._inputs_version = -1
        self._last_refresh_ms = -float("inf")
        self._cached_inputs: ClusterInputs | None = None
        self._lookup_inputs = self._policy_inputs = None
        self._cycle = 0
        self._cycle_decisions: Counter[str] = Counter()
        self._cycle_moves: list[Move] = []
        self._cycle_splits = 0
        self._bundle_traffic: BundleTraffic | None = None
        self._topic_traffic: TopicTraffic | None = None
        #: (topology version, bundle ids), the count arrays summed, their sums (:meth:`_count_sums`)
        self._counts: tuple[tuple[int, int], tuple[np.ndarray, ...], tuple[np.ndarray, ...]] | None = None
        #: CPU seconds inside the decision engine; wall and CPU seconds of :meth:`run`
        self.engine_seconds = 0.0
        #: engine phase (refresh, shed, split, place) -> [CPU seconds, calls]
        self.engine_phases: dict[str, list[float]] = {}
        self.refreshes = 0
        self.wall_seconds = 0.0
        self.cpu_seconds = 0.0

        if history is not None:
            history.start(self)
        for broker in self.brokers[: len(scenario.brokers)]:
            self._start_broker(broker)
        self._elect_leader()
        self._request_lookups(self.workload.traffic(0.0))

    # ------------------------------------------------------------------ set-up helpers

    def _namespace_bundles(self) -> list[tuple[str, int]]:
        declared = {ns.name: ns.bundles for ns in self.scenario.namespaces}
        default = self.config.defaultNumberOfNamespaceBundles
        return [(ns, declared.get(ns, default)) for ns in self.workload.topics]

    @property
    def cycles(self) -> int:
        return self.scenario.cycles

    @property
    def cycle(self) -> int:
        return self._cycle

    @property
    def broker_up(self) -> np.ndarray:
        return np.asarray([b.up for b in self.brokers], dtype=bool)

    # ------------------------------------------------------------------ running

    def run(self) -> SimulationResult:
        """Run every cycle; returns the :class:`~brokerlb.sim.result.SimulationResult`."""
        started, cpu = time.perf_counter(), time.process_time()
        while self._cycle < self.cycles:
            self.step()
        self.wall_seconds += time.perf_counter() - started
        self.cpu_seconds += time.process_time() - cpu
        return SimulationResult.of(self)

    def step(self) -> None:
        """Run one cycle (module docstring)."""
        tick_ms = self.scenario.tick * 1000
        cycle_start = self.start_ms + self._cycle * tick_ms
        cycle_end = cycle_start + tick_ms
        self.ownership.start_cycle(cycle_start)
        self._cycle_decisions = Counter()
        self._cycle_moves = []
        self._cycle_splits = 0
        self._run_timeline(cycle_end)
        self.clock.set_ms(int(round(cycle_end)))
        self._cycle += 1

        t = (cycle_end - self.start_ms) / 1000
        traffic = self.workload.traffic(t)
        self._request_lookups(traffic)
        bundle = self._bundle_sums(traffic)
        self._bundle_traffic = bundle
        self._topic_traffic = traffic
        up = self.broker_up
        served = self.ownership.served_mask(up)
        broker_totals = self._broker_sums(bundle, served)
        usage = self.model.broker_usage(
            self.caps, broker_totals["rate"], broker_totals["tput_in"], broker_totals["tput_out"], up
        )
        if self.validate:
            self._check_invariants(traffic, served, broker_totals)
        written = self._write_reports(usage, broker_totals, served, bundle)
        if self.history is not None:
            self.history.sample(self, traffic, served)
        self._leader_cycle()

        self._record_metrics(t, bundle, served, broker_totals, up, written)
        if self.history is not None:
            self.history.cycle(self)
        if self.on_cycle is not None:
            self.on_cycle(self._cycle, self.cycles)

    def _record_metrics(
        self,
        t: float,
        bundle: BundleTraffic,
        served: np.ndarray,
        broker_totals: dict[str, np.ndarray],
        up: np.ndarray,
        written: int,
    ) -> None:
        """The cycle's metrics, from the traffic as sampled (before the leader moved anything)."""
        unowned_ms = self.ownership.end_cycle(self.now_ms)
        rate, tin, tout = broker_totals["rate"], broker_totals["tput_in"], broker_totals["tput_out"]
        demand = self.model.broker_usage(self.caps, rate, tin, tout, up, measured=False)
        zero = np.zeros(len(self.brokers))
        base = self.model.broker_usage(self.caps, zero, zero, zero, up, measured=False)
        offered = float(bundle.throughput.sum())
        served_tput = float(bundle.throughput[served].sum())
        sampled = bundle.topics > 0  # this cycle's bundles (computed before any split)
        self.metrics.record(
            CycleMetrics(
                time_s=t,
                broker_load=demand.load(self.caps, self.scenario.resources),
                broker_throughput=tin + tout,
                live=up,
                lower_bound=lower_bound(
                    self.caps,
                    base,
                    up,
                    self.model,
                    (bundle.msg_rate_in + bundle.msg_rate_out)[sampled],
                    bundle.msg_throughput_in[sampled],
                    bundle.msg_throughput_out[sampled],
                ),
                moves=self._cycle_moves,
                unowned_seconds=unowned_ms / 1000,
                unserved_throughput=offered - served_tput,
                offered_throughput=offered,
                served_throughput=served_tput,
                splits=self._cycle_splits,
                reports_written=written,
                bundles=self.topology.num_live_bundles,
                decisions=self._cycle_decisions,
            )
        )

    # ------------------------------------------------------------------ traffic

    def _bundle_sums(self, traffic: TopicTraffic) -> BundleTraffic:
        n = self.topology.num_bundle_ids
        tb = self.topology.topic_bundle
        done: dict[int, np.ndarray] = {}

        def total(values: np.ndarray) -> np.ndarray:
            summed = done.get(id(values))
            if summed is not None:  # one array for two quantities (a fanout of 1): summed once
                return summed.copy()
            summed = done[id(values)] = np.bincount(tb, weights=values, minlength=n)
            return summed

        producers, consumers, topics = self._count_sums(traffic, tb, n)
        return BundleTraffic(
            msg_rate_in=total(traffic.msg_rate_in),
            msg_rate_out=total(traffic.msg_rate_out),
            msg_throughput_in=total(traffic.msg_throughput_in),
            msg_throughput_out=total(traffic.msg_throughput_out),
            producers=producers,
            consumers=consumers,
            topics=topics,
        )

    def _count_sums(self, traffic: TopicTraffic, tb: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
        """Producers, consumers and active topics per bundle; kept while the counts are the same
        arrays (every topic active: the workload's own) and no topic moved to another bundle."""
        sources = (traffic.producers, traffic.consumers, traffic.active)
        cached = self._counts
        if (
            cached is not None
            and cached[0] == (self.topology.version, n)
            and all(map(is_, cached[1], sources))
        ):
            return cached[2]
        sums = tuple(np.bincount(tb, weights=values, minlength=n).astype(np.int64) for values in sources)
        for summed in sums:
            summed.flags.writeable = False  # shared by the cycles that reuse it
        self._counts = ((self.topology.version, n), sources, sums)
        return sums

    def _broker_sums(self, bundle: BundleTraffic, served: np.ndarray) -> dict[str, np.ndarray]:
        owner = self.ownership.owner[served]
        n = len(self.brokers)

        def total(values: np.ndarray) -> np.ndarray:
            return np.bincount(owner, weights=values[served], minlength=n)

        rate_in, rate_out = total(bundle.msg_rate_in), total(bundle.msg_rate_out)
        return {
            "rate_in": rate_in,
            "rate_out": rate_out,
            "rate": rate_in + rate_out,
            "tput_in": total(bundle.msg_throughput_in),
            "tput_out": total(bundle.msg_throughput_out),
            "bundles": np.bincount(owner, minlength=n),
            "topics": total(bundle.topics.astype(float)),
        }

    def _check_invariants(
        self, traffic: TopicTraffic, served: np.ndarray, totals: dict[str, np.ndarray]
    ) -> None:
        from brokerlb.testing.simulation import assert_load_conserved, assert_topics_in_live_bundles

        topo = self.topology
        assert_topics_in_live_bundles(topo.topic_bundle, topo.topic_ns, topo.bundle_live, topo.bundle_ns)
        assert_load_conserved(
            {
                "rate_in": traffic.msg_rate_in,
                "rate_out": traffic.msg_rate_out,
                "tput_in": traffic.msg_throughput_in,
                "tput_out": traffic.msg_throughput_out,
            },
            topo.topic_bundle,
            np.maximum(self.ownership.owner, 0),
            served,
            {q: totals[q] for q in ("rate_in", "rate_out", "tput_in", "tput_out")},
            label=f"cycle {self._cycle}",
        )

    # ------------------------------------------------------------------ reports

    def _write_reports(
        self, usage: BrokerUsage, totals: dict[str, np.ndarray], served: np.ndarray, bundle: BundleTraffic
    ) -> int:
        conf = self.config
        now = self.now_ms
        bundle.check()
        owner = self.ownership.owner
        if not conf.brokerlbReportOwnedIdleBundles:
            # Pulsar's report lists only the bundles with loaded topics (numBundles counts them)
            served = served & (bundle.topics > 0)
            totals = {**totals, "bundles": np.bincount(owner[served], minlength=len(self.brokers))}
        served_ids = np.flatnonzero(served)
        owners_of_served = owner[served_ids]
        up = self.broker_up
        extensible = self.leader is not None and self.leader.extensible
        if extensible:
            decide = np.flatnonzero(up)
        else:
            decide = self.writer.candidates(
                now,
                up,
                self.writer.max_usage(usage),
                totals["rate"],
                totals["tput_in"] + totals["tput_out"],
                totals["bundles"],
                conf,
            )
        weights = ResourceWeights.from_config(conf) if extensible else None
        k = conf.loadBalancerMaxNumberOfBundlesInBundleLoadReport
        policies = None if conf.loadBalancerSheddingBundlesWithPoliciesEnabled else self._has_policies
        excluded = conf.loadBalancerSheddingExcludedNamespaces
        reportable = self._reportable_bundles(excluded, policies is not None) if extensible else None
        written = 0
        for i in decide:
            b = self.brokers[int(i)]
            system = self.writer.usage_of(b.index, usage)
            sums = (
                float(totals["rate_in"][i]),
                float(totals["rate_out"][i]),
                float(totals["tput_in"][i]),
                float(totals["tput_out"][i]),
                int(totals["bundles"][i]),
            )
            mine = served_ids[owners_of_served == i]
            if extensible:
                assert weights is not None
                if self.writer.publish_load_data(
                    b, now, system, sums, int(totals["topics"][i]), conf, weights
                ):
                    self._mark_changed()
                self.writer.publish_top_bundles(
                    b, mine, bundle, self.topology.bundle_names, k, policies, excluded, reportable
                )
            if self.writer.write_local_data(
                b, now, system, sums, mine, bundle, self.topology.bundle_names, conf
            ):
                written += 1
                self._mark_changed()
                if self.history is not None:
                    self.history.report(b)
        return written

    def _has_policies(self, bundle: str) -> bool:
        return bundle.rpartition("/")[0] in self.anti_affinity

    def _reportable_bundles(self, excluded: frozenset[str], skip_policies: bool) -> np.ndarray:
        """A bool per bundle id: may a broker's top-K report hold it (Pulsar's ``TopKBundles``:
        not a system namespace, not an excluded one, no policies unless they are allowed)?
        Every rule is per namespace, so it is decided once per namespace."""
        skip = np.fromiter(
            (
                is_system_service_namespace(ns)
                or ns in excluded
                or (skip_policies and ns in self.anti_affinity)
                for ns in self.topology.namespaces
            ),
            dtype=bool,
            count=len(self.topology.namespaces),
        )
        return ~skip[self.topology.bundle_ns]
