"""The topic engine: retention until acknowledged, dispatch by subscription type, redelivery, readers,
backlog quota, non-persistent drops, and a topic reopened on its log (as the next owner opens it)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokerlb.dispatch import DispatchConsumer
from brokerlb.errors import ConsumerBusyError
from brokerlb.messaging import (
    EARLIEST,
    BacklogQuota,
    BacklogQuotaExceeded,
    Entry,
    ProducerBusyError,
    Retention,
    Topic,
)
from brokerlb.messaging.frames import payload_section
from brokerlb.messaging.wire import MessageMetadata


class Sink:
    def __init__(self) -> None:
        self.got: list[tuple[int, int]] = []  # (entry id, redelivery count)
        self.active: list[bool] = []

    def deliver(self, entry: Entry, redelivery_count: int, unacked_mask: int | None) -> None:
        self.got.append((entry.entry_id, redelivery_count))

    def active_changed(self, is_active: bool) -> None:
        self.active.append(is_active)

    @property
    def ids(self) -> list[int]:
        return [e for e, _ in self.got]


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def now(self) -> float:
        return self.t

    def now_ms(self) -> int:
        return int(self.t * 1000)


def make_topic(name: str = "persistent://t/ns/topic", **options: object) -> tuple[Topic, Clock]:
    clock = Clock()
    return Topic(name, ledger_id=42, window=5, now=clock.now, now_ms=clock.now_ms, **options), clock  # type: ignore[arg-type]


def section(key: str | None = None, size: int = 10) -> bytes:
    return payload_section(MessageMetadata("p", 0, 1, partition_key=key), b"x" * size)


def attach(
    topic: Topic, sub: str, kind: str, name: str, permits: int = 1000, **kw: object
) -> tuple[DispatchConsumer, Sink]:
    consumer, sink = DispatchConsumer(name, permits=permits), Sink()
    topic.subscribe(sub, kind, consumer, sink, **kw)  # type: ignore[arg-type]
    return consumer, sink


def ack(topic: Topic, sub: str, consumer: DispatchConsumer, *ids: int) -> int:
    return topic.acknowledge(sub, consumer, [(42, i, None) for i in ids])


def test_a_durable_subscription_keeps_what_was_published_while_no_consumer_was_there() -> None:
    topic, _ = make_topic()
    consumer, sink = attach(topic, "s", "Shared", "c1")
    topic.detach("s", consumer)
    ids = [topic.publish(section()) for _ in range(3)]
    assert ids == [0, 1, 2] and len(topic.log.entries) == 3
    c2, sink2 = attach(topic, "s", "Shared", "c2")
    assert sink2.ids == [0, 1, 2]
    assert ack(topic, "s", c2, 0, 1, 2) == 3
    assert not topic.log.entries and topic.backlog("s") == 0


def test_entries_leave_once_every_subscription_acknowledged_them_and_retention_can_keep_them() -> None:
    topic, _ = make_topic()
    a, _ = attach(topic, "a", "Exclusive", "a")
    b, _ = attach(topic, "b", "Exclusive", "b")
    topic.publish(section())
    ack(topic, "a", a, 0)
    assert len(topic.log.entries) == 1  # b still needs it
    ack(topic, "b", b, 0)
    assert not topic.log.entries
    kept, _ = make_topic(retention=Retention(time_ms=-1, size_bytes=-1))
    c, _ = attach(kept, "a", "Exclusive", "a")
    kept.publish(section())
    ack(kept, "a", c, 0)
    assert len(kept.log.entries) == 1
    r, reader = attach(kept, "reader-1", "Exclusive", "r", durable=False, start=EARLIEST)
    assert reader.ids == [0]


def test_permits_bound_deliveries_and_a_batch_uses_one_permit_per_message() -> None:
    topic, _ = make_topic()
    consumer, sink = attach(topic, "s", "Exclusive", "c", permits=3)
    topic.publish(section(), num_messages=2)
    topic.publish(section(), num_messages=2)
    topic.publish(section())
    assert sink.ids == [0, 1] and consumer.permits == -1
    topic.flow("s", consumer, 2)
    assert sink.ids == [0, 1, 2]


def test_shared_redelivers_nacked_entries_with_a_growing_redelivery_count() -> None:
    topic, _ = make_topic()
    c1, s1 = attach(topic, "s", "Shared", "c1")
    topic.publish(section())
    topic.publish(section())
    assert s1.got == [(0, 0), (1, 0)]
    assert topic.redeliver("s", c1, [(42, 1)]) == 1
    assert s1.got[-1] == (1, 1)
    topic.redeliver("s", c1, [(42, 1)])
    assert s1.got[-1] == (1, 2)
    ack(topic, "s", c1, 0, 1)
    assert topic.backlog("s") == 0


def test_a_consumer_leaving_hands_its_unacknowledged_entries_to_the_others() -> None:
    topic, _ = make_topic()
    c1, s1 = attach(topic, "s", "Shared", "c1")
    topic.publish(section())
    c2, s2 = attach(topic, "s", "Shared", "c2")
    topic.detach("s", c1)
    assert s2.got == [(0, 0)]  # moved, count unchanged (Pulsar's addIfAbsent)


def test_exclusive_refuses_a_second_consumer_and_types_must_match() -> None:
    topic, _ = make_topic()
    attach(topic, "s", "Exclusive", "c1")
    with pytest.raises(ConsumerBusyError):
        attach(topic, "s", "Exclusive", "c2")
    with pytest.raises(ConsumerBusyError):
        attach(topic, "s", "Shared", "c3")


def test_failover_tells_consumers_who_is_active_and_the_next_active_gets_what_was_pending() -> None:
    topic, _ = make_topic()
    c1, s1 = attach(topic, "s", "Failover", "c1")
    c2, s2 = attach(topic, "s", "Failover", "c2")
    assert s1.active == [True] and s2.active == [False]
    topic.publish(section())
    assert s1.ids == [0] and s2.ids == []
    topic.detach("s", c1)
    assert s2.active[-1] is True and s2.ids == [0]


def test_cumulative_ack_on_exclusive_and_ignored_on_shared() -> None:
    topic, _ = make_topic()
    c, _ = attach(topic, "s", "Exclusive", "c")
    for _ in range(4):
        topic.publish(section())
    assert topic.acknowledge("s", c, [(42, 2, None)], cumulative=True) == 3
    assert topic.backlog("s") == 1
    shared, _ = make_topic()
    c2, _ = attach(shared, "s", "Shared", "c")
    shared.publish(section())
    assert shared.acknowledge("s", c2, [(42, 0, None)], cumulative=True) == 0


def test_batch_index_acks_complete_an_entry_when_every_index_is_acknowledged() -> None:
    topic, _ = make_topic()
    c, _ = attach(topic, "s", "Exclusive", "c")
    topic.publish(section(), num_messages=3)
    # ack_set bits = indexes still unacknowledged; the broker ANDs what it receives
    assert topic.acknowledge("s", c, [(42, 0, 0b110)]) == 0  # index 0
    assert topic.acknowledge("s", c, [(42, 0, 0b101)]) == 0  # index 1
    assert topic.subscriptions["s"].partial == {0: 0b100}
    assert topic.acknowledge("s", c, [(42, 0, 0b011)]) == 1  # index 2: the entry is done
    assert topic.backlog("s") == 0 and not topic.log.entries


def test_key_shared_keeps_each_key_in_order_when_its_consumer_is_out_of_permits() -> None:
    topic, _ = make_topic()
    c1, s1 = attach(topic, "s", "Key_Shared", "c1", permits=1)
    for key in ("a", "a", "a"):
        topic.publish(section(key))
    assert s1.ids == [0]
    topic.flow("s", c1, 2)
    assert s1.ids == [0, 1, 2]


def test_a_consumer_joining_key_shared_waits_until_older_entries_are_acknowledged() -> None:
    topic, _ = make_topic()
    c1, s1 = attach(topic, "s", "Key_Shared", "c1")
    keys = [f"k{i}" for i in range(40)]
    for key in keys:
        topic.publish(section(key))
    c2, s2 = attach(topic, "s", "Key_Shared", "c2")
    for key in keys:
        topic.publish(section(key))
    assert s2.ids == []  # every key it now owns has older entries pending on c1
    ack(topic, "s", c1, *range(40))
    assert s2.ids and all(e >= 40 for e in s2.ids)
    assert sorted(s1.ids + s2.ids) == list(range(80))


def test_a_reader_starts_at_a_message_id_inclusively_and_goes_away_with_its_consumer() -> None:
    topic, _ = make_topic(retention=Retention(time_ms=-1, size_bytes=-1))
    for _ in range(5):
        topic.publish(section())
    r, sink = attach(topic, "reader", "Exclusive", "r", durable=False, start=(42, 3))
    assert sink.ids == [3, 4]
    topic.detach("reader", r)
    assert "reader" not in topic.subscriptions


def test_seek_moves_the_cursor_back() -> None:
    topic, _ = make_topic()
    c, sink = attach(topic, "s", "Exclusive", "c")
    for _ in range(3):
        topic.publish(section())
    ack(topic, "s", c, 0, 1, 2)
    assert topic.backlog("s") == 0
    topic.seek("s", EARLIEST)
    assert topic.backlog("s") == 0  # nothing retained before the acks: earliest = the end


def test_backlog_quota_policies() -> None:
    quota = 3 * len(section())
    held, _ = make_topic(backlog_quota=BacklogQuota(quota, "producer_request_hold"))
    c, _ = attach(held, "s", "Exclusive", "c", permits=0)
    released: list[tuple[object, int]] = []
    held.on_stored = lambda token, ledger, entry_id: released.append((token, entry_id))
    assert [held.publish(section(), token=i) for i in range(5)] == [0, 1, 2, 3, None]
    ack(held, "s", c, 0, 1)
    assert released == [(4, 4)]
    refused, _ = make_topic(backlog_quota=BacklogQuota(quota, "producer_exception"))
    attach(refused, "s", "Exclusive", "c", permits=0)
    for _ in range(4):
        refused.publish(section())
    with pytest.raises(BacklogQuotaExceeded, match="backlog quota"):
        refused.publish(section())
    evicting, _ = make_topic(backlog_quota=BacklogQuota(quota, "consumer_backlog_eviction"))
    attach(evicting, "s", "Exclusive", "c", permits=0)
    for _ in range(10):
        evicting.publish(section())
    assert evicting.backlog_bytes() <= quota + len(section()) and evicting.evicted > 0


def test_non_persistent_topics_drop_what_no_consumer_can_take() -> None:
    topic, _ = make_topic("non-persistent://t/ns/np")
    c, sink = attach(topic, "s", "Shared", "c", permits=1)
    topic.publish(section())
    topic.publish(section())
    assert sink.ids == [0] and topic.subscriptions["s"].dropped == 1 and not topic.log.entries


def test_producer_names_are_unique_per_topic_and_a_fenced_topic_ignores_publishes() -> None:
    topic, _ = make_topic()
    one, two = object(), object()
    topic.add_producer("p", one)
    with pytest.raises(ProducerBusyError, match="already connected"):
        topic.add_producer("p", two)
    topic.remove_producer("p", one)
    topic.add_producer("p", two)
    topic.fenced = True
    assert topic.publish(section()) is None and topic.next_entry_id == 0


def reopen(topic: Topic, clock: Clock) -> Topic:
    """The topic opened again on its log (as the next owner opens it from storage): durable
    subscriptions come back from their cursors, what was pending is unacknowledged."""
    again = Topic(topic.name, window=5, now=clock.now, now_ms=clock.now_ms, log=topic.log)
    for sub in topic.subscriptions.values():
        if sub.durable:
            again.restore_subscription(sub.name, sub.type, sub.cursor())
    return again


def test_a_reopened_topic_redelivers_everything_unacknowledged_with_the_same_ids() -> None:
    topic, clock = make_topic()
    c, _ = attach(topic, "s", "Shared", "c")
    for _ in range(5):
        topic.publish(section())
    ack(topic, "s", c, 0, 2)
    topic.redeliver("s", c, [(42, 3)])
    moved = reopen(topic, clock)
    c2, sink = attach(moved, "s", "Shared", "c2")
    assert sink.got == [(1, 0), (3, 1), (4, 0)]
    assert moved.publish(section()) == 5  # ids continue


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["pub", "ack", "nack", "flow", "move", "bounce"]),
            st.integers(0, 30),
        ),
        max_size=60,
    ),
    st.sampled_from(["Shared", "Key_Shared", "Failover", "Exclusive"]),
)
def test_nothing_published_is_lost_whatever_happens(ops: list[tuple[str, int]], kind: str) -> None:
    """Every published entry is acknowledged, pending or still to be delivered -- through nacks,
    consumers coming and going, and hand-offs to a new owner."""
    topic, clock = make_topic()
    published: set[int] = set()
    acked: set[int] = set()
    consumer, sink = attach(topic, "s", kind, "c", permits=5)
    for op, n in ops:
        if op == "pub":
            entry_id = topic.publish(section(f"k{n % 4}"))
            assert entry_id is not None
            published.add(entry_id)
        elif op == "ack" and sink.got:
            entry_id = sink.got[n % len(sink.got)][0]
            ack(topic, "s", consumer, entry_id)
            acked.add(entry_id)
        elif op == "nack" and sink.got:
            topic.redeliver("s", consumer, [(42, sink.got[n % len(sink.got)][0])])
        elif op == "flow":
            topic.flow("s", consumer, n % 5)
        elif op == "bounce":
            topic.detach("s", consumer)
            consumer, sink = attach(topic, "s", kind, "c", permits=5)
        elif op == "move":
            topic.detach("s", consumer)
            topic = reopen(topic, clock)
            consumer, sink = attach(topic, "s", kind, "c", permits=5)
    topic.flow("s", consumer, 10_000)
    delivered_now = {e for e, _ in sink.got}
    assert published - acked <= delivered_now  # everything unacknowledged reaches the consumer
    assert topic.backlog("s") == len(published - acked)


def test_redelivery_is_bounded_by_the_consumers_permits() -> None:
    topic, _ = make_topic()
    consumer, sink = attach(topic, "s", "Exclusive", "c", permits=3)
    for _ in range(5):
        topic.publish(section())
    assert sink.ids == [0, 1, 2] and consumer.permits == 0
    for _ in range(10):  # REDELIVER_UNACKNOWLEDGED_MESSAGES again and again: nothing without permits
        topic.redeliver("s", consumer)
    assert sink.ids == [0, 1, 2]
    topic.flow("s", consumer, 2)
    assert sink.got[3:] == [(0, 1), (1, 1)]  # counted once: they were no longer pending


def test_a_consumer_whose_connection_is_unwritable_is_skipped_until_it_drains() -> None:
    topic, _ = make_topic()
    c1, s1 = attach(topic, "s", "Shared", "c1")
    c2, s2 = attach(topic, "s", "Shared", "c2")
    c1.writable = False
    for _ in range(4):
        topic.publish(section())
    assert s1.ids == [] and s2.ids == [0, 1, 2, 3]
    c2.writable = False
    topic.publish(section())
    assert s1.ids == [] and s2.ids == [0, 1, 2, 3]  # kept, not dropped
    c1.writable = True
    topic.flow("s", c1, 0)  # the connection drained: what waited goes out
    assert s1.ids == [4]
