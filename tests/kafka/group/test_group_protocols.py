"""The ZooKeeper-era protocol (Kafka 0.8) and the coordinator style, on the embedded store and on a real ZooKeeper."""

from __future__ import annotations

import json
import logging

import pytest

from brokerlb.errors import InvalidConfigError
from brokerlb.kafka.assignors import TopicPartition
from brokerlb.kafka.group import (
    CoordinatedGroupConsumer,
    GroupRun,
    ZkRebalancingConsumer,
    set_topic_partitions,
)
from brokerlb.kafka.group.common import read_owners
from brokerlb.testing.waiting import eventually

log = logging.getLogger(__name__)

TOPICS = {"orders": 6, "payments": 4}


def zookeeper_style(assignor="range", backoff=0.05):
    def make(store, group, cid, tracker):
        return ZkRebalancingConsumer(
            store,
            group,
            cid,
            list(TOPICS),
            assignor=assignor,
            tracker=tracker,
            rebalance_backoff_s=backoff,
            rebalance_max_retries=50,
        )

    return make


def coordinator_style(assignor="cooperative-sticky", incremental=True):
    def make(store, group, cid, tracker):
        return CoordinatedGroupConsumer(
            store, group, cid, list(TOPICS), assignor=assignor, incremental=incremental, tracker=tracker
        )

    return make


STYLES = {
    "zookeeper range": zookeeper_style("range"),
    "zookeeper roundrobin": zookeeper_style("roundrobin"),
    "coordinator cooperative-sticky": coordinator_style(),
    "coordinator range eager": coordinator_style("range", incremental=False),
}


async def five_join_then_leave(service, make, group="grp", make_coordinator=None) -> GroupRun:
    run = GroupRun(
        group, TOPICS, service.new_store, make, settle_timeout_s=30.0, make_coordinator=make_coordinator
    )
    await run.setup()
    try:
        for i in range(1, 6):
            await run.join(f"consumer-{i}")  # waits until settled; checks single ownership throughout
            assert len(await run.ownership()) == sum(TOPICS.values())
        for i in (3, 1, 5, 2, 4):
            await run.leave(f"consumer-{i}")
            if run.members:
                owners = await run.ownership()
                assert set(owners.values()) <= set(run.members)
                assert len(owners) == sum(TOPICS.values())
        assert not run.tracker.violations
    finally:
        await run.close()
    return run


@pytest.mark.parametrize("style", sorted(STYLES))
async def test_five_consumers_join_and_leave(service, style):
    run = await five_join_then_leave(service, STYLES[style])
    rows = [r.row() for r in run.reports]
    log.info("%s on %s:\n%s", style, service.name, "\n".join(json.dumps(r) for r in rows))
    print(f"\n{style} on {service.name}")  # rebalance durations recorded in the test output (-s)
    for r in rows:
        print("  ", json.dumps(r))
    assert len(rows) == 10 and all(r["settle_s"] >= 0 for r in rows)
    assert all(r["rebalances"] >= 1 for r in rows[:9])


async def test_incremental_coordinator_never_stops_the_world(memory_service):
    run = await five_join_then_leave(memory_service, coordinator_style())
    eager = await five_join_then_leave(memory_service, zookeeper_style(), group="eager")
    # after the first member, kept partitions keep being fetched: no group-wide pause
    assert all(r.pauses.stop_the_world_s == 0 for r in run.reports[1:9])
    assert all(r.pauses.stop_the_world_s > 0 for r in eager.reports[:9])
    assert sum(r.moved for r in run.reports) <= sum(r.moved for r in eager.reports)


async def test_zookeeper_style_retries_when_an_owner_node_is_still_held(memory_service):
    run = GroupRun(
        "grp", TOPICS, memory_service.new_store, zookeeper_style(backoff=0.02), settle_timeout_s=30.0
    )
    await run.setup()
    try:
        await run.join("consumer-1")
        slow = run.members["consumer-1"][1]
        slow.set_operation_delay(0.15)  # consumer-1 releases its owner nodes late
        report = await run.join("consumer-2")
        assert report.attempts > report.rebalances  # consumer-2 found nodes still held and backed off
        assert run.members["consumer-2"][0].failed_rebalances == 0
        slow.set_operation_delay(0.0)
    finally:
        await run.close()


async def test_new_partitions_trigger_a_rebalance(service):
    for n, make in enumerate((zookeeper_style(), coordinator_style())):
        run = GroupRun(f"grow-{n}", dict(TOPICS), service.new_store, make, settle_timeout_s=30.0)
        await run.setup()
        try:
            await run.join("consumer-1")
            await run.join("consumer-2")
            await set_topic_partitions(run.admin, "orders", 9)
            run.topics["orders"] = 9
            await run.wait_settled()
            assert TopicPartition("orders", 8) in await run.ownership()
        finally:
            await run.close()


async def test_crashed_member_partitions_are_taken_over(memory_service):
    for n, make in enumerate((zookeeper_style(), coordinator_style())):
        run = GroupRun(f"crash-{n}", TOPICS, memory_service.new_store, make, settle_timeout_s=30.0)
        await run.setup()
        try:
            for i in (1, 2, 3):
                await run.join(f"consumer-{i}")
            consumer, store = run.members.pop("consumer-2")
            store.crash()  # the server expires its session after the timeout; its ephemerals vanish
            run.tracker.stopped("consumer-2", consumer.owned)  # a crashed process fetches nothing
            await run.wait_settled()
            assert set((await run.ownership()).values()) == {"consumer-1", "consumer-3"}
            await consumer.stop()
        finally:
            await run.close()


async def test_session_expiry_re_registers(memory_service):
    run = GroupRun("grp", TOPICS, memory_service.new_store, zookeeper_style(), settle_timeout_s=30.0)
    await run.setup()
    try:
        await run.join("consumer-1")
        await run.join("consumer-2")
        consumer, store = run.members["consumer-1"]
        store.expire_session()
        await eventually(lambda: store.connected, message="new session")
        await run.wait_settled()
        owners = await run.ownership()
        assert set(owners.values()) == {"consumer-1", "consumer-2"}
    finally:
        await run.close()


async def test_coordinator_failover(memory_service):
    run = GroupRun("grp", TOPICS, memory_service.new_store, coordinator_style(), settle_timeout_s=30.0)
    await run.setup()
    try:
        for i in (1, 2, 3):
            await run.join(f"consumer-{i}")
        leaders = [cid for cid, (c, _) in run.members.items() if c.is_coordinator]
        assert leaders == ["consumer-1"]
        await run.leave("consumer-1")
        await eventually(
            lambda: [cid for cid, (c, _) in run.members.items() if c.is_coordinator] == ["consumer-2"],
            message="consumer-2 takes over",
        )
        await run.join("consumer-4")
        assert set((await run.ownership()).values()) == {"consumer-2", "consumer-3", "consumer-4"}
    finally:
        await run.close()


async def test_listener_hooks_and_owner_node_format(memory_service):
    calls = []

    class Listener:
        def before_releasing_partitions(self, owned):
            calls.append(("release", {t: sorted(ps) for t, ps in owned.items()}))

        def before_starting_fetchers(self, consumer_id, assignment):
            calls.append(("start", consumer_id, sorted(map(str, assignment[consumer_id]))))

    store = await memory_service.new_store()
    from brokerlb.kafka.group import GroupPaths, create_topic

    await create_topic(store, "orders", 2)
    consumer = await ZkRebalancingConsumer(
        store, "grp", "c1", ["orders"], listener=Listener(), rebalance_backoff_s=0.01
    ).start()
    await eventually(lambda: consumer.idle and consumer.owned, message="c1 owns its partitions")
    assert calls[0] == ("release", {}) and calls[-1] == ("start", "c1", ["orders-0", "orders-1"])
    node = await store.get(GroupPaths("grp").owner(TopicPartition("orders", 0)))
    assert node.data == b"c1-0" and node.stat.is_ephemeral
    registration = json.loads((await store.get("/consumers/grp/ids/c1")).data)
    assert registration["subscription"] == {"orders": 1} and registration["version"] == 1
    assert await read_owners(store, GroupPaths("grp"), ["orders"]) == {
        TopicPartition("orders", 0): "c1",
        TopicPartition("orders", 1): "c1",
    }
    await consumer.stop()
    assert await store.children("/consumers/grp/ids") == []


def test_zookeeper_style_refuses_stateful_assignors():
    with pytest.raises(InvalidConfigError, match="range, roundrobin"):
        ZkRebalancingConsumer(None, "g", "c", ["t"], assignor="sticky")  # type: ignore[arg-type]
    with pytest.raises(InvalidConfigError, match="rebalance.max.retries"):
        ZkRebalancingConsumer(None, "g", "c", ["t"], rebalance_max_retries=0)  # type: ignore[arg-type]
