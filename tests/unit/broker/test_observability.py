"""The leader feed, the decision counters, the quantile window and the balancer's states, on hand-made input."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from brokerlb.broker.data.served_topics import ServedTopics
from brokerlb.broker.data.topics import TopicRegistry, TopicStats
from brokerlb.broker.leader.balancer_status import IN_PROGRESS, OFF, READY, STALLED, WAITING, BalancerStatus
from brokerlb.broker.leader.leader_feed import LeaderFeed
from brokerlb.broker.observe.metrics import (
    AssignmentMetrics,
    BrokerMetrics,
    LoadBalancingCounters,
    LookupMetrics,
)
from brokerlb.broker.observe.metrics.quantiles import QuantileWindow
from brokerlb.clock import ManualClock
from brokerlb.config import ServiceConfig
from brokerlb.errors import NoBrokerAvailableError
from brokerlb.loadbalance.cycle import CycleRecord
from brokerlb.loadbalance.decisions import (
    Label,
    MergeDecision,
    Reason,
    SheddingResult,
    SplitDecision,
    UnloadDecision,
)
from brokerlb.loadbalance.leader import Move
from brokerlb.model import LocalBrokerData
from brokerlb.ownership import BundleState
from brokerlb.ownership.record import OwnershipRecord


class FakeLeader:
    """Publishes records the way LeaderTasks does."""

    def __init__(self) -> None:
        self.listeners: list = []

    def add_listener(self, listener) -> None:
        self.listeners.append(listener)

    def publish(self, record: CycleRecord) -> None:
        for listener in self.listeners:
            listener(record)


def _shedding() -> SheddingResult:
    return SheddingResult.of(
        [
            UnloadDecision("b1", "t/n/0x00000000_0x80000000", "b2", Label.SUCCESS, Reason.OVERLOADED),
            UnloadDecision("b1", "t/n/0x80000000_0xffffffff", None, Label.SUCCESS, Reason.OVERLOADED),
            UnloadDecision.skip(Reason.COOL_DOWN, "b3 cooling down", broker="b3"),
        ],
        {"loadAvg": 0.4, "loadStd": 0.1},
    )


def shedding_record(result: SheddingResult, at_ms: int, done: tuple[bool, ...] = ()) -> CycleRecord:
    """What the leader publishes after a shedding cycle (moves as the leader makes them)."""
    moves = tuple(
        Move(d.bundle or "", d.broker or "", d.destination, d.destination is not None, d)
        for d in result.unloads
    )
    return CycleRecord("shedding", at_ms, "b1", result.decisions, moves, done, stats=dict(result.stats))


def test_the_feed_passes_the_leaders_records_and_the_counters_count_them() -> None:
    leader = FakeLeader()
    feed = LeaderFeed(leader, "b1")
    counters = LoadBalancingCounters()
    feed.add_listener(counters.record)
    shedding = _shedding()
    moves = [
        Move(d.bundle or "", d.broker or "", d.destination, d.destination is not None, d)
        for d in shedding.unloads
    ]
    cycle = CycleRecord(
        "shedding", 2000, "b1", shedding.decisions, tuple(moves), (True, False), stats=dict(shedding.stats)
    )
    leader.publish(cycle)
    split_ok = SplitDecision("t/n/0x00000000_0x80000000", (), Label.SUCCESS, Reason.TOPICS, "12 topics")
    split_failed = SplitDecision("t/n/0x80000000_0xffffffff", (), Label.SUCCESS, Reason.TOPICS, "stale")
    leader.publish(CycleRecord("split", 3000, "b1", (split_ok,), splits=(split_ok,), splits_done=(True,)))
    leader.publish(
        CycleRecord("split", 3001, "b1", (split_failed,), splits=(split_failed,), splits_done=(False,))
    )

    recorded, split, failed_split = feed.recent
    assert recorded is cycle and feed.last("shedding") is cycle
    assert [(m.bundle, m.transfer, m.reason) for m in recorded.moves] == [
        ("t/n/0x00000000_0x80000000", True, "Overloaded"),
        ("t/n/0x80000000_0xffffffff", False, "Overloaded"),
    ]
    assert (split.kind, split.splits_done, str(split.splits[0].reason)) == ("split", (True,), "Topics")
    assert failed_split.splits_done == (False,)

    assert counters.unload_breakdown[("Success", "Overloaded")] == 2
    assert counters.unload_breakdown[("Skip", "CoolDown")] == 1
    assert (counters.unload_bundle, counters.unload_broker) == (1, 1)
    assert counters.moves == {("transfer", "Overloaded"): 1, ("split", "Topics"): 1}
    assert counters.bundles_split == 1
    assert counters.cycles == {"shedding": 1, "split": 2}
    assert counters.load_avg_std == (0.4, 0.1)
    assert recorded.to_json()["moves"][1]["executed"] is False


def test_a_leader_without_announcements_is_fine() -> None:
    feed = LeaderFeed(object(), "b1")
    assert feed.last("shedding") is None and not feed.recent


def test_quantile_window_forgets_old_observations_but_keeps_totals() -> None:
    clock = ManualClock()
    window = QuantileWindow(clock.monotonic, max_age=60)
    for v in range(1, 101):
        window.observe(float(v))
    q = window.quantiles()
    assert (q[0.5], q[0.99], q[1.0]) == (50.0, 99.0, 100.0)
    clock.advance(61)
    window.observe(7.0)
    assert window.quantiles()[0.5] == 7.0
    assert (window.count, window.sum) == (101, 5057.0)
    clock.advance(61)
    assert all(math.isnan(v) for v in window.quantiles().values())


async def test_placements_and_lookups_are_counted() -> None:
    clock = ManualClock()
    assignments = AssignmentMetrics(clock.monotonic)

    async def placed() -> str:
        clock.advance(0.002)
        return "b1"

    async def nobody() -> str:
        raise NoBrokerAvailableError("none fits")

    assert await assignments.observe(placed()) == "b1"
    with pytest.raises(NoBrokerAvailableError):
        await assignments.observe(nobody())
    assert (assignments.results["Success"], assignments.results["Empty"], assignments.results["Failure"]) == (
        1,
        1,
        0,
    )
    assert assignments.latency_ms.quantiles()[1.0] == pytest.approx(2.0)
    lookups = LookupMetrics(clock.monotonic)
    for status in (200, 307, 307, 503):
        lookups.answered(clock.monotonic(), status)
    lookups.failed(clock.monotonic())
    assert lookups.snapshot() == {"answers": 1, "redirects": 2, "failures": 2}


class FakeOwners:
    def __init__(self, moving: list[str]) -> None:
        self._moving = moving

    def moving(self):
        return self._moving


def _status(
    conf: ServiceConfig, feed: LeaderFeed, *, now=10_000, leader="b1", since=0, disabled=(), grace=()
) -> dict:
    return BalancerStatus(
        conf=conf,
        feed=feed,
        leader_id=lambda: leader,
        leading_since_ms=lambda: since,
        owners=FakeOwners(list(disabled)),  # type: ignore[arg-type]
        cluster_loads=lambda: {"b1": 90.0, "b2": 30.0, "b3": 30.0},
        now_ms=lambda: now,
        grace_ends=lambda broker: grace if broker == "b1" else (),
    ).status()


def test_balancer_states() -> None:
    conf = ServiceConfig(clusterName="c", loadBalancerSheddingIntervalMinutes=1)
    leader = FakeLeader()
    feed = LeaderFeed(leader, "b1")
    first = _status(conf, feed)
    assert (first["state"], first["reason"]) == (READY, "waiting for the first shedding cycle")
    assert first["balancedness"] == pytest.approx(55.556, abs=0.01) and first["busiestBroker"] == "b1"
    assert _status(conf, feed, now=200_000)["state"] == STALLED  # no cycle in 2 intervals + 1 min
    assert _status(conf, feed, leader=None)["reason"] == "no leader broker is elected"
    assert _status(conf.with_overrides({"loadBalancerSheddingEnabled": False}), feed)["state"] == OFF
    assert _status(conf.with_overrides({"loadBalancerEnabled": False}), feed)["state"] == OFF

    leader.publish(
        shedding_record(SheddingResult.of([UnloadDecision.skip(Reason.BALANCED, "spread 3% < 10%")]), 5000)
    )
    ready = _status(conf, feed)
    assert (ready["state"], ready["reason"], ready["lastCycleAtMs"]) == (
        READY,
        "Balanced: spread 3% < 10%",
        5000,
    )
    assert ready["lastCycle"]["decisions"] == {"Skip/Balanced": 1}
    busy = _status(conf, feed, disabled=["t/n/0x00000000_0x80000000"])
    assert (busy["state"], busy["movesInFlight"]) == (IN_PROGRESS, 1)

    leader.publish(
        shedding_record(SheddingResult.of([UnloadDecision.failure(Reason.NO_DESTINATION, "isolation")]), 6000)
    )
    assert _status(conf, feed)["reason"] == "NoDestination: isolation"

    leader.publish(shedding_record(_shedding(), 7000, done=(True, True)))
    assert _status(conf, feed)["state"] == IN_PROGRESS  # the last cycle moved a bundle


def test_above_the_band_the_balancer_is_waiting_with_the_end_of_its_grace() -> None:
    """The busiest broker sits above the strategy's band and nothing moved: not ``ready``, but
    ``waiting (grace until ...)`` while its bundles are held by a grace period, with ISO times."""
    conf = ServiceConfig(clusterName="c", loadBalancerSheddingIntervalMinutes=1)
    leader = FakeLeader()
    feed = LeaderFeed(leader, "b1")
    held = SheddingResult.of(
        [UnloadDecision.skip(Reason.RECENTLY_UNLOADED, "every bundle moved recently", broker="b1")],
        {"avgUsage": 0.5, "threshold": 0.1},  # ThresholdShedder: band 40-60 %, b1 at 90 %
    )
    leader.publish(shedding_record(held, 1_795_000_000_000))
    now = 1_795_000_005_000
    until = 1_795_000_900_000
    waiting = _status(conf, feed, now=now, grace=(now - 1, until, until + 60_000))
    assert (waiting["state"], waiting["graceUntilMs"], waiting["graceUntil"]) == (
        WAITING,
        until,
        "2026-11-18T11:21:40Z",
    )
    assert waiting["reason"].startswith(
        "grace until 2026-11-18T11:21:40Z: b1 at 90.0 % is above the band's 60.0 %"
    )
    assert waiting["band"] == {"lower": 40.0, "upper": 60.0}
    assert waiting["lastCycleAt"] == "2026-11-18T11:06:40Z"
    # above the band without a grace period: waiting, and the last cycle's reason says why
    blocked = _status(conf, feed, now=now)
    assert (blocked["state"], blocked["graceUntil"]) == (WAITING, None)
    assert blocked["reason"].endswith("RecentlyUnloaded: every bundle moved recently")
    # every broker inside the band: ready
    leader.publish(shedding_record(SheddingResult.of([], {"avgUsage": 0.5, "threshold": 0.5}), now))
    assert _status(conf, feed, now=now)["state"] == READY


def test_exporter_writes_parsable_families_with_pulsar_names() -> None:
    registry = TopicRegistry(lambda topic: f"{topic.namespace}/0x00000000_0xffffffff")
    registry.attach("persistent://t/n/a", stats=TopicStats(msg_rate_in=5, producer_count=2, consumer_count=1))
    registry.attach("persistent://t/n/b", stats=TopicStats(msg_rate_in=7))
    counters = LoadBalancingCounters()
    report = LocalBrokerData()
    conf = ServiceConfig(clusterName="c", exposeTopicLevelMetricsInPrometheus=False)
    metrics = BrokerMetrics(
        cluster="c",
        broker_id="b1:8080",
        conf=conf,
        local_report=lambda: report,
        cluster_reports=lambda: {"b1:8080": LocalBrokerData(num_bundles=3), "b2:8080": LocalBrokerData()},
        served=ServedTopics(registry, None, "b1:8080"),
        counters=counters,
        assignments=AssignmentMetrics(),
        lookups=LookupMetrics(),
    )
    families = {f.name: f for f in text_string_to_metric_families(metrics.render().decode())}
    rate_in = families["pulsar_rate_in"].samples
    assert [(s.labels, s.value) for s in rate_in] == [({"cluster": "c", "namespace": "t/n"}, 12.0)]
    assert families["pulsar_producers_count"].samples[0].value == 2.0
    assert families["brokerlb_balancedness"].samples[0].value == 100.0
    assert families["pulsar_lb_unload_broker_breakdown"].type == "counter"
    assert families["pulsar_broker_lookup"].type == "summary"
    assert "pulsar_bundle_msg_rate_in" not in families
    assert [s.value for s in families["brokerlb_broker_bundles"].samples] == [3.0, 0.0]
    cycles = families["brokerlb_leader_cycles"]
    assert cycles.type == "counter"
    assert [(s.labels["kind"], s.value) for s in cycles.samples if s.name.endswith("_total")] == [
        ("shedding", 0.0),
        ("split", 0.0),
    ]


class FakeChannel:
    """The ownership channel as the log listens to it: records of bundles changing."""

    def __init__(self) -> None:
        self.listener = None
        self.records: dict[str, OwnershipRecord | None] = {}
        self.version = 0

    def owners(self):
        return {}

    def add_record_listener(self, listener):
        self.listener = listener
        return lambda: None

    def set(self, bundle: str, state: BundleState | None, broker: str | None = None) -> None:
        self.version += 1
        before = self.records.get(bundle)
        if state is None:
            after = None
        elif state is BundleState.RELEASING:
            after = OwnershipRecord(state, src=broker, version=self.version)
        elif state is BundleState.FREE:
            after = OwnershipRecord(state, src=broker, version=self.version)
        else:
            after = OwnershipRecord(state, dst=broker, version=self.version, dst_session=1)
        self.records[bundle] = after
        self.listener(bundle, before, after)


def test_ownership_log_tells_moves_and_their_causes() -> None:
    from brokerlb.broker.ownership.ownership_log import OwnershipLog, leader_moves_of

    clock = ManualClock()
    channel = FakeChannel()
    log = OwnershipLog(channel, clock.now_ms)  # type: ignore[arg-type]
    a, b = "t/n/0x00000000_0x80000000", "t/n/0x80000000_0xffffffff"
    S = BundleState
    channel.set(a, S.OWNED, "b1")
    channel.set(b, S.OWNED, "b1")
    clock.advance(1)
    channel.set(a, S.RELEASING, "b1")
    channel.set(a, S.ASSIGNING, "b2")
    channel.set(a, S.OWNED, "b2")  # the leader's transfer
    channel.set(b, S.RELEASING, "b1")
    channel.set(b, S.FREE, "b1")  # an operator's unload, nobody took it yet
    leader = FakeLeader()
    feed = LeaderFeed(leader, "b1")
    leader.publish(
        shedding_record(
            SheddingResult.of([UnloadDecision("b1", a, "b2", Label.SUCCESS, Reason.OVERLOADED)]),
            clock.now_ms(),
            done=(True,),
        )
    )
    causes = lambda: leader_moves_of(feed.recent)  # noqa: E731
    moves = [(m.kind, m.bundle, m.broker, m.previous, m.cause) for m in log.recent_moves(causes)]
    assert moves == [("moved", a, "b2", "b1", "Overloaded"), ("released", b, "b1", None, "Admin")]
    assert [m.category for m in log.recent_moves(causes)] == ["shedding", "admin"]
    story = [(c.kind, c.broker, c.cause) for c in log.entries(causes, bundle=a)]
    assert story == [
        ("assigned", "b1", ""),
        ("unloading", "b1", "Overloaded"),
        ("released", "b1", "Overloaded"),
        ("moved", "b2", "Overloaded"),
    ]
    # a move more than MOVE_WINDOW_MS after the release is a new assignment
    clock.advance(60)
    channel.set(b, S.OWNED, "b3")
    assert log.entries(bundle=b)[-1].kind == "assigned"


def test_each_move_is_labelled_by_its_real_cause() -> None:
    """shedding (carried out, or only started: a lost lease cut the cycle short), split (the parent
    and its children unloaded after it), merge, failure (gone without being unloaded), admin."""
    from brokerlb.broker.ownership.ownership_log import OwnershipLog, leader_moves_of

    clock = ManualClock()
    channel = FakeChannel()
    log = OwnershipLog(channel, clock.now_ms, registered=lambda b: b != "b1")  # type: ignore[arg-type]
    S = BundleState
    shed, parent, child, part, crashed, operator = (
        "t/n/0x00000000_0x10000000",
        "t/n/0x10000000_0x40000000",
        "t/n/0x10000000_0x20000000",
        "t/m/0x00000000_0x80000000",
        "t/n/0x40000000_0x80000000",
        "t/n/0x80000000_0xffffffff",
    )
    for bundle in (shed, child, part, crashed, operator):
        channel.set(bundle, S.OWNED, "b1")
    clock.advance(1)
    for bundle in (shed, child, part, operator):  # unloaded: Releasing first
        channel.set(bundle, S.RELEASING, "b1")
        channel.set(bundle, S.ASSIGNING, "b2")
        channel.set(bundle, S.OWNED, "b2")
    # its owner's session ended (no longer registered): the leader reassigned it
    channel.set(crashed, S.ASSIGNING, "b3")
    channel.set(crashed, S.OWNED, "b3")
    moved = UnloadDecision("b1", shed, "b2", Label.SUCCESS, Reason.UNDERLOADED)
    started = [
        Move(shed, "b1", "b2", True, moved),  # sent; its cycle never published a record
        SplitDecision(parent, (), Label.SUCCESS, Reason.TOPICS, "12 topics"),
        MergeDecision((part, "t/m/0x80000000_0xffffffff"), reason=Reason.COLD_BUNDLES),
    ]
    labels = {m.bundle: (m.category, m.cause) for m in log.recent_moves(lambda: leader_moves_of([], started))}
    assert labels == {
        shed: ("shedding", "Underloaded"),
        child: ("split", "split"),
        part: ("merge", "merge"),
        crashed: ("failure", "failure"),
        operator: ("admin", "Admin"),
    }
    assert log.recent_moves(lambda: leader_moves_of([], started))[0].to_json()["category"] == "shedding"


def test_dashboard_state_document() -> None:
    from brokerlb.broker.observe.dashboard_state import dashboard_state
    from brokerlb.ring import NamespaceBundles

    ring = NamespaceBundles.create("t/n", 2)
    first = str(ring.bundles[0])
    owners = {first: SimpleNamespace(broker_id="b1", disabled=True)}
    state = dashboard_state(
        cluster="c",
        served_by="b2",
        leader="b1",
        balancer={"state": "ready"},
        reports={"b1": LocalBrokerData(num_bundles=1, num_topics=3)},
        namespaces=[("t/n", ring)],
        owners=owners,  # type: ignore[arg-type]
        cycles=[],
        moves=[],
        now_ms=5,
    )
    assert state["brokers"][0]["leader"] is True and state["brokers"][0]["topics"] == 3
    assert [(b["owner"], b["unloading"]) for b in state["namespaces"][0]["bundles"]] == [
        ("b1", True),
        (None, False),
    ]
    assert state["namespaces"][0]["bundles"][1]["upper"] == 0xFFFFFFFF


def test_whole_cycle_records_pass_through_the_feed() -> None:
    leader = FakeLeader()
    feed = LeaderFeed(leader, "b1")
    counters = LoadBalancingCounters()
    feed.add_listener(counters.record)
    decision = UnloadDecision("b1", "t/n/0x00000000_0xffffffff", "b2", Label.SUCCESS, Reason.UNDERLOADED)
    record = CycleRecord(
        "shedding", 9, "b1", (decision,), (Move(decision.bundle or "", "b1", "b2", True, decision),), (True,)
    )
    leader.publish(record)
    assert feed.last("shedding") is record
    assert counters.moves == {("transfer", "Underloaded"): 1}


def test_dashboard_cycles_show_what_moved_first_and_collapse_idle_runs() -> None:
    """Twenty idle cycles after a move (two minutes at a 6-s interval) no longer push it out of
    sight: the cycle that moved comes first, each run of idle cycles is one entry with its count."""
    from brokerlb.broker.observe.dashboard_state import cycle_entries

    idle = SheddingResult.of([UnloadDecision.skip(Reason.BALANCED, "spread 3% < 10%")])
    cycles = [shedding_record(idle, 1000 * i) for i in range(5)]
    cycles.append(shedding_record(_shedding(), 6000, done=(True, True)))
    cycles += [shedding_record(idle, 7000 + 6000 * i) for i in range(20)]
    entries = cycle_entries(cycles)
    assert [e["kind"] for e in entries] == ["shedding", "idle", "idle"]
    assert entries[0]["atMs"] == 6000 and len(entries[0]["moves"]) == 2
    newest, oldest = entries[1], entries[2]
    assert (newest["count"], newest["fromMs"], newest["toMs"]) == (20, 7000, 7000 + 6000 * 19)
    assert newest["decisions"] == {"Skip/Balanced": 1} and newest["detail"] == "spread 3% < 10%"
    assert (oldest["count"], oldest["fromMs"], oldest["toMs"]) == (5, 0, 4000)
