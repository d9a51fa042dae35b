"""The simulation's leader duties: election, the leader's cycle, and executing its decisions.

:class:`LeaderDuties` is a part of :class:`~brokerlb.sim.simulation.Simulation` (a mixin; it
uses the simulation's brokers, topology, ownership table, timeline and config):

* election -- the longest-registered live broker leads; a new leader starts with empty strategy
  memory and the previous leader's bundle histories;
* the leader's cycle -- refresh when reports changed, shedding every
  ``loadBalancerSheddingIntervalMinutes``, the split check (after a refresh for the modular
  load manager, every ``loadBalancerSplitIntervalMinutes`` for the extensible one);
* executing decisions -- unloads (with the destination as a one-shot affinity for the next
  lookup), transfers (straight to the destination), splits (children owned by the parent's
  owner, unloaded if ``loadBalancerAutoUnloadSplitBundlesEnabled``), merges (the parts are
  unloaded and leave the ring; the merged bundle is placed at the next lookup, as the broker's
  admin merge assigns it through the placement pipeline).

CPU time spent inside the decision engine is added to ``engine_seconds`` (CPU, not wall time,
so the share stays meaningful on a busy machine).
"""

from __future__ import annotations

import random
import time
from typing import Any

from brokerlb.model import LocalBrokerData
from brokerlb.sim.leader import ClusterInputs
from brokerlb.sim.ownership import BundleState
from brokerlb.sim.parts import SimulationParts

__all__ = ["LeaderDuties"]


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
            return
        rng = random.Random(self._leader_seed + len(self._registration_order) * 7919 + new)
        self.leader = self._leader_factory(
            self.broker_ids[new], self.config, rng, dict(self._stored_bundle_data)
        )
        self._mark_changed(structure=True)
        now = self.now_ms
        self._next_shed_ms = now + self.config.duration_seconds("loadBalancerSheddingIntervalMinutes") * 1000
        self._next_split_ms = now + self.config.duration_seconds("loadBalancerSplitIntervalMinutes") * 1000

    def _reports(self) -> dict[str, LocalBrokerData | None]:
        """What the leader reads under ``/loadbalance/brokers``: registered brokers' reports."""
        return {b.broker_id: b.report for b in self.brokers if b.registered}

    @property
    def leader_available(self) -> bool:
        return self.leader is not None and self.brokers[self._leader_broker].up

    def _inputs(self) -> ClusterInputs:
        """What the leader reads now. Rebuilt only after reports, registrations or bundles changed."""
        if self._cached_inputs is not None and self._inputs_version == self._change_version:
            return self._cached_inputs
        registered = [b for b in self.brokers if b.registered]
        topo = self.topology
        inputs = ClusterInputs(
            reports=self._reports(),
            broker_load_data={
                b.broker_id: b.published_load_data for b in registered if b.published_load_data is not None
            },
            top_bundles={b.broker_id: b.top_bundles for b in registered if b.top_bundles is not None},
            brokers={b.broker_id: b.spec for b in registered},
            ownership=self.ownership.ownership_map,  # computed only if the leader asks
            namespace_bundles={ns: topo.ns_bundles[i] for ns, i in topo.ns_index.items()},
            anti_affinity=self.anti_affinity,
        )
        self._cached_inputs = inputs
        self._inputs_version = self._change_version
        return inputs

    def _leader_cycle(self) -> None:
        if not self.leader_available:
            return
        leader = self.leader
        assert leader is not None
        now = self.now_ms
        conf = self.config
        inputs = self._inputs()
        started = time.process_time()
        refreshed = self._ensure_refreshed(inputs)
        if now >= self._next_shed_ms:
            self._next_shed_ms += conf.duration_seconds("loadBalancerSheddingIntervalMinutes") * 1000
            phase = time.process_time()
            result = leader.shed(now, inputs)
            self._phase("shed", phase)
            self._count("unload", result.decisions)
            self._execute_unloads(result.unloads)
            # ring changes a balancing strategy decided in its cycle (Pulsar's shedders decide none)
            self._count("split", result.split_decisions)
            self._execute_splits(result.splits)
            self._count("merge", result.merge_decisions)
            self._execute_merges(result.merges)
        split_due = refreshed if not leader.extensible else now >= self._next_split_ms
        if leader.extensible and split_due:
            self._next_split_ms += conf.duration_seconds("loadBalancerSplitIntervalMinutes") * 1000
        if split_due and conf.loadBalancerAutoBundleSplitEnabled:
            phase = time.process_time()
            split = leader.split(now, inputs)
            self._phase("split", phase)
            self._count("split", split.decisions)
            self._execute_splits(split.splits)
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

    def _count(self, kind: str, decisions: Any) -> None:
        for d in decisions:
            self._cycle_decisions[f"{kind}/{d.label}/{d.reason}"] += 1

    # ------------------------------------------------------------------ executing decisions

    def _execute_unloads(self, unloads: list[Any]) -> None:
        now = self.now_ms
        timing = self.scenario.timing
        assert self.leader is not None
        for decision in unloads:
            b = self.topology.bundle_index.get(decision.bundle)
            if b is None or self.ownership.state[b] != BundleState.OWNED:
                continue  # split or moved meanwhile: Pulsar's unload of an unowned bundle is a no-op
            if not self.brokers[int(self.ownership.owner[b])].up:
                continue
            dest = self.broker_index.get(decision.destination, -1) if decision.destination else -1
            transfer = self.leader.extensible and dest >= 0 and self.config.loadBalancerTransferEnabled
            cause = "transfer" if transfer else "shed"
            self.ownership.release(
                b,
                now,
                cause,
                self._throughput_of(b),
                destination=dest if transfer else -1,
                detail=f"{decision.reason}: {decision.detail}".strip(": "),
            )
            if dest >= 0 and not transfer:
                self._affinity[b] = dest
            delay = timing.transfer if transfer else timing.unload
            self.timeline.schedule(now + delay * 1000, "release_done", (b, dest if transfer else -1))

    def _execute_splits(self, splits: list[Any]) -> None:
        """Split bundles on the ring. Pulsar's split runs on the owner; a bundle without a live
        owner right now (in transit) is left alone -- the next check will see it again."""
        now = self.now_ms
        assert self.leader is not None
        for decision in splits:
            parent = self.topology.bundle_index.get(decision.bundle)
            if parent is None or not decision.boundaries:
                continue
            owner = int(self.ownership.owner[parent])
            if self.ownership.state[parent] != BundleState.OWNED or not self.brokers[owner].up:
                self._cycle_decisions["split/NotExecuted/NoOwner"] += 1
                continue
            children = self.topology.split(parent, decision.boundaries)
            self.ownership.grow(self.topology.num_bundle_ids)
            names = [self.topology.bundle_names[c] for c in children]
            self.ownership.split(parent, children, now, f"{decision.reason}: {decision.detail}".strip(": "))
            self._cycle_splits += 1
            self.leader.bundle_split(decision.bundle, names)
            self._mark_changed(structure=True)
            if self.validate:
                from brokerlb.testing import assert_ring_covers_keyspace

                assert_ring_covers_keyspace(self.topology.ns_bundles[int(self.topology.bundle_ns[parent])])
            if self.config.loadBalancerAutoUnloadSplitBundlesEnabled:
                for child in children:
                    self.ownership.release(
                        child, now, "split", 0.0, detail=f"unload after splitting {decision.bundle}"
                    )
                    self.timeline.schedule(
                        now + self.scenario.timing.unload * 1000, "release_done", (child, -1)
                    )

    def _execute_merges(self, merges: list[Any]) -> None:
        """Merge adjacent bundles on the ring. Every part must be live and owned by a live broker
        (a part in transit leaves the merge for a later cycle)."""
        now = self.now_ms
        assert self.leader is not None
        for decision in merges:
            parts = [self.topology.bundle_index.get(name) for name in decision.bundles]
            if any(
                b is None
                or self.ownership.state[b] != BundleState.OWNED
                or not self.brokers[int(self.ownership.owner[b])].up
                for b in parts
            ):
                self._cycle_decisions["merge/NotExecuted/NoOwner"] += 1
                continue
            ids = [int(b) for b in parts if b is not None]
            throughputs = [self._throughput_of(b) for b in ids]
            merged = self.topology.merge(ids)
            self.ownership.grow(self.topology.num_bundle_ids)
            ns = int(self.topology.bundle_ns[merged])
            ring = tuple(self.topology.bundle_names[i] for i in self.topology.ns_bundle_ids[ns])
            detail = f"{decision.reason}: {decision.detail}".strip(": ")
            self.ownership.merge(ids, merged, now, ring, throughputs, detail)
            self.leader.bundle_merged(list(decision.bundles), self.topology.bundle_names[merged])
            self._mark_changed(structure=True)
            if self.validate:
                from brokerlb.testing import assert_ring_covers_keyspace

                assert_ring_covers_keyspace(self.topology.ns_bundles[ns])
            self.timeline.schedule(now + self.scenario.timing.unload * 1000, "lookup", merged)
            self.ownership.lookup_pending[merged] = True
