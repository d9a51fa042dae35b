"""The simulation's leader duties: election, the leader's cycle, and executing its decisions.

:class:`LeaderDuties` is a part of :class:`~brokerlb.sim.simulation.Simulation` (a mixin; it
uses the simulation's brokers, topology, ownership table, timeline and config). The leader is
the live broker's own :class:`~brokerlb.loadbalance.leader.Leader`, driven through the same
steps (:mod:`brokerlb.loadbalance.cycle`); the simulation is its scheduler and its executor:

* election -- the longest-registered live broker leads; a new leader starts with empty strategy
  memory and the previous leader's bundle histories;
* the schedule -- refresh when reports changed, shedding every
  ``loadBalancerSheddingIntervalMinutes``, the split check (after a refresh for the modular
  load manager, every ``loadBalancerSplitIntervalMinutes`` for the extensible one);
* the executor (:class:`SimActions`) -- moves: a transfer releases the bundle straight to its
  destination, an unload frees it for the clients' next lookup (``timing.transfer`` /
  ``timing.unload``); splits replace a bundle by its children on the ring (owned by the
  parent's owner, unloaded as :func:`~brokerlb.loadbalance.registry.unloads_split_children` says,
  each carrying its topics' traffic as moved throughput); merges unload
  the parts, which leave the ring, and the merged bundle is placed at the next lookup (as the
  broker's merge assigns it through placement). A decision on a bundle that is no longer owned
  by a live broker is not carried out.

The leader's inputs say who owns each bundle now (``ClusterInputs.owner_of``), so a strategy's
move of a bundle its source no longer owns -- read from a stale report -- is skipped by the
leader as ``Skip``/``NotOwned``, as the live leader does; a move the ownership machine still
refuses is not carried out (``unload/NotExecuted/Refused``) and the run goes on.

CPU time spent inside the leader's steps is added to ``engine_seconds`` (CPU, not wall time,
so the share stays meaningful on a busy machine).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from brokerlb.config import ServiceConfig
from brokerlb.errors import InvalidTransitionError
from brokerlb.loadbalance.broker_lookup import BrokerLookupData
from brokerlb.loadbalance.cycle import CycleRecord, LeaderSchedule, run_now, shedding_cycle, split_cycle
from brokerlb.loadbalance.decisions import MergeDecision, SplitDecision
from brokerlb.loadbalance.leader import ClusterInputs, Leader, Move
from brokerlb.loadbalance.policies import NamespacePolicy
from brokerlb.loadbalance.registry import unloads_split_children
from brokerlb.model import BundleData, LocalBrokerData
from brokerlb.sim.brokers import SimBroker
from brokerlb.sim.ownership import BundleState
from brokerlb.sim.parts import SimulationParts

__all__ = ["LeaderDuties", "LeaderFactory", "SimActions", "new_leader"]

#: builds a leader: (broker id, config, seeded rng, persisted bundle histories) -> leader
LeaderFactory = Callable[[str, ServiceConfig, random.Random, Mapping[str, BundleData]], Leader]


def new_leader(
    broker_id: str, config: ServiceConfig, rng: random.Random, stored: Mapping[str, BundleData]
) -> Leader:
    """The real leader (tests of the simulator's own mechanics pass a scripted one)."""
    return Leader(broker_id, config, rng=rng, stored_bundle_data=stored)


class SimActions:
    """The simulation's :class:`~brokerlb.loadbalance.cycle.ClusterActions`: every action
    completes at once on the simulation's model (its delays run on the timeline)."""

    def __init__(self, duties: LeaderDuties) -> None:
        self._duties = duties

    def now_ms(self) -> int:
        return self._duties.now_ms

    async def move(self, moves: Sequence[Move]) -> list[bool]:
        return [self._duties._execute_move(m) for m in moves]

    async def split(self, splits: Sequence[SplitDecision]) -> list[bool]:
        return [self._duties._execute_split(d) for d in splits]

    async def merge(self, merges: Sequence[MergeDecision]) -> list[bool]:
        return [self._duties._execute_merge(d) for d in merges]


class LeaderDuties(SimulationParts):
    """Election, the leader's cycle and decision execution (module docstring)."""

    def _elect_leader(self) -> None:
        candidates = [i for i in self._registration_order if self.brokers[i].registered]
        new = candidates[0] if candidates else -1
        if new == self._leader_broker and self.leader is not None:
            return
        if self.leader is not None:
            # Pulsar's leader persists bundle histories (/loadbalance/bundle-data) every
            # loadBalancerResourceQuotaUpdateIntervalMinutes; the next leader reads them. The
            # simulator hands over the latest histories (not up to 15 minutes older ones).
            self._stored_bundle_data = self.leader.persisted_bundle_data()
        self._leader_broker = new
        if new < 0:
            self.leader = None
            self._schedule = None
            return
        rng = random.Random(self._leader_seed + len(self._registration_order) * 7919 + new)
        self.leader = self._leader_factory(
            self.broker_ids[new], self.config, rng, dict(self._stored_bundle_data)
        )
        self._mark_changed(structure=True)
        self._schedule = LeaderSchedule(self.config, self.now_ms)

    def _reports(self) -> dict[str, LocalBrokerData | None]:
        """What the leader reads under ``/loadbalance/brokers``: registered brokers' reports."""
        return {b.broker_id: b.report for b in self.brokers if b.registered}

    @property
    def leader_available(self) -> bool:
        return self.leader is not None and self.brokers[self._leader_broker].up

    def _inputs(self) -> ClusterInputs:
        """What the leader reads now. Rebuilt only after reports, registrations or bundles changed;
        the lookup data and namespace policies only when the registered brokers or a namespace's
        bundles changed (reports change every cycle, those rarely)."""
        if self._cached_inputs is not None and self._inputs_version == self._change_version:
            return self._cached_inputs
        registered = [b for b in self.brokers if b.registered]
        inputs = ClusterInputs(
            reports=self._reports(),
            broker_load_data={
                b.broker_id: b.published_load_data for b in registered if b.published_load_data is not None
            },
            top_bundles={b.broker_id: b.top_bundles for b in registered if b.top_bundles is not None},
            broker_lookup=self._broker_lookup(registered),
            ownership=self.ownership.ownership_map,  # computed only if the leader asks
            namespace_policies=self._namespace_policies(),
            owner_of=self._owner_of,
        )
        self._cached_inputs = inputs
        self._inputs_version = self._change_version
        return inputs

    def _broker_lookup(self, registered: list[SimBroker]) -> dict[str, BrokerLookupData]:
        key = tuple(b.broker_id for b in registered)
        cached = self._lookup_inputs
        if cached is not None and cached[0] == key:
            return cached[1]
        lookup = {
            b.broker_id: BrokerLookupData(
                web_service_url=f"http://{b.broker_id}",
                broker_version=b.spec.version,
                load_manager_class_name=self.config.loadManagerClassName,
            )
            for b in registered
        }
        self._lookup_inputs = (key, lookup)
        return lookup

    def _namespace_policies(self) -> dict[str, NamespacePolicy]:
        topo = self.topology
        key = tuple(map(id, topo.ns_bundles))  # a split or merge replaces the namespace's bundles
        cached = self._policy_inputs
        if cached is not None and cached[0] == key:
            return cached[1]
        policies = {
            ns: NamespacePolicy(anti_affinity_group=self.anti_affinity.get(ns), bundles=topo.ns_bundles[i])
            for ns, i in topo.ns_index.items()
        }
        self._policy_inputs = (key, policies)
        return policies

    def _leader_cycle(self) -> None:
        if not self.leader_available:
            return
        leader, schedule = self.leader, self._schedule
        assert leader is not None and schedule is not None
        now = self.now_ms
        started = time.process_time()
        refreshed = self._ensure_refreshed(self._inputs())
        actions = SimActions(self)
        if schedule.due("shedding", now):
            schedule.done("shedding", now)
            phase = time.process_time()
            self._count(run_now(shedding_cycle(leader, actions, self._inputs())))
            self._phase("shed", phase)
        if schedule.split_after_refresh:
            split_due = refreshed
        else:
            split_due = schedule.due("split", now)
            if split_due:
                schedule.done("split", now)
        if split_due:
            phase = time.process_time()
            self._count(run_now(split_cycle(leader, actions, self._inputs())))
            self._phase("split", phase)
        self.engine_seconds += time.process_time() - started

    def _ensure_refreshed(self, inputs: ClusterInputs) -> bool:
        """The leader's ``updateAll`` runs on every change under ``/loadbalance/brokers``;
        changes since its last run are folded in before it decides anything (new reports at most
        every ``timing.refresh_interval``; registrations, departures and splits at once)."""
        if self.leader is None or not (self._reports_changed or self._structure_changed):
            return False
        now = self.now_ms
        if (
            not self._structure_changed
            and now - self._last_refresh_ms < self.scenario.timing.refresh_interval * 1000
        ):
            return False
        phase = time.process_time()
        self.leader.refresh(now, inputs)
        self._phase("refresh", phase)
        self._reports_changed = self._structure_changed = False
        self._last_refresh_ms = now
        self.refreshes += 1
        return True

    def _phase(self, name: str, started: float) -> None:
        """Add the CPU time since ``started`` to engine phase ``name`` (part of ``engine_seconds``)."""
        entry = self.engine_phases.get(name)
        if entry is None:
            entry = self.engine_phases[name] = [0.0, 0]
        entry[0] += time.process_time() - started
        entry[1] += 1

    def _count(self, record: CycleRecord) -> None:
        self._cycle_decisions.update(record.decision_keys())

    # ------------------------------------------------------------------ executing decisions

    def _owner_of(self, bundle: str) -> str | None:
        """The broker that owns ``bundle`` now (``None``: in transit, free or gone)."""
        b = self.topology.bundle_index.get(bundle)
        if b is None or self.ownership.state[b] != BundleState.OWNED:
            return None
        return self.broker_ids[int(self.ownership.owner[b])]

    def _execute_move(self, move: Move) -> bool:
        """Release a bundle for a move (``False`` if it is no longer owned by a live broker)."""
        b = self.topology.bundle_index.get(move.bundle)
        if b is None or self.ownership.state[b] != BundleState.OWNED:
            return False  # split or moved meanwhile: Pulsar's unload of an unowned bundle is a no-op
        if not self.brokers[int(self.ownership.owner[b])].up:
            return False
        now = self.now_ms
        dest = self.broker_index.get(move.destination, -1) if move.transfer and move.destination else -1
        try:
            self.ownership.release(
                b,
                now,
                "transfer" if dest >= 0 else "shed",
                self._throughput_of(b),
                destination=dest,
                detail=f"{move.reason}: {move.detail}".strip(": "),
            )
        except InvalidTransitionError:
            # the ownership machine refused the move and changed nothing: one bad decision of a
            # strategy is not carried out, and the simulation goes on (counted in the decisions)
            self._cycle_decisions["unload/NotExecuted/Refused"] += 1
            return False
        delay = self.scenario.timing.transfer if dest >= 0 else self.scenario.timing.unload
        self.timeline.schedule(now + delay * 1000, "release_done", (b, dest))
        return True

    def _execute_split(self, decision: SplitDecision) -> bool:
        """Split a bundle on the ring. Pulsar's split runs on the owner; a bundle without a live
        owner right now (in transit) is not split -- the next check will see it again."""
        parent = self.topology.bundle_index.get(decision.bundle)
        if parent is None or not decision.boundaries:
            return False
        owner = int(self.ownership.owner[parent])
        if self.ownership.state[parent] != BundleState.OWNED or not self.brokers[owner].up:
            self._cycle_decisions["split/NotExecuted/NoOwner"] += 1
            return False
        now = self.now_ms
        children = self.topology.split(parent, decision.boundaries)
        self.ownership.grow(self.topology.num_bundle_ids)
        self.ownership.split(parent, children, now, f"{decision.reason}: {decision.detail}".strip(": "))
        self._cycle_splits += 1
        self._mark_changed(structure=True)
        if self.validate:
            from brokerlb.testing import assert_ring_covers_keyspace

            assert_ring_covers_keyspace(self.topology.ns_bundles[int(self.topology.bundle_ns[parent])])
        if unloads_split_children(self.config):
            for child, throughput in zip(children, self._children_throughput(children), strict=True):
                self.ownership.release(
                    child, now, "split", throughput, detail=f"unload after splitting {decision.bundle}"
                )
                self.timeline.schedule(now + self.scenario.timing.unload * 1000, "release_done", (child, -1))
        return True

    def _children_throughput(self, children: Sequence[int]) -> list[float]:
        """Each split child's throughput at the last sample: the traffic of its topics (the
        bundle sums know only the parent), what an unloaded child moves if placed elsewhere."""
        traffic = self._topic_traffic
        if traffic is None:
            return [0.0] * len(children)
        tb = self.topology.topic_bundle
        ids = np.flatnonzero(np.isin(tb, children))
        sums = np.bincount(
            np.searchsorted(np.sort(children), tb[ids]),
            weights=traffic.msg_throughput_in[ids] + traffic.msg_throughput_out[ids],
            minlength=len(children),
        )
        order = np.argsort(children)
        out = np.zeros(len(children))
        out[order] = sums
        return [float(x) for x in out]

    def _execute_merge(self, decision: MergeDecision) -> bool:
        """Merge adjacent bundles on the ring. Every part must be live and owned by a live broker
        (a part in transit leaves the merge for a later cycle)."""
        now = self.now_ms
        parts = [self.topology.bundle_index.get(name) for name in decision.bundles]
        if any(
            b is None
            or self.ownership.state[b] != BundleState.OWNED
            or not self.brokers[int(self.ownership.owner[b])].up
            for b in parts
        ):
            self._cycle_decisions["merge/NotExecuted/NoOwner"] += 1
            return False
        ids = [int(b) for b in parts if b is not None]
        throughputs = [self._throughput_of(b) for b in ids]
        merged = self.topology.merge(ids)
        self.ownership.grow(self.topology.num_bundle_ids)
        ns = int(self.topology.bundle_ns[merged])
        ring = tuple(self.topology.bundle_names[i] for i in self.topology.ns_bundle_ids[ns])
        detail = f"{decision.reason}: {decision.detail}".strip(": ")
        self.ownership.merge(ids, merged, now, ring, throughputs, detail)
        self._mark_changed(structure=True)
        if self.validate:
            from brokerlb.testing import assert_ring_covers_keyspace

            assert_ring_covers_keyspace(self.topology.ns_bundles[ns])
        self.timeline.schedule(now + self.scenario.timing.unload * 1000, "lookup", merged)
        self.ownership.lookup_pending[merged] = True
        return True
