"""The broker's data path without sockets: ownership checks, close reasons, stats into the registry."""

from __future__ import annotations

import asyncio

import pytest

from brokerlb.broker.data.data_path import DataPath
from brokerlb.broker.data.topics import CloseCause, TopicRegistry
from brokerlb.clock import ManualClock
from brokerlb.dispatch import DispatchConsumer
from brokerlb.errors import BundleUnloadingError
from brokerlb.messaging import CloseCode, CloseReason
from brokerlb.messaging.frames import payload_section
from brokerlb.messaging.wire import MessageMetadata
from brokerlb.naming import TopicName
from brokerlb.ring import NamespaceBundles

BUNDLES = NamespaceBundles.create("t/ns", 4)
TOPIC = TopicName.parse("persistent://t/ns/orders")
BUNDLE = str(BUNDLES.find_bundle(TOPIC))
SECTION = payload_section(MessageMetadata("p", 0, 1), b"hello")
URLS = {"b2:8080": ("http://b2:8080", "pulsar://b2:6650")}


class Owned:
    def __init__(self, *bundles: str) -> None:
        self.bundles = set(bundles)

    def is_owned(self, bundle: object) -> bool:
        return str(bundle) in self.bundles

    def serving(self, bundle: object) -> bool:
        return self.is_owned(bundle)

    async def serving_soon(self, bundle: object) -> bool:
        return self.serving(bundle)


class Session:
    def __init__(self) -> None:
        self.closed_with: CloseReason | None = None

    async def close(self, reason: CloseReason) -> None:
        self.closed_with = reason


def data_path(owned: Owned, clock: ManualClock, storage: object = None) -> tuple[DataPath, TopicRegistry]:
    def bundle_of(topic: TopicName) -> str:
        return str(BUNDLES.find_bundle(topic))

    registry = TopicRegistry(bundle_of)
    path = DataPath(
        registry=registry,
        ownership=owned,
        bundle_of=bundle_of,
        broker_urls=lambda b: URLS.get(b, (None, None)),
        stats_window=2,
        clock=clock,
        storage=storage,  # type: ignore[arg-type]
    )
    return path, registry


async def test_a_topic_is_served_only_while_its_bundle_is_owned() -> None:
    owned, clock = Owned(), ManualClock(1_000_000)
    path, registry = data_path(owned, clock)
    with pytest.raises(BundleUnloadingError, match="not served by this broker"):
        await path.open(TOPIC)
    assert TOPIC not in registry
    owned.bundles.add(BUNDLE)
    served = await path.open(TOPIC)
    assert str(TOPIC) in registry and await path.open(TOPIC) is served  # one topic, many sessions


async def test_refusals_name_the_owner_when_another_broker_has_the_bundle() -> None:
    path, _ = data_path(Owned(), ManualClock(0))
    redirect = path.refusal(TOPIC, lambda bundle: "b2:8080" if bundle == BUNDLE else None)
    assert (redirect.code, redirect.http_url) == (CloseCode.TOPIC_REDIRECTED, "http://b2:8080")
    assert path.refusal(TOPIC, lambda bundle: None).code is CloseCode.SERVICE_NOT_READY
    assert path.refusal(TOPIC, lambda bundle: "gone:1").code is CloseCode.SERVICE_NOT_READY  # no registration


async def test_closing_the_bundle_closes_every_session_with_the_reason_of_the_move() -> None:
    owned, clock = Owned(BUNDLE), ManualClock(0)
    path, registry = data_path(owned, clock)
    served = await path.open(TOPIC)
    sessions = [Session(), Session()]
    for s in sessions:
        path.add_session(served, s)
    registry.fence_bundle(BUNDLE)
    assert served.topic.fenced and served.topic.publish(SECTION) is None
    await registry.close_bundle(BUNDLE, timeout=30, cause=CloseCause.transfer("b2:8080"))
    assert all(
        s.closed_with == CloseReason.transferred("http://b2:8080", "pulsar://b2:6650") for s in sessions
    )
    assert served.closed and str(TOPIC) not in path.topics and path.closes == {"TopicTransferred": 2}
    # a transfer to a broker without a registration, and a loss: "look it up again"
    assert path.close_reason(CloseCause.transfer("gone:1")).lookup
    assert path.close_reason(CloseCause("lost")).message == "bundle lost"


class Sink:
    def __init__(self) -> None:
        self.got: list[int] = []

    def deliver(self, entry: object, redelivery_count: int, unacked_mask: int | None) -> None:
        self.got.append(entry.entry_id)  # type: ignore[attr-defined]

    def active_changed(self, is_active: bool) -> None:
        pass


async def test_rates_reach_the_registry_and_topics_with_nothing_to_keep_are_forgotten() -> None:
    owned, clock = Owned(BUNDLE), ManualClock(0)
    path, registry = data_path(owned, clock)
    served = await path.open(TOPIC)
    session = Session()
    path.add_session(served, session)
    producer = object()
    served.topic.add_producer("p", producer)
    consumer = DispatchConsumer("c", permits=100)
    served.topic.subscribe("s", "Shared", consumer, Sink())
    for _ in range(2):
        for _ in range(10):
            served.topic.publish(SECTION)
        clock.advance(1.0)
    path.push_stats()
    stats = registry.stats_of(TOPIC)
    assert stats is not None
    size = len(SECTION)
    assert (stats.msg_rate_in, stats.msg_throughput_in, stats.msg_rate_out) == (10.0, 10.0 * size, 10.0)
    assert (stats.producer_count, stats.consumer_count) == (1, 1)
    assert registry.bundle_stats()[BUNDLE].msg_rate_in == 10.0
    served.topic.remove_producer("p", producer)
    served.topic.detach("s", consumer)
    path.remove_session(served, session)  # idle from now on, but the durable subscription keeps 20 messages
    clock.advance(5.0)
    path.push_stats()
    assert TOPIC in registry and served.topic.backlog("s") == 20
    served.topic.unsubscribe("s", consumer)
    clock.advance(1.0)
    path.push_stats()
    assert TOPIC not in registry and str(TOPIC) not in path.topics


async def test_the_next_owner_opens_the_topic_from_storage_and_the_former_owner_is_fenced() -> None:
    """A move carries no data: the next owner opens the topic's managed ledger from the storage
    tier -- messages and cursors -- and the former owner can no longer append to it."""
    from brokerlb.storage.managed_ledger import ManagedLedgerFactory
    from brokerlb.storage.memory import MemoryStorage

    clock = ManualClock(0)
    name = f"dp-{id(clock)}"
    old_storage = await ManagedLedgerFactory(MemoryStorage(name), clock=clock, owner="b1").start()
    new_storage = await ManagedLedgerFactory(MemoryStorage(name), clock=clock, owner="b2").start()
    old, _ = data_path(Owned(BUNDLE), clock, storage=old_storage)
    served = await old.open(TOPIC)
    consumer = DispatchConsumer("c", permits=100)
    served.topic.subscribe("s", "Shared", consumer, Sink())
    receipts: list[tuple[int, int]] = []
    for _ in range(3):
        assert (
            served.topic.publish(SECTION, token=lambda ledger, entry: receipts.append((ledger, entry)))
            is None
        )
    assert receipts == []  # acknowledged only once committed
    await old_storage.committer.drain()
    ledger = served.ledger.ledgers.current.ledger_id
    assert receipts == [(ledger, 0), (ledger, 1), (ledger, 2)]
    served.topic.acknowledge("s", consumer, [(ledger, 0, None)])
    await served.ledger.flush_cursors()
    # the next owner: fences the bundle's range and opens the topic from storage
    new, _ = data_path(Owned(BUNDLE), clock, storage=new_storage)
    moved = (await new.open(TOPIC)).topic
    sink = Sink()
    moved.subscribe("s", "Shared", DispatchConsumer("c2", permits=100), sink)
    await asyncio.sleep(0)  # entries not in the new owner's cache are read back from storage
    for _ in range(5):
        await asyncio.sleep(0)
    assert sink.got == [1, 2]
    # the former owner's next append is refused by storage: its topic closes
    served.topic.publish(SECTION, token=lambda ledger, entry: receipts.append((ledger, entry)))
    await old_storage.committer.drain()
    assert len(receipts) == 3 and served.topic.fenced and old.ledger_failures == 1
    await old_storage.close()
    await new_storage.close()


async def test_a_topic_whose_first_session_never_started_is_forgotten_too() -> None:
    clock = ManualClock(0)
    path, registry = data_path(Owned(BUNDLE), clock)
    await path.open(TOPIC)  # e.g. the consumer was refused (Exclusive taken) before its session began
    clock.advance(3.0)
    path.push_stats()
    assert TOPIC not in registry and not path.topics


async def test_close_all_closes_every_session() -> None:
    path, _ = data_path(Owned(BUNDLE), ManualClock(0))
    session = Session()
    path.add_session(await path.open(TOPIC), session)
    await path.close_all()
    assert session.closed_with is not None and session.closed_with.lookup and not path.topics


async def test_stats_are_pushed_every_period_on_the_clock() -> None:
    import asyncio

    from brokerlb.broker.data.data_path import STATS_PERIOD

    clock = ManualClock(0)
    path, registry = data_path(Owned(BUNDLE), clock)
    served = await path.open(TOPIC)
    path.add_session(served, Session())
    pushing = asyncio.create_task(path.run())
    for _ in range(10):
        served.topic.publish(SECTION)
    await clock.advance_and_settle(STATS_PERIOD)  # the first push: the second is not complete yet
    assert registry.stats_of(TOPIC).msg_rate_in == 10.0
    await clock.advance_and_settle(3 * STATS_PERIOD)  # three more pushes: the window has slid past
    assert registry.stats_of(TOPIC).msg_rate_in == 0.0
    pushing.cancel()


async def test_publishes_are_ignored_while_the_bundle_is_not_served_now() -> None:
    """A broker that cannot confirm its ownership (its session unconfirmed after a pause) accepts no
    publish, as a fenced topic; once it serves the bundle again, publishes are stored."""
    owned = Owned(BUNDLE)
    path = DataPath(
        registry=TopicRegistry(lambda t: str(BUNDLES.find_bundle(t))),
        ownership=owned,
        bundle_of=lambda t: str(BUNDLES.find_bundle(t)),
        broker_urls=URLS.get,
        stats_window=5,
    )
    topic = (await path.open(TOPIC)).topic
    assert topic.publish(SECTION) == 0
    owned.bundles.clear()
    assert topic.publish(SECTION) is None
    owned.bundles.add(BUNDLE)
    assert topic.publish(SECTION) == 1


async def test_a_publish_asks_for_the_topics_bundle_again_only_when_the_ring_changed() -> None:
    """The check before every publish: is the topic's bundle served here now? Its name is computed
    once per ring version; after a split the topic belongs to a child, served or not."""
    split = NamespaceBundles.create("t/ns", 8)
    child = str(split.find_bundle(TOPIC))
    ring = {"bundles": BUNDLES, "version": 1}
    asked: list[TopicName] = []

    def bundle_of(topic: TopicName) -> str:
        asked.append(topic)
        return str(ring["bundles"].find_bundle(topic))  # type: ignore[attr-defined]

    owned = Owned(BUNDLE)
    path = DataPath(
        registry=TopicRegistry(bundle_of),
        ownership=owned,
        bundle_of=bundle_of,
        broker_urls=lambda b: (None, None),
        stats_window=2,
        clock=ManualClock(1_000_000),
        ring_version=lambda: ring["version"],  # type: ignore[return-value]
    )
    engine = (await path.open(TOPIC)).topic
    asked.clear()
    assert all(engine.accepting() for _ in range(5)) and len(asked) == 1
    ring.update(bundles=split, version=2)  # split: the parent is no longer held here
    owned.bundles = {child}
    assert child != BUNDLE and engine.accepting() and len(asked) == 2
    owned.bundles = set()
    assert engine.accepting() is False and len(asked) == 2
