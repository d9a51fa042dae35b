"""The simulator's mechanics with a scripted leader (the engine itself is exercised in tests/sim)."""

import numpy as np
import pytest

from brokerlb.sim.loader import parse_scenario
from brokerlb.sim.ownership import BundleState
from brokerlb.sim.simulation import DEFAULT_START_MS, Simulation
from tests.unit.sim.scripted_leader import Decision, Merge, ScriptedLeader

T0 = DEFAULT_START_MS


def scenario(events=(), brokers=3, minutes=30, **extra):
    return parse_scenario(
        {
            "seed": 11,
            "duration": f"{minutes}m",
            "tick": "1m",
            "timing": {"unload": "50ms", "transfer": "20ms", "lookup": "500ms", "session_timeout": "30s"},
            "brokers": [{"name": "b{i}", "count": brokers}],
            "workload": {"msg_rate": 40_000, "zipf": 0.8, "noise": 0.05},
            "namespaces": [{"name": "t/ns-{i}", "count": 2, "bundles": 8, "topics": 120}],
            "events": list(events),
            **extra,
        }
    )


@pytest.fixture(autouse=True)
def fresh_leader():
    ScriptedLeader.reset()


def run(s, **kw):
    sim = Simulation(s, leader_factory=ScriptedLeader, validate=True, **kw)
    return sim, sim.run()


def test_initial_placement_spreads_every_bundle_and_conserves_load():
    sim, result = run(scenario())
    assert (sim.ownership.state[sim.topology.bundle_live] == BundleState.OWNED).all()
    assert np.bincount(sim.ownership.owner, minlength=3).tolist() == [6, 5, 5]
    served = result.series["served_throughput"]
    assert np.allclose(served, result.series["offered_throughput"])
    # nothing moved: no time without an owner (the first placements at start do not count)
    assert result.summary["moves"] == 0 and result.summary["unowned_seconds"] == 0


def test_same_seed_same_result_other_seed_other_traffic():
    events = [{"at": "10m", "type": "fail_broker", "broker": "b2"}]
    _, a = run(scenario(events))
    ScriptedLeader.reset()
    _, b = run(scenario(events))
    assert a.same_outcome(b)
    ScriptedLeader.reset()
    _, c = run(scenario(events), seed=12)
    assert not np.array_equal(a.series["offered_throughput"], c.series["offered_throughput"])


def test_crash_orphans_bundles_until_the_session_expires():
    sim, result = run(scenario([{"at": "10m", "type": "fail_broker", "broker": "b2"}]))
    moves = result.moves
    assert len(moves) == 5 and {m["cause"] for m in moves} == {"failure"}
    assert all(m["unownedMs"] == 30_500 for m in moves)  # session timeout + next lookup
    assert {m["to"] for m in moves} <= {"b1:8080", "b3:8080"}
    cycle_10 = result.series["unowned_seconds"][9]  # the cycle that ends at 10m: crash at its end
    assert cycle_10 == 0 and result.series["unowned_seconds"][10] == pytest.approx(5 * 30.5)
    assert result.series["unserved_throughput"][9] > 0  # sampled at the crash instant
    assert np.isnan(result.broker_load[-1, 1]) and result.series["live_brokers"][-1] == 2


def test_restarted_broker_comes_back_idle():
    sim, result = run(scenario([{"at": "5m", "type": "restart_broker", "broker": "b1", "downtime": "2m"}]))
    assert {m["cause"] for m in result.moves} == {"restart"} and len(result.moves) == 6
    assert all(m["unownedMs"] == 550 for m in result.moves)  # unload + lookup
    assert sim.brokers[0].up and len(sim.ownership.owned_by(0)) == 0
    assert result.broker_throughput[-1, 0] == 0 and np.isnan(result.broker_throughput[5, 0])
    # the restarted broker was the leader: leadership moved to b2 and back never
    assert ScriptedLeader.created == ["b1:8080", "b2:8080"]


def test_leader_crash_stops_placement_until_its_session_expires():
    sim, result = run(scenario([{"at": "10m", "type": "fail_broker", "broker": "b1"}]))
    assert ScriptedLeader.created == ["b1:8080", "b2:8080"]
    assert all(m["unownedMs"] >= 30_000 for m in result.moves)
    # cycles 1-9 shed; the crash at 10m leaves no leader until 10m30s; the new leader's first
    # shedding is due one interval after its election (11m30s), so at the 12m cycle: 9 + 19
    assert result.summary["decisions"]["unload/Skip/Balanced"] == 28


def test_scale_out_broker_gets_nothing_without_shedding():
    sim, result = run(scenario([{"at": "5m", "type": "add_broker", "broker": "b9"}]))
    assert sim.brokers[3].up and result.broker_throughput[-1, 3] == 0
    assert result.series["live_brokers"][-1] == 4


def test_scripted_unload_moves_a_bundle_at_the_next_lookup_and_counts_returns():
    s = scenario()
    sim = Simulation(s, leader_factory=ScriptedLeader, validate=True)
    bundle = sim.topology.bundle_names[0]
    owner = sim.broker_ids[0]
    ScriptedLeader.sheds[T0 + 3 * 60_000] = [Decision(broker=owner, bundle=bundle, reason="Overloaded")]
    result = sim.run()
    [move] = result.moves
    assert move["cause"] == "shed" and move["from"] == owner and move["unownedMs"] == 550
    assert move["returned"] == (move["to"] == owner)
    assert result.series["moves"][3] == 1 and result.series["moves_shed"][3] == 1
    assert result.summary["decisions"]["unload/Success/Overloaded"] == 1
    story = [(str(t.finish), t.reason) for t in sim.ownership.story(bundle)]
    assert story[-4:] == [
        ("Releasing", "Overloaded"),
        ("Free", "released"),
        ("Assigning", "lookup"),
        ("Owned", "assignment taken"),
    ]
    assert sim.ownership.story(bundle)[-4].reason == "Overloaded"


def test_transfer_goes_straight_to_the_destination():
    ScriptedLeader.reset(extensible=True)
    s = scenario()
    sim = Simulation(
        s,
        leader_factory=ScriptedLeader,
        validate=True,
        config_overrides={"loadManagerClassName": "ExtensibleLoadManagerImpl"},
    )
    bundle = sim.topology.bundle_names[0]
    ScriptedLeader.sheds[T0 + 2 * 60_000] = [
        Decision(broker=sim.broker_ids[0], bundle=bundle, destination=sim.broker_ids[2])
    ]
    result = sim.run()
    [move] = result.moves
    assert (move["cause"], move["to"], move["unownedMs"]) == ("transfer", "b3:8080", 20)
    assert all(b.top_bundles is not None for b in sim.brokers)
    tops = sim.brokers[2].top_bundles.bundle_names()
    assert bundle in tops and len(tops) <= 10


def test_split_replaces_the_bundle_on_the_ring_and_unloads_the_children():
    s = scenario()
    sim = Simulation(s, leader_factory=ScriptedLeader, validate=True)
    parent = sim.topology.bundle_names[0]  # t/ns-1/0x00000000_0x20000000
    ScriptedLeader.splits[T0 + 60_000] = [Decision(bundle=parent, reason="Topics", boundaries=(0x10000000,))]
    result = sim.run()
    assert result.series["splits"][0] == 1 and sim.topology.num_live_bundles == 17
    assert sim.ownership.state[0] == BundleState.DELETED
    children = [m for m in result.moves if m["cause"] == "split"]
    assert len(children) == 2 and {m["bundle"] for m in children} == {
        "t/ns-1/0x00000000_0x10000000",
        "t/ns-1/0x10000000_0x20000000",
    }
    # each unloaded child carries its own topics' traffic (what it moves if placed elsewhere)
    assert all(m["throughput"] > 0 for m in children)
    assert result.summary["final_bundles"] == 17


def test_split_under_brokerlbs_placement_keeps_the_children_with_the_owner():
    s = scenario()
    sim = Simulation(
        s,
        leader_factory=ScriptedLeader,
        validate=True,
        config_overrides={"loadBalancerLoadPlacementStrategy": "brokerlb"},
    )
    parent = sim.topology.bundle_names[0]
    ScriptedLeader.splits[T0 + 60_000] = [Decision(bundle=parent, reason="Topics", boundaries=(0x10000000,))]
    result = sim.run()
    assert sim.topology.num_live_bundles == 17
    assert not [m for m in result.moves if m["cause"] == "split"]  # no child unloaded: no reconnect
    assert np.allclose(result.series["served_throughput"][2:], result.series["offered_throughput"][2:])


def test_merge_replaces_the_parts_on_the_ring_and_places_the_merged_bundle():
    s = scenario()
    sim = Simulation(s, leader_factory=ScriptedLeader, validate=True)
    parts = ("t/ns-1/0x20000000_0x40000000", "t/ns-1/0x40000000_0x60000000")
    ScriptedLeader.merges[T0 + 2 * 60_000] = [Merge(parts, detail="two cold bundles")]
    result = sim.run()
    assert sim.topology.num_live_bundles == 15 and result.summary["final_bundles"] == 15
    assert all(p not in sim.topology.bundle_index for p in parts)
    merged = sim.topology.bundle_index["t/ns-1/0x20000000_0x60000000"]
    assert sim.ownership.state[merged] == BundleState.OWNED
    for part in parts:
        story = [str(t.finish) for t in sim.ownership.story(part)]
        assert story[-3:] == ["Releasing", "Free", "Init"]  # its record dropped as it left the ring
    [move] = [m for m in result.moves if m["cause"] == "merge"]
    assert move["bundle"] == "t/ns-1/0x20000000_0x60000000" and move["unownedMs"] == 50
    assert move["throughput"] > 0 and result.series["moves_merge"][2] == 1
    assert result.summary["decisions"]["merge/Success/ColdBundles"] == 1
    assert np.allclose(result.series["served_throughput"][3:], result.series["offered_throughput"][3:])


def test_merge_of_a_bundle_in_transit_is_not_executed():
    s = scenario([{"at": "90s", "type": "fail_broker", "broker": "b2"}])
    sim = Simulation(s, leader_factory=ScriptedLeader, validate=True)
    sim.step()  # the first lookups place every bundle
    owners = sim.ownership.owner
    # two adjacent bundles, one of them on the broker that crashes (its bundles keep a dead owner)
    names = sim.topology.bundle_names
    pair = next(
        (names[i], names[i + 1])
        for i in range(7)
        if 1 in (owners[i], owners[i + 1]) and names[i].startswith("t/ns-1/")
    )
    ScriptedLeader.merges[T0 + 2 * 60_000] = [Merge(pair)]
    result = sim.run()
    assert result.summary["decisions"]["merge/NotExecuted/NoOwner"] == 1
    assert all(p in sim.topology.bundle_index for p in pair)


def test_refresh_interval_batches_report_changes_but_not_registrations():
    noisy = {"msg_rate": 40_000, "noise": 0.8}  # reports change by more than 10% most cycles
    every_cycle = Simulation(scenario(minutes=30, workload=noisy), leader_factory=ScriptedLeader)
    every_cycle.run()
    assert every_cycle.refreshes > 20
    ScriptedLeader.reset()
    batched = Simulation(
        scenario(
            [{"at": "7m", "type": "add_broker", "broker": "b9"}],
            minutes=30,
            workload=noisy,
            timing={"unload": "50ms", "lookup": "500ms", "refresh_interval": "10m"},
        ),
        leader_factory=ScriptedLeader,
    )
    batched.run()
    # the start, at most one per 10 minutes of reports, and the registration at 7m at once
    assert batched.refreshes <= 1 + 3 + 1


@pytest.mark.parametrize("idle_listed", [True, False])
def test_a_report_lists_idle_owned_bundles_unless_pulsars_rule_is_set(idle_listed):
    """brokerlbReportOwnedIdleBundles (default true): every owned bundle is in its owner's report;
    false, as Pulsar: only bundles with topics (numBundles counts those). A single-topic bundle split
    in two leaves one child owned and idle."""
    s = scenario(namespaces=[{"name": "t/one", "bundles": 1, "topics": 1}], minutes=5)
    conf = {
        "brokerlbReportOwnedIdleBundles": idle_listed,
        "loadBalancerAutoUnloadSplitBundlesEnabled": False,  # both children stay owned
        "loadBalancerReportUpdateMaxIntervalMinutes": 1,  # every broker writes every cycle
    }
    sim = Simulation(s, config_overrides=conf, leader_factory=ScriptedLeader, validate=True)
    ScriptedLeader.splits[T0 + 60_000] = [
        Decision(bundle="t/one/0x00000000_0xffffffff", reason="Topics", boundaries=(0x80000000,))
    ]
    sim.run()
    owned = {
        sim.topology.bundle_names[int(b)] for b in np.flatnonzero(sim.ownership.state == BundleState.OWNED)
    }
    assert owned == {"t/one/0x00000000_0x80000000", "t/one/0x80000000_0xffffffff"}
    reports = [b.report for b in sim.brokers if b.report is not None]
    listed = {name: stats for r in reports for name, stats in r.last_stats.items()}
    assert sum(r.num_bundles for r in reports) == len(listed)
    if idle_listed:
        assert set(listed) == owned and sorted(s.topics for s in listed.values()) == [0, 1]
    else:
        assert len(listed) == 1 and set(listed) < owned and all(s.topics == 1 for s in listed.values())
