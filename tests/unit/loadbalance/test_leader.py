"""The one leader (brokerlb.loadbalance.leader) and its cycle (brokerlb.loadbalance.cycle), on plain data."""

from __future__ import annotations

import random

import pytest

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance.cycle import LeaderSchedule, run_now, shedding_cycle, split_cycle
from brokerlb.loadbalance.decisions import Reason, SplitDecision
from brokerlb.loadbalance.leader import ClusterInputs, Leader, Move, is_transfer
from brokerlb.model import NamespaceBundleStats
from brokerlb.testing import broker

B1, B2, B3 = "b1:8080", "b2:8080", "b3:8080"
BUNDLE = "t/ns/0x00000000_0x40000000"
HOT = [f"t/ns/0x{i * 0x10000000:08x}_0x{(i + 1) * 0x10000000:08x}" for i in range(4)]


def inputs(**reports) -> ClusterInputs:
    return ClusterInputs(reports=reports or {B1: broker(B1, cpu=20), B2: broker(B2, cpu=10)})


def test_a_one_shot_affinity_holds_until_its_broker_reports_the_bundle() -> None:
    """brokerlbKeepPreallocationsUntilReported (the default): the affinity's broker is
    preallocated, so a second lookup before B2 took the bundle is sent to B2 too."""
    leader = Leader(B1, rng=random.Random(1))
    cluster = inputs()
    leader.refresh(0, cluster)
    leader.set_affinity(BUNDLE, B2)
    first = leader.place(0, BUNDLE, cluster)
    assert (first.broker, first.reason) == (B2, Reason.AFFINITY)
    second = leader.place(0, BUNDLE, cluster)
    assert (second.broker, second.reason) == (B2, Reason.PREALLOCATED)
    leader.refresh(1000, inputs(**{B1: broker(B1, cpu=20), B2: broker(B2, cpu=10, bundles=[BUNDLE])}))
    assert leader.load_state.preallocated_bundle_to_broker == {}


def test_pulsars_one_shot_affinity_answers_once() -> None:
    leader = Leader(B1, ServiceConfig(brokerlbKeepPreallocationsUntilReported=False), rng=random.Random(1))
    cluster = inputs()
    leader.refresh(0, cluster)
    leader.set_affinity(BUNDLE, B2)
    first = leader.place(0, BUNDLE, cluster)
    assert (first.broker, first.reason) == (B2, Reason.AFFINITY)
    second = leader.place(0, BUNDLE, cluster)
    assert second.reason is Reason.SELECTED  # the affinity was used once


def test_a_preallocation_ends_when_a_later_report_of_another_broker_lists_the_bundle() -> None:
    """A lookup raced the placement and B1 took the bundle: B2's preallocation would otherwise
    stay until B2 reports a bundle it will never own. A report B1 had written before the
    placement (the same report object folded again) does not end it."""
    leader = Leader(B1, rng=random.Random(1))
    before = broker(B1, cpu=20, bundles=[BUNDLE])  # B1 still lists it: its report predates the move
    cluster = inputs(**{B1: before, B2: broker(B2, cpu=10)})
    leader.refresh(0, cluster)
    leader.set_affinity(BUNDLE, B2)
    assert leader.place(0, BUNDLE, cluster).broker == B2
    leader.refresh(1000, cluster)  # the same reports: nothing new about the bundle
    assert leader.load_state.preallocated_bundle_to_broker == {BUNDLE: B2}
    leader.refresh(2000, inputs(**{B1: broker(B1, cpu=20, bundles=[BUNDLE]), B2: broker(B2, cpu=10)}))
    assert leader.load_state.preallocated_bundle_to_broker == {}
    assert BUNDLE not in leader.load_state.load_data.broker_data[B2].preallocated_bundle_data


def test_an_affinity_to_a_broker_that_left_falls_back_to_placement() -> None:
    leader = Leader(B1, rng=random.Random(1))
    cluster = inputs()
    leader.refresh(0, cluster)
    leader.set_affinity(BUNDLE, "gone:8080")
    decision = leader.place(0, BUNDLE, cluster)
    assert decision.broker in (B1, B2) and decision.reason is Reason.SELECTED


def test_a_placed_bundle_is_preallocated_and_kept_by_the_next_refresh() -> None:
    leader = Leader(B1, rng=random.Random(1))
    cluster = inputs()
    leader.refresh(0, cluster)
    first = leader.place(0, BUNDLE, cluster)
    assert leader.load_state.preallocated_bundle_to_broker == {BUNDLE: first.broker}
    leader.refresh(1000, cluster)  # the broker has not reported the bundle yet
    again = leader.place(1000, BUNDLE, cluster)
    assert (again.broker, again.reason) == (first.broker, Reason.PREALLOCATED)


def test_placement_indexes_rebuilt_between_placements_count_the_earlier_preallocations() -> None:
    """Even spread reads per-namespace range counts the leader keeps between refreshes; a policy
    change rebuilds the placement indexes, which must still see every bundle placed before."""
    bundles = [f"t/spread/0x{i * 0x08000000:08x}_0x{(i + 1) * 0x08000000:08x}" for i in range(12)]
    busy = NamespaceBundleStats(msg_rate_in=5000.0, topics=1)
    # the least loaded broker (B1) would take every bundle but for the even spread
    reports = {
        B1: broker(B1, cpu=10),
        B2: broker(B2, cpu=10, bundles={"t/b/0x00000000_0xffffffff": busy}),
        B3: broker(B3, cpu=10, bundles={"t/c/0x00000000_0xffffffff": busy}),
    }
    kept, rebuilt = Leader(B1, rng=random.Random(5)), Leader(B1, rng=random.Random(5))
    kept.refresh(0, ClusterInputs(reports=reports))
    rebuilt.refresh(0, ClusterInputs(reports=reports))
    placed_kept = [kept.place(0, b, ClusterInputs(reports=reports)).broker for b in bundles]
    placed_rebuilt = [
        rebuilt.place(0, b, ClusterInputs(reports=reports, policies_version=i)).broker
        for i, b in enumerate(bundles)
    ]
    assert placed_rebuilt == placed_kept
    assert sorted(placed_kept.count(b) for b in (B1, B2, B3)) == [4, 4, 4]


def test_the_refresh_folds_brokers_in_id_order_whatever_order_they_come_in() -> None:
    stats = {BUNDLE: NamespaceBundleStats(msg_rate_in=100.0, topics=2)}
    stale = {BUNDLE: NamespaceBundleStats(msg_rate_in=300.0, topics=2)}
    a, b = Leader(rng=random.Random(1)), Leader(rng=random.Random(1))
    a.refresh(0, ClusterInputs(reports={B2: broker(B2, bundles=stale), B1: broker(B1, bundles=stats)}))
    b.refresh(0, ClusterInputs(reports={B1: broker(B1, bundles=stats), B2: broker(B2, bundles=stale)}))
    assert list(a.load_state.load_data.broker_data) == [B1, B2]
    assert a.load_state.load_data.bundle_data[BUNDLE] == b.load_state.load_data.bundle_data[BUNDLE]


@pytest.mark.parametrize(
    ("manager", "overrides", "expected"),
    [
        ("ModularLoadManagerImpl", {}, True),
        ("ModularLoadManagerImpl", {"brokerlbModularTransferEnabled": False}, False),  # Pulsar's modular
        ("ExtensibleLoadManagerImpl", {}, True),  # loadBalancerTransferEnabled defaults to true
        ("ExtensibleLoadManagerImpl", {"loadBalancerTransferEnabled": False}, False),
    ],
)
def test_which_unloads_are_transfers(manager, overrides, expected) -> None:
    config = ServiceConfig().with_overrides({"loadManagerClassName": manager, **overrides})
    assert is_transfer(config, B2) is expected
    assert is_transfer(config, None) is False


class Actions:
    """Carries out what it is told; moves of bundles listed in ``refuse`` are not carried out."""

    def __init__(self, now: int = 60_000, refuse: frozenset[str] = frozenset()) -> None:
        self.now = now
        self.refuse = refuse
        self.moved: list[Move] = []
        self.split_bundles: list[str] = []

    def now_ms(self) -> int:
        return self.now

    async def move(self, moves):
        self.moved.extend(moves)
        return [m.bundle not in self.refuse for m in moves]

    async def split(self, splits):
        self.split_bundles.extend(d.bundle for d in splits)
        return [True for _ in splits]

    async def merge(self, merges):
        return [True for _ in merges]


def overloaded() -> ClusterInputs:
    hot = {b: NamespaceBundleStats(msg_rate_in=1000.0, msg_throughput_in=20e6, topics=3) for b in HOT}
    return ClusterInputs(
        reports={B1: broker(B1, cpu=95, bundles=hot), B2: broker(B2, cpu=5), B3: broker(B3, cpu=5)}
    )


def test_the_shedding_cycle_remembers_only_the_moves_carried_out() -> None:
    config = ServiceConfig().with_overrides({"loadBalancerLoadSheddingStrategy": "OverloadShedder"})
    leader = Leader(B3, config, rng=random.Random(3))
    cluster = overloaded()
    leader.refresh(0, cluster)
    probe = Leader(B3, config, rng=random.Random(3))
    probe.refresh(0, cluster)
    planned = probe.shed(60_000, cluster)[1]
    assert planned, "the overloaded broker sheds something"
    refused = frozenset({planned[0].bundle})
    actions = Actions(refuse=refused)
    record = run_now(shedding_cycle(leader, actions, cluster))
    assert [m.bundle for m in record.moves] == [m.bundle for m in planned]
    assert record.moves_done == tuple(m.bundle not in refused for m in planned)
    recent = leader.load_state.load_data.recently_unloaded_bundles
    assert set(recent) == {m.bundle for m in planned} - refused
    assert record.to_json()["moves"][0]["executed"] is False


def test_an_unload_that_is_not_a_transfer_leaves_its_destination_as_an_affinity() -> None:
    config = ServiceConfig().with_overrides(
        {"loadBalancerLoadSheddingStrategy": "OverloadShedder", "brokerlbModularTransferEnabled": False}
    )
    leader = Leader(B3, config, rng=random.Random(3))
    cluster = overloaded()
    leader.refresh(0, cluster)
    _, moves = leader.shed(60_000, cluster)
    with_destination = [m for m in moves if m.destination]
    assert with_destination and not any(m.transfer for m in moves)
    assert all(leader.affinity[m.bundle] == m.destination for m in with_destination)


def test_a_transfer_leaves_nothing_behind_in_the_leader() -> None:
    """A transfer is one transition of the bundle's ownership record (its destination is in the
    record): the leader keeps no affinity or hand-over for it."""
    config = ServiceConfig().with_overrides({"loadBalancerLoadSheddingStrategy": "OverloadShedder"})
    leader = Leader(B3, config, rng=random.Random(3))
    cluster = overloaded()
    leader.refresh(0, cluster)
    _, moves = leader.shed(60_000, cluster)
    assert moves and all(m.transfer and m.destination for m in moves)
    assert leader.affinity == {}


@pytest.mark.parametrize("owned_by", ["destination", "another broker"])
def test_a_move_of_a_bundle_its_source_no_longer_owns_is_skipped_recorded_and_not_carried_out(
    owned_by,
) -> None:
    """B1's stale report still lists a bundle that moved away (a report is rewritten only when the
    load changed enough): the strategy decides to move it to the broker that owns it already (the
    simulator's ownership machine refused that and aborted the run), or away from B1 while a third
    broker owns it. The leader skips it as NotOwned, saying who owns it; it does not become a move."""
    config = ServiceConfig().with_overrides({"loadBalancerLoadSheddingStrategy": "OverloadShedder"})
    cluster = overloaded()
    probe = Leader(B3, config, rng=random.Random(3))
    probe.refresh(0, cluster)
    planned = probe.shed(60_000, cluster)[1]
    assert planned, "the overloaded broker sheds something"
    move = planned[0]
    owner = (
        move.destination if owned_by == "destination" else next(b for b in (B2, B3) if b != move.destination)
    )
    cluster.owner_of = lambda bundle: owner if bundle == move.bundle else B1
    leader = Leader(B3, config, rng=random.Random(3))
    leader.refresh(0, cluster)
    actions = Actions()
    record = run_now(shedding_cycle(leader, actions, cluster))
    assert move.bundle not in [m.bundle for m in actions.moved]
    (skipped,) = [d for d in record.decisions if d.bundle == move.bundle]
    assert (str(skipped.label), str(skipped.reason)) == ("Skip", "NotOwned")
    why = (
        f"{owner} owns it already (its destination; {B1} reported it last)"
        if owned_by == "destination"
        else f"{owner} owns it now ({B1} reported it last)"
    )
    assert skipped.detail.endswith(f"not moved: {why}")
    assert "unload/Skip/NotOwned" in record.decision_keys()
    # nothing of the skipped move is left behind: no affinity, not "recently unloaded"
    assert move.bundle not in leader.affinity
    assert move.bundle not in leader.load_state.load_data.recently_unloaded_bundles
    # the moves of bundles the source does own go on as decided
    assert [m.bundle for m in actions.moved] == [m.bundle for m in planned[1:]]


def test_a_bundle_chosen_for_a_split_is_forgotten_and_not_chosen_again_while_reported() -> None:
    config = ServiceConfig().with_overrides({"loadBalancerNamespaceBundleMaxTopics": 2})
    leader = Leader(B1, config, rng=random.Random(1))
    cluster = overloaded()
    leader.refresh(0, cluster)
    actions = Actions()
    record = run_now(split_cycle(leader, actions, cluster))
    chosen = [d.bundle for d in record.decisions if isinstance(d, SplitDecision) and d.is_split]
    assert chosen and actions.split_bundles == chosen and record.splits_done == (True,) * len(chosen)
    assert not set(chosen) & set(leader.load_state.load_data.bundle_data)
    # the owner has not reported the children yet: its report still lists the parents
    leader.refresh(1000, cluster)
    again = run_now(split_cycle(leader, Actions(), cluster))
    assert not {d.bundle for d in again.decisions if d.is_split} & set(chosen)
    assert {d.bundle for d in again.decisions if d.reason is Reason.SPLITTING} == set(chosen)
    # once no report lists them, they are no longer set aside
    leader.refresh(2000, ClusterInputs(reports={B1: broker(B1), B2: broker(B2), B3: broker(B3)}))
    assert not leader.splitting


def test_run_now_refuses_a_step_that_waits() -> None:
    class Waiting(Actions):
        async def move(self, moves):
            import asyncio

            await asyncio.sleep(0)
            return [True for _ in moves]

    config = ServiceConfig().with_overrides({"loadBalancerLoadSheddingStrategy": "OverloadShedder"})
    leader = Leader(B3, config, rng=random.Random(3))
    cluster = overloaded()
    leader.refresh(0, cluster)
    with pytest.raises(RuntimeError, match="did not complete at once"):
        run_now(shedding_cycle(leader, Waiting(), cluster))


def test_the_schedule_keeps_its_phase_and_reads_the_interval_at_each_step() -> None:
    config = ServiceConfig().with_overrides({"loadBalancerSheddingIntervalMinutes": 1})
    schedule = LeaderSchedule(config, 0)
    assert not schedule.due("shedding", 59_999) and schedule.due("shedding", 60_000)
    schedule.done("shedding", 60_500)
    assert schedule.next_ms("shedding") == 120_000
    schedule.done("shedding", 400_000)  # far behind: the next one is an interval from now
    assert schedule.next_ms("shedding") == 460_000
    schedule.config = config.with_overrides({"loadBalancerSheddingIntervalMinutes": 2})
    schedule.done("shedding", 460_000)
    assert schedule.next_ms("shedding") == 580_000
    assert schedule.split_after_refresh


def test_new_bundles_reads_only_reports_the_last_refresh_did_not_fold_as_they_are() -> None:
    """A report folded as it is lists no new bundle, unless its bundle's history was dropped
    since (a split, a merge); a new report is read bundle by bundle."""
    leader = Leader(B1, rng=random.Random(1))
    first = {B1: broker(B1, bundles=HOT[:2]), B2: broker(B2, bundles=HOT[2:3])}
    assert leader.new_bundles(ClusterInputs(reports=first)) == set(HOT[:3])  # nothing known yet
    leader.refresh(0, ClusterInputs(reports=first))
    assert leader.new_bundles(ClusterInputs(reports=first)) == set()
    leader.forget_bundle(HOT[1])  # its history dropped: the unchanged report of B1 still lists it
    assert leader.new_bundles(ClusterInputs(reports=first)) == {HOT[1]}
    again = {**first, B2: broker(B2, bundles=HOT[2:])}  # a new report of B2, with one new bundle
    assert leader.new_bundles(ClusterInputs(reports=again)) == {HOT[1], HOT[3]}
    leader.refresh(1000, ClusterInputs(reports=again))
    assert leader.new_bundles(ClusterInputs(reports=again)) == set()
    assert leader.new_bundles(ClusterInputs(reports={**again, B3: None})) == set()


def test_new_bundles_is_every_reported_bundle_without_a_history() -> None:
    """Reports kept, replaced or missing, histories forgotten, placements preallocating: the
    answer is always that of reading every report bundle by bundle."""
    rng = random.Random(7)
    bundles = [f"t/ns/0x{i * 0x01000000:08x}_0x{(i + 1) * 0x01000000:08x}" for i in range(40)]
    leader = Leader(B1, rng=random.Random(1))
    reports: dict = {}
    for step in range(400):
        for name in (B1, B2, B3):
            roll = rng.random()
            if name not in reports or roll < 0.2:
                reports[name] = broker(
                    name, cpu=rng.randint(0, 50), bundles=rng.sample(bundles, rng.randint(0, 8))
                )
            elif roll < 0.25:
                reports[name] = None
        if rng.random() < 0.2:
            leader.forget_bundle(rng.choice(bundles))
        cluster = ClusterInputs(reports=dict(reports))
        known = leader.load_state.load_data.bundle_data
        naive = {b for r in reports.values() if r is not None for b in r.last_stats if b not in known}
        assert leader.new_bundles(cluster) == naive, step
        if rng.random() < 0.7:
            leader.refresh(step * 1000, cluster)
        if rng.random() < 0.2 and any(reports.values()):
            leader.place(step * 1000, rng.choice(bundles), cluster)
