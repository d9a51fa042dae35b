"""The topic engine on a managed ledger: commits, rollover, reads from storage, cursors across opens."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from brokerlb.clock import ManualClock
from brokerlb.dispatch import DispatchConsumer
from brokerlb.messaging import Entry, Topic
from brokerlb.messaging.frames import payload_section
from brokerlb.messaging.wire import MessageMetadata
from brokerlb.mledger import ManagedLedgerConfig
from brokerlb.storage import open_storage
from brokerlb.storage.managed_ledger import ManagedLedgerFactory

NAME = "persistent://t/ns/orders"
ML = "t/ns/persistent/orders"


def section(i: int) -> bytes:
    return payload_section(MessageMetadata("p", i, 1), f"m{i}".encode())


class Sink:
    def __init__(self) -> None:
        self.got: list[tuple[int, int, int]] = []

    def deliver(self, entry: Entry, redelivery_count: int, unacked_mask: int | None) -> None:
        self.got.append((entry.ledger_id, entry.entry_id, redelivery_count))

    def active_changed(self, is_active: bool) -> None:
        pass


@pytest.fixture(params=["memory", "sqlite"])
def url(request, tmp_path) -> str:
    return f"memory:ml-{uuid.uuid4().hex[:8]}" if request.param == "memory" else f"sqlite:{tmp_path}/s"


async def factory(url: str, clock: ManualClock, owner: str, **options: object) -> ManagedLedgerFactory:
    config = ManagedLedgerConfig(max_entries_per_ledger=4, min_rollover_ms=0)
    return await ManagedLedgerFactory(open_storage(url), config, clock=clock, owner=owner, **options).start()  # type: ignore[arg-type]


async def open_topic(storage: ManagedLedgerFactory, clock: ManualClock) -> Topic:
    epoch = await storage.fence("t/ns", 0, 1 << 32)
    ledger = await storage.open(ML, "t/ns", 7, epoch)
    assert ledger is not None
    topic = Topic(NAME, window=5, now=clock.monotonic, now_ms=clock.now_ms, log=ledger)
    topic.on_stored = lambda token, ledger_id, entry_id: token(ledger_id, entry_id)  # type: ignore[operator]
    for info in ledger.stored_cursors.values():
        topic.restore_subscription(info.name, info.subscription_type, info.state(ledger.ledgers))
    ledger.cursor_source = lambda name: (
        (topic.subscriptions[name].type, topic.subscriptions[name].cursor())
        if name in topic.subscriptions
        else None
    )
    return topic


async def settle(storage: ManagedLedgerFactory) -> None:
    for _ in range(20):
        await storage.committer.drain()
        await asyncio.sleep(0.01)


async def test_receipts_follow_commits_ledgers_roll_over_and_the_next_owner_reads_everything_back(url):
    clock = ManualClock(1_000_000)
    first = await factory(url, clock, "b1")
    topic = await open_topic(first, clock)
    receipts: list[tuple[int, int]] = []
    for i in range(10):
        assert topic.publish(section(i), token=lambda ledger, entry: receipts.append((ledger, entry))) is None
    await settle(first)
    assert len(receipts) == 10 and receipts == sorted(receipts)
    ledger = topic.log
    assert len({r[0] for r in receipts}) >= 3  # rolled over every 4 entries
    sub_consumer = DispatchConsumer("c", permits=100)
    sink = Sink()
    topic.subscribe("s", "Shared", sub_consumer, sink, initial_position="earliest")
    await settle(first)
    assert [(lg, e) for lg, e, _ in sink.got] == receipts
    # acknowledge some individually, one cumulatively-ordered prefix, redeliver one
    topic.acknowledge("s", sub_consumer, [(lg, e, None) for lg, e in receipts[:3]] + [(*receipts[5], None)])
    topic.redeliver("s", sub_consumer, [receipts[4]])
    await settle(first)
    await ledger.close()  # type: ignore[attr-defined]
    # the next owner: nothing in its cache, everything read back from storage
    second = await factory(url, clock, "b2", cache_bytes=0)
    again = await open_topic(second, clock)
    assert again.backlog("s") == 6
    sink2 = Sink()
    again.subscribe("s", "Shared", DispatchConsumer("c2", permits=100), sink2)
    await settle(second)
    expected = [r for i, r in enumerate(receipts) if i not in (0, 1, 2, 5)]
    assert [(lg, e) for lg, e, _ in sink2.got] == expected
    assert [c for lg, e, c in sink2.got if (lg, e) == receipts[4]] == [1]  # the redelivery count survived
    await first.close()
    await second.close()


async def test_a_fenced_ledger_stops_the_topic_and_acknowledges_nothing_more(url):
    clock = ManualClock(1_000_000)
    old = await factory(url, clock, "b1")
    topic = await open_topic(old, clock)
    failed: list[object] = []
    topic.on_failed = failed.append
    receipts: list[tuple[int, int]] = []
    topic.publish(section(0), token=lambda ledger, entry: receipts.append((ledger, entry)))
    await settle(old)
    new = await factory(url, clock, "b2")
    await new.fence("t/ns", 0, 1 << 32)  # another broker takes the range
    for i in range(1, 5):
        topic.publish(section(i), token=lambda ledger, entry: receipts.append((ledger, entry)))
    await settle(old)
    assert len(receipts) == 1 and failed and topic.fenced
    await old.close()
    await new.close()


async def test_reopening_a_topic_with_many_entries_reads_no_entry(url):
    """Opening loads the ledger list and cursors, not the backlog."""
    clock = ManualClock(1_000_000)
    storage = await factory(url, clock, "b1")
    topic = await open_topic(storage, clock)
    for i in range(200):
        topic.publish(section(i))
    await settle(storage)
    await topic.log.close()  # type: ignore[attr-defined]
    reopened = await open_topic(storage, clock)
    assert reopened.log.next_seq == 200 and storage.cache.size == 0
    await storage.close()


async def test_internal_stats_show_the_managed_ledger_with_pulsars_names(url):
    from brokerlb.broker.data.data_path import DataPath
    from brokerlb.broker.data.served_topics import ServedTopics
    from brokerlb.broker.data.topics import TopicRegistry
    from brokerlb.naming import TopicName

    class Owned:
        def is_owned(self, bundle: object) -> bool:
            return True

        def serving(self, bundle: object) -> bool:
            return True

        async def serving_soon(self, bundle: object) -> bool:
            return True

    clock = ManualClock(1_000_000)
    storage = await factory(url, clock, "b1")
    registry = TopicRegistry(lambda topic: "t/ns/0x00000000_0xffffffff")
    path = DataPath(
        registry=registry,
        ownership=Owned(),
        bundle_of=lambda topic: "t/ns/0x00000000_0xffffffff",
        broker_urls=lambda b: (None, None),
        stats_window=2,
        clock=clock,
        storage=storage,
    )
    served = await path.open(TopicName.parse(NAME))
    consumer = DispatchConsumer("c", permits=0)
    served.topic.subscribe("s", "Shared", consumer, Sink())
    for i in range(6):
        served.topic.publish(section(i))
    await settle(storage)
    first = served.ledger.ledgers.ledgers[0]
    served.topic.acknowledge("s", consumer, [(first.ledger_id, 0, None), (first.ledger_id, 2, None)])
    stats = ServedTopics(registry, path, "b1").internal_stats(NAME)
    assert stats["numberOfEntries"] == 6 and stats["entriesAddedCounter"] == 6
    assert stats["state"] == "LedgerOpened" and stats["totalSize"] == sum(len(section(i)) for i in range(6))
    assert [ledger["entries"] for ledger in stats["ledgers"]] == [4, 2]  # rolled over at 4
    last = stats["ledgers"][-1]["ledgerId"]
    assert stats["lastConfirmedEntry"] == f"{last}:1"
    cursor = stats["cursors"]["s"]
    assert cursor["markDeletePosition"] == f"{first.ledger_id}:0"
    assert cursor["individuallyDeletedMessages"] == f"[({first.ledger_id}:1..{first.ledger_id}:2]]"
    assert cursor["numberOfEntriesSinceFirstNotAckedMessage"] == 5
    await storage.close()


class Counting:
    """An engine whose calls are counted (a proxy: every call goes to the real engine)."""

    def __init__(self, engine: object) -> None:
        self.engine = engine
        self.calls: list[tuple[str, int]] = []

    def __getattr__(self, name: str) -> object:
        attr = getattr(self.engine, name)
        if name not in ("fence", "open_topic", "close_topics", "save_cursors"):
            return attr

        async def counted(*args: object, **kwargs: object) -> object:
            self.calls.append((name, len(args[0]) if name == "close_topics" else 1))  # type: ignore[arg-type]
            return await attr(*args, **kwargs)

        return counted


async def test_a_bundles_topics_close_in_one_write_and_the_next_owner_opens_them_with_its_fence(url):
    clock = ManualClock(1_000_000)
    names = [f"t/ns/persistent/m{i}" for i in range(5)]
    source = await factory(url, clock, "b1")
    epoch = await source.fence("t/ns", 0, 1 << 32)
    ledgers = [await source.open(name, "t/ns", i, epoch) for i, name in enumerate(names)]
    for ledger in ledgers:
        assert ledger is not None
        ledger.append(section(0), 1, 1, None)
    counted = Counting(source.engine)
    source.engine = counted  # type: ignore[assignment]
    await asyncio.gather(*(ledger.close() for ledger in ledgers if ledger is not None))  # a bundle closing
    assert counted.calls == [("close_topics", 5)]  # pending committed first, then one write for all
    assert not source.ledgers

    destination = await factory(url, clock, "b2", unclaimed_seconds=30)
    counted = Counting(destination.engine)
    destination.engine = counted  # type: ignore[assignment]
    epoch2 = await destination.fence("t/ns", 0, 1 << 32)
    assert sorted(destination.unclaimed) == names
    for i, name in enumerate(names[:4]):  # their clients come back: no storage call
        ledger = await destination.open(name, "t/ns", i, epoch2)
        assert ledger is not None and ledger.next_seq == 1 and ledger.ledgers.current is not None
        assert not ledger.ledgers.current.closed and ledger.epoch == epoch2
    assert counted.calls == [("fence", 1)]
    # the one nobody came for is closed as idle after unclaimed_seconds: the next fence leaves it
    clock.advance(31)
    await destination._close_unclaimed()
    assert not destination.unclaimed and counted.calls[-1] == ("close_topics", 1)
    third = await factory(url, clock, "b3")
    await third.fence("t/ns", 0, 1 << 32)
    assert sorted(third.unclaimed) == names[:4]
    for storage in (source, destination, third):
        await storage.close()
