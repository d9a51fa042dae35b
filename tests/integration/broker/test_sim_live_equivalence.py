"""The simulator's leader and the live broker's leader decide alike on the same input.

A simulation runs with a leader that records what it is given at each step -- every refresh's
reports, the namespaces' bundles and anti-affinity groups, the step's time -- and what it
decides. The same history is then played into the live broker's leader path on a metadata
store: the reports are written as JSON into ``/loadbalance/brokers``, the namespaces' policies
into ``/admin/local-policies``, and read back through the broker's caches
(:class:`~brokerlb.broker.leader.leader_inputs.LeaderInputs`); its
:class:`~brokerlb.broker.leader.load_manager.LoadManager` refreshes and places, its
:class:`~brokerlb.broker.leader.leader.LeaderTasks` sheds and splits, with an executor that carries out
what the simulation carried out. Every shedding, split and placement decision must be equal.

The ownership machine is compared the same way: the simulation's writes to its ownership table are
replayed into the table in a metadata store, and each broker's own answers (takes, split commits,
the ends of releases) must be what that broker's live machine proposes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from brokerlb.broker.leader.leader import LeaderTasks
from brokerlb.broker.leader.leader_inputs import LeaderInputs
from brokerlb.broker.leader.load_manager import LoadManager
from brokerlb.broker.leader.policies_cache import ClusterPoliciesCache
from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
from brokerlb.clock import ManualClock
from brokerlb.coordination import BrokerRegistry, BundleMetadata, LoadDataStore, OwnershipTable, open_store
from brokerlb.coordination.paths import BROKERS_ROOT, local_policies_path
from brokerlb.coordination.records import LocalPolicies, encode_json
from brokerlb.errors import NoBrokerAvailableError
from brokerlb.loadbalance.leader import Leader
from brokerlb.ownership import BundleState
from brokerlb.ownership.events import (
    BrokersChanged,
    CommitSplit,
    RecordChanged,
    Release,
    Released,
    SessionChanged,
    Write,
)
from brokerlb.ownership.machine import OwnershipMachine
from brokerlb.ownership.record import OwnershipRecord
from brokerlb.ring import NamespaceBundle
from brokerlb.sim import Simulation
from brokerlb.sim.runner import prepare
from brokerlb.testing import eventually
from tests.sim.conftest import small_scenario

pytestmark = pytest.mark.asyncio

#: a hot topic, a namespace that grows past the split threshold, more traffic (no leader change:
#: the history is one leader's)
EVENTS = [
    {"at": "5m", "type": "hot_topic", "namespace": "t/ns-1", "topic": 3, "factor": 40, "ramp": "2m"},
    {"at": "8m", "type": "namespace_growth", "namespace": "t/ns-2", "topics": 2500, "over": "10m"},
    {"at": "20m", "type": "scale_traffic", "factor": 1.5, "ramp": "5m"},
]


@dataclass
class Step:
    kind: str
    now: int
    namespaces: dict[str, tuple[dict[str, Any], str | None]]
    reports: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    bundle: str = ""
    decided: Any = None
    executed: list[str] = field(default_factory=list)
    #: shed: who owned each bundle the leader asked about
    owners: dict[str, str | None] = field(default_factory=dict)


class RecordingLeader(Leader):
    """The simulation's leader, recording its input and its decisions (one per test run)."""

    last: RecordingLeader | None = None

    def __init__(self, broker_id, config, rng, stored):
        self.rng_state = rng.getstate()
        super().__init__(broker_id, config, rng=rng, stored_bundle_data=stored)
        self.steps: list[Step] = []
        type(self).last = self

    @staticmethod
    def _namespaces(inputs) -> dict[str, tuple[dict[str, Any], str | None]]:
        return {
            ns: (policy.bundles.to_json(), policy.anti_affinity_group)
            for ns, policy in inputs.namespace_policies.items()
        }

    def refresh(self, now_ms, inputs, *, stored=None):
        reports = {b: (r.to_json() if r is not None else None) for b, r in inputs.reports.items()}
        self.steps.append(Step("refresh", now_ms, self._namespaces(inputs), reports))
        return super().refresh(now_ms, inputs, stored=stored)

    def shed(self, now_ms, inputs):
        asked: dict[str, str | None] = {}  # the owners the leader asked about, and the answers

        def owner_of(bundle: str) -> str | None:
            asked[bundle] = inputs.owner_of(bundle)
            return asked[bundle]

        result, moves = super().shed(now_ms, replace(inputs, owner_of=owner_of))
        step = Step("shed", now_ms, self._namespaces(inputs), decided=(result, moves), owners=asked)
        self.steps.append(step)
        return result, moves

    def moves_executed(self, result, executed, now_ms):
        self.steps[-1].executed = [m.bundle for m in executed]
        return super().moves_executed(result, executed, now_ms)

    def split_check(self, now_ms, inputs):
        result = super().split_check(now_ms, inputs)
        self.steps.append(Step("split", now_ms, self._namespaces(inputs), decided=result))
        return result

    def place(self, now_ms, bundle, inputs, *, non_persistent=False):
        decision = super().place(now_ms, bundle, inputs, non_persistent=non_persistent)
        self.steps.append(Step("place", now_ms, self._namespaces(inputs), bundle=bundle, decided=decision))
        return decision


class Lease:
    epoch = 1

    def check(self) -> None:
        pass


class ReplayActions:
    """Carries out what the simulation carried out (the moves of the step being replayed)."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.executed: set[str] = set()

    def now_ms(self) -> int:
        return self.clock.now_ms()

    async def move(self, moves):
        return [m.bundle in self.executed for m in moves]

    async def split(self, splits):
        return [True for _ in splits]

    async def merge(self, merges):
        return [True for _ in merges]


class LivePath:
    """The live broker's leader components on a metadata store, fed by the recorded history."""

    def __init__(self, store, config, leader: Leader, clock: ManualClock) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.leader = leader
        self.written: dict[str, tuple[dict[str, Any], str | None]] = {}
        self.reports: dict[str, bytes] = {}
        #: who owns each bundle, as the simulation answered the step being replayed
        self.owners: dict[str, str | None] = {}

    async def start(self) -> LivePath:
        store = self.store
        self.registry = await BrokerRegistry(store).start()
        self.metadata = BundleMetadata(store, default_num_bundles=4)
        self.bundles = NamespaceBundlesCache(store, self.metadata)
        self.policies = await ClusterPoliciesCache(store, "sim").start()
        self.actions = ReplayActions(self.clock)
        self.lm = LoadManager(
            self.leader,
            LeaderInputs(self.registry, self.bundles, self.policies, owner_of=lambda b: self.owners.get(b)),
            bundles=self.bundles,
            load_data_store=LoadDataStore(store),
            clock=self.clock,
        )
        self.tasks = LeaderTasks(
            self.lm,
            self.actions,  # type: ignore[arg-type]
            conf=self.config,
            registry=self.registry,
            load_data_store=LoadDataStore(store),
            clock=self.clock,
        )
        return self

    async def write_namespaces(self, namespaces: dict[str, tuple[dict[str, Any], str | None]]) -> None:
        for ns, (bundles, group) in namespaces.items():
            if self.written.get(ns) == (bundles, group):
                continue
            if ns not in self.written:
                await self.metadata.create_namespace(ns, boundaries=bundles["boundaries"])
            local = LocalPolicies(bundles=bundles, namespace_anti_affinity_group=group)
            await self.store.set(local_policies_path(ns), encode_json(local.to_json()))
            self.written[ns] = (bundles, group)
        for ns, (bundles, group) in namespaces.items():
            await eventually(
                lambda ns=ns, bundles=bundles, group=group: self._cache_shows(ns, bundles, group),
                timeout=20,
                message=f"the bundles cache shows {ns}",
            )

    def _cache_shows(self, ns: str, bundles: dict[str, Any], group: str | None) -> bool:
        found = self.bundles.policy_of(ns)
        if found is None:
            return True  # not loaded yet: the first read will see the store
        return found[0].to_json() == bundles and found[1] == group

    async def write_reports(self, reports: dict[str, dict[str, Any] | None]) -> None:
        for broker, report in reports.items():
            data = encode_json(report) if report is not None else b""
            path = f"{BROKERS_ROOT}/{broker}"
            if broker in self.reports:
                await self.store.set(path, data)
            else:
                await self.store.create(path, data)
            self.reports[broker] = data
        for broker in set(self.reports) - set(reports):
            await self.store.delete(f"{BROKERS_ROOT}/{broker}")
            del self.reports[broker]
        await eventually(self._registry_shows_reports, timeout=20, message="the registry shows the reports")

    def _registry_shows_reports(self) -> bool:
        if sorted(self.registry.available_brokers()) != sorted(self.reports):
            return False
        return all(
            (n := self.registry.broker_node(b)) is not None and n.data == d for b, d in self.reports.items()
        )


def decisions_of(result) -> list[dict[str, Any]]:
    return [d.to_json() for d in result.decisions]


@pytest.mark.parametrize(
    ("strategy", "overrides"),
    [
        ("OverloadShedder", {}),
        ("UniformLoadShedder+LeastResourceUsageWithWeight", {}),
        ("OverloadShedder", {"brokerlbModularTransferEnabled": "false"}),  # unloads with an affinity
    ],
)
async def test_the_live_leader_decides_as_the_simulated_one_on_the_same_history(strategy, overrides) -> None:
    scenario, config_overrides, _ = prepare(
        small_scenario(EVENTS, minutes=30),
        strategy,
        {"loadBalancerNamespaceBundleMaxTopics": "200", **overrides},
    )
    sim = Simulation(scenario, config_overrides=config_overrides, leader_factory=RecordingLeader)
    result = sim.run()
    recorder = RecordingLeader.last
    assert recorder is not None and result.summary["splits"] > 0
    kinds = {s.kind for s in recorder.steps}
    assert kinds == {"refresh", "shed", "split", "place"}, "the history exercises every step"
    moves = [m for s in recorder.steps if s.kind == "shed" for m in s.decided[1]]
    assert moves and any(s.executed for s in recorder.steps if s.kind == "shed"), "shedding moved bundles"

    rng = random.Random()
    rng.setstate(recorder.rng_state)
    clock = ManualClock(recorder.steps[0].now)
    live_leader = Leader(recorder.broker_id, sim.config, rng=rng)
    store = open_store(f"memory:equivalence-{id(recorder)}")
    await store.start()
    try:
        live = await LivePath(store, sim.config, live_leader, clock).start()
        placed: list[Any] = []
        live.lm.add_placement_listener(placed.append)
        compared = {"shed": 0, "split": 0, "place": 0}
        for step in recorder.steps:
            clock.set_ms(max(step.now, clock.now_ms()))
            await live.write_namespaces(step.namespaces)
            if step.kind == "refresh":
                await live.write_reports(step.reports)
                await live.lm.refresh()
            elif step.kind == "shed":
                expected_result, expected_moves = step.decided
                live.actions.executed = set(step.executed)
                live.owners = step.owners
                record = await live.tasks.shed_once(Lease())
                assert [d.to_json() for d in record.decisions] == decisions_of(expected_result), step.now
                assert list(record.moves) == list(expected_moves), step.now
            elif step.kind == "split":
                record = await live.tasks.split_once(Lease())
                assert [d.to_json() for d in record.decisions] == decisions_of(step.decided), step.now
            else:
                try:
                    await live.lm.place(NamespaceBundle.parse(step.bundle))
                except NoBrokerAvailableError:
                    pass
                assert placed[-1].to_json() == step.decided.to_json(), (step.now, step.bundle)
            compared[step.kind] = compared.get(step.kind, 0) + 1
        assert all(compared[k] > 0 for k in ("shed", "split", "place")), compared
    finally:
        await store.close()


def _same(a: OwnershipRecord | None, b: OwnershipRecord | None) -> bool:
    """Records equal but for when they were written (the simulation's clock is not the replay's)."""
    if a is None or b is None:
        return a is b
    return replace(a, timestamp=0) == replace(b, timestamp=0)


async def test_the_live_brokers_ownership_machines_act_as_the_simulated_one_on_the_same_table() -> None:
    """The simulator runs the ownership machine acting for every broker over its table; the live
    brokers each run one acting for themselves over the table in the metadata store. Every write
    the simulation made is replayed into an :class:`OwnershipTable` on a store, by compare-and-set
    (the store agrees with the simulation's versions), and each write that is a broker's own answer
    to a record naming it -- a take, a split's commit, the end of a release -- is exactly the one
    that broker's live machine proposes when it sees the record before it."""
    scenario, config_overrides, _ = prepare(
        small_scenario(EVENTS, minutes=30), "OverloadShedder", {"loadBalancerNamespaceBundleMaxTopics": "200"}
    )
    sim = Simulation(scenario, config_overrides=config_overrides)
    sim.ownership.journal = []
    result = sim.run()
    journal = sim.ownership.journal
    assert result.summary["splits"] > 0 and len(journal) > 50
    sessions = sim.ownership.sessions()
    store = open_store(f"memory:ownership-equivalence-{id(sim)}")
    await store.start()
    try:
        table = await OwnershipTable(store).start()
        machines = {b: OwnershipMachine(me=b) for b in sim.broker_ids}
        for broker, machine in machines.items():
            machine.handle(
                SessionChanged(session=sessions[broker], at_ms=0),
                BrokersChanged(sessions=sessions, at_ms=0),
            )
        proposed: dict[str, list[OwnershipRecord | None]] = {}  # bundle -> the live machines' own answers
        answers = {"take": 0, "commit": 0, "release": 0}
        for w in journal:
            stored = await table.read(w.bundle)
            answer = (
                w.record is not None
                and not w.record.force
                and (
                    (
                        w.record.state is BundleState.OWNED
                        and w.reason in ("assignment taken", f"child of split {w.bundle}")
                    )
                    or w.reason.startswith("child of split")
                    or w.reason == "split committed"
                    or w.reason.startswith("released")
                )
            )
            if answer:
                kind = (
                    "take"
                    if w.reason == "assignment taken"
                    else "release"
                    if w.reason.startswith("released")
                    else "commit"
                )
                assert any(_same(p, w.record) for p in proposed.get(w.bundle, [])), (
                    f"{w.bundle}: the simulation wrote {w.record} ({w.reason}); the live machines proposed "
                    f"{proposed.get(w.bundle)}"
                )
                answers[kind] += 1
            await table.write(
                Write(
                    bundle=w.bundle, record=w.record, expected=-1 if stored is None else stored.stat_version
                )
            )
            after = await table.read(w.bundle)
            event = RecordChanged(
                bundle=w.bundle,
                record=None if after is None else after.record,
                stat_version=-1 if after is None else after.stat_version,
                zxid=0 if after is None else after.zxid,
                at_ms=0,
            )
            proposed[w.bundle] = []
            for machine in machines.values():
                for i in machine.handle(event):
                    if isinstance(i, Write):
                        proposed[i.bundle] = [*proposed.get(i.bundle, []), i.record]
                    elif isinstance(i, Release):  # the source's release step; then what it writes
                        for j in machine.handle(Released(bundle=i.bundle, version=i.version, at_ms=0)):
                            if isinstance(j, Write):
                                proposed[j.bundle] = [*proposed.get(j.bundle, []), j.record]
                    elif isinstance(i, CommitSplit):
                        for c in machine.split_commit(i.bundle, at_ms=0):
                            proposed[c.bundle] = [*proposed.get(c.bundle, []), c.record]
        assert answers["take"] > 0 and answers["commit"] > 0 and answers["release"] > 0, answers
        table.close()
    finally:
        await store.close()
