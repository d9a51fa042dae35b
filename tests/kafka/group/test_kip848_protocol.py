"""KIP-848 reconciliation on the embedded store and on a real ZooKeeper (``zookeeper`` marker)."""

from __future__ import annotations

import asyncio
import json

import pytest

from brokerlb.kafka.assignors import TopicPartition
from brokerlb.kafka.checker import check_reconciliation_step
from brokerlb.kafka.group import GroupCoordinatorService, GroupRun, reconciling_style, set_topic_partitions
from brokerlb.kafka.group.reconciliation import Kip848Paths, read_coordinator_state, restore_state
from brokerlb.kafka.reconciliation import ConsumerGroupCoordinator
from brokerlb.testing.waiting import eventually
from tests.kafka.group.test_group_protocols import TOPICS, five_join_then_leave, zookeeper_style

SESSION = 3.0
REBALANCE = 1.5
INTERVAL = 0.05


def coordinator(assignor="uniform"):
    def make(store, group):
        return GroupCoordinatorService(
            store, group, assignor=assignor, session_timeout_s=SESSION, heartbeat_interval_s=INTERVAL
        )

    return make


def kip848(topics=TOPICS):
    return reconciling_style(
        list(topics), rebalance_timeout_s=REBALANCE, session_timeout_s=SESSION, heartbeat_interval_s=INTERVAL
    )


async def checked_state(run: GroupRun, settled: bool) -> None:
    """The coordinator's holdings through the shared checker (single holder; complete once settled)."""
    c = run.coordinator.coordinator
    check_reconciliation_step(
        c.snapshot(), c.holdings(), settled=settled, assignor=c.assignor if settled else None
    )


@pytest.mark.parametrize("assignor", ["uniform", "range-server"])
async def test_five_consumers_join_and_leave(service, assignor):
    run = await five_join_then_leave(service, kip848(), make_coordinator=coordinator(assignor))
    rows = [r.row() for r in run.reports]
    print(f"\nkip-848 {assignor} on {service.name}")
    for r in rows:
        print("  ", json.dumps(r))
    assert len(rows) == 10 and not run.tracker.violations
    assert all(r["rebalances"] >= 1 for r in rows[:5])


async def test_reconciliation_never_stops_the_world_and_moves_less_than_eager(memory_service):
    run = await five_join_then_leave(memory_service, kip848(), make_coordinator=coordinator())
    eager = await five_join_then_leave(memory_service, zookeeper_style(), group="eager")
    assert all(r.pauses.stop_the_world_s == 0 for r in run.reports[1:9])
    assert sum(r.moved for r in run.reports) < sum(r.moved for r in eager.reports)


async def test_every_step_is_checked_while_members_join(memory_service):
    run = GroupRun("steps", TOPICS, memory_service.new_store, kip848(), make_coordinator=coordinator())
    await run.setup()
    try:
        for i in range(1, 5):
            store = await memory_service.new_store()
            consumer = kip848()(store, "steps", f"consumer-{i}", run.tracker)
            run.members[consumer.consumer_id] = (consumer, store)
            run.everyone.append(consumer)
            await consumer.start()

            async def step_checked() -> bool:
                await checked_state(run, settled=False)
                run.check_single_owner()
                return await run.is_settled()

            await eventually(step_checked, timeout=30.0, message="settled")
            await checked_state(run, settled=True)
    finally:
        await run.close()


async def test_new_partitions_are_reconciled(service):
    run = GroupRun("grow", dict(TOPICS), service.new_store, kip848(), make_coordinator=coordinator())
    await run.setup()
    try:
        await run.join("consumer-1")
        await run.join("consumer-2")
        await set_topic_partitions(run.admin, "orders", 9)
        run.topics["orders"] = 9
        await run.wait_settled()
        assert TopicPartition("orders", 8) in await run.ownership()
        await checked_state(run, settled=True)
    finally:
        await run.close()


async def test_crashed_member_is_fenced_by_the_session_timeout(memory_service):
    run = GroupRun("crash", TOPICS, memory_service.new_store, kip848(), make_coordinator=coordinator())
    await run.setup()
    try:
        for i in (1, 2, 3):
            await run.join(f"consumer-{i}")
        consumer, store = run.members.pop("consumer-2")
        consumer._closed = True  # the process dies: no more heartbeats, no leave
        consumer._task.cancel()
        store.crash()
        # a dead process uses nothing once its lease ends
        run.tracker.stopped("consumer-2", consumer.owned, at=consumer.lease.deadline())
        await run.wait_settled()
        assert set((await run.ownership()).values()) == {"consumer-1", "consumer-3"}
        reasons = [reason for _, mid, reason in run.coordinator.fenced if mid == "consumer-2"]
        assert reasons and reasons[0].startswith("session timeout")
        assert not run.tracker.violations
    finally:
        await run.close()


async def test_coordinator_restart_reloads_its_state(memory_service):
    run = GroupRun("restart", TOPICS, memory_service.new_store, kip848(), make_coordinator=coordinator())
    await run.setup()
    try:
        await run.join("consumer-1")
        await run.join("consumer-2")
        before = run.coordinator.coordinator
        await run.coordinator.stop()
        run.coordinator = await coordinator()(await memory_service.new_store(), "restart").start()
        after = run.coordinator.coordinator
        assert (after.group_epoch, after.target_epoch, after.holdings()) == (
            before.group_epoch,
            before.target_epoch,
            before.holdings(),
        )
        await run.join("consumer-3")
        assert set((await run.ownership()).values()) == {"consumer-1", "consumer-2", "consumer-3"}
    finally:
        await run.close()


def test_state_round_trip():
    from brokerlb.kafka.group.reconciliation import encode_state
    from brokerlb.kafka.reconciliation import JOIN_EPOCH, HeartbeatRequest

    c = ConsumerGroupCoordinator("g", session_timeout_s=SESSION, heartbeat_interval_s=INTERVAL)
    c.set_partitions({"t": 3})
    c.heartbeat(HeartbeatRequest("A", JOIN_EPOCH, ("t",)), 0.0)
    c.heartbeat(HeartbeatRequest("B", JOIN_EPOCH, ("t",)), 0.0)
    c.heartbeat(HeartbeatRequest("A", 1, owned=c.members["A"].assigned), 0.1)
    data = encode_state(c)
    d = ConsumerGroupCoordinator("g", session_timeout_s=SESSION, heartbeat_interval_s=INTERVAL)
    restore_state(d, read_coordinator_state(data, Kip848Paths("g").state), 5.0)
    assert encode_state(d) == data and d.holder == c.holder


def overlaps(spans):
    """(partition, member, start, end) spans -> the first two members using one partition at once."""
    by_tp = {}
    for tp, mid, start, end in spans:
        by_tp.setdefault(tp, []).append((start, end, mid))
    for tp, lst in by_tp.items():
        reach, holder = float("-inf"), None
        for start, end, mid in sorted(lst):
            if start < reach and mid != holder:
                return f"{tp}: {holder} (until {reach:.3f}) and {mid} (from {start:.3f})"
            if end > reach:
                reach, holder = end, mid
    return None


def child_spans(log_path, member):
    spans, live = [], {}
    for line in log_path.read_text().splitlines():
        event = json.loads(line)
        for t, p in event.get("tps", []):
            tp = TopicPartition(t, p)
            if event["ev"] == "start":
                live[tp] = event["t"]
            elif event["ev"] == "stop" and tp in live:
                spans.append((tp, member, live.pop(tp), event["t"]))
    return spans + [(tp, member, start, float("inf")) for tp, start in live.items()]


@pytest.mark.zookeeper
async def test_sigstopped_member_is_fenced_by_the_rebalance_timeout(zk_server, tmp_path):
    """A member stuck in its revocation (SIGSTOPped by PID) past its rebalance timeout is fenced; its
    partitions go to the others only after its lease ended; it rejoins when continued."""
    import os
    import signal
    import subprocess
    import sys

    from tests.kafka.group.conftest import ZooKeeperService

    svc = ZooKeeperService(zk_server)
    await svc.setup()
    run = GroupRun(
        "stall", TOPICS, svc.new_store, kip848(), make_coordinator=coordinator(), settle_timeout_s=60
    )
    await run.setup()
    log = tmp_path / "child.jsonl"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.kafka.group.kip848_member_process",
            f"{zk_server.hosts}{svc.chroot}",
            "stall",
            "child",
            str(log),
            "--topics",
            ",".join(TOPICS),
            "--stall-on-revoke",
            "2.0",
            "--rebalance-timeout",
            str(REBALANCE),
            "--session-timeout",
            str(SESSION),
            "--heartbeat-interval",
            str(INTERVAL),
        ],
        cwd=os.getcwd(),
    )
    stopped = False
    try:
        c = run.coordinator.coordinator
        total = sum(TOPICS.values())
        await eventually(
            lambda: (
                c.is_stable() and len(c.members.get("child") and c.members["child"].assigned or ()) == total
            ),
            timeout=30.0,
            message="the child owns everything",
        )

        async def stop_when_revoking():
            nonlocal stopped
            await eventually(
                lambda: log.exists() and '"revoking"' in log.read_text(), timeout=30.0, message="revoking"
            )
            os.kill(child.pid, signal.SIGSTOP)
            stopped = True

        stopper = asyncio.create_task(stop_when_revoking())
        await run.join("consumer-1")  # settles once the child is fenced and consumer-1 holds everything
        await stopper
        fenced = [reason for _, mid, reason in run.coordinator.fenced if mid == "child"]
        assert fenced and fenced[0].startswith("rebalance timeout"), run.coordinator.fenced
        assert set((await run.ownership()).values()) == {"consumer-1"}
        os.kill(child.pid, signal.SIGCONT)
        stopped = False
        await eventually(
            lambda: c.is_stable() and "child" in c.members and c.members["child"].assigned,
            timeout=30.0,
            message="the child rejoined and got its share",
        )
        await checked_state(run, settled=True)
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=30)
        await run.wait_settled()
        spans = list(run.tracker.intervals) + [
            (tp, m, since, float("inf")) for tp, (m, since) in run.tracker._live.items()
        ]
        spans += child_spans(log, "child")
        assert not overlaps(spans), overlaps(spans)
        assert not run.tracker.violations
        assert '"left"' in log.read_text()
    finally:
        if stopped:
            os.kill(child.pid, signal.SIGCONT)
        if child.poll() is None:
            child.kill()
            child.wait()
        await run.close()
        await svc.close()
