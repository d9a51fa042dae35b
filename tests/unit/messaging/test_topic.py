"""An in-memory topic: non-persistent delivery through the subscription dispatchers."""

from __future__ import annotations

import collections

import pytest

from brokerlb.dispatch import DispatchConsumer
from brokerlb.errors import ConsumerBusyError, InvalidInputError
from brokerlb.messaging import ProducerMessage, Topic, decode_message_id


class Sink:
    def __init__(self) -> None:
        self.got: list[str] = []

    def deliver(self, message_id: str, frame: str, size: int) -> None:
        self.got.append(message_id)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def now(self) -> float:
        return self.t

    def now_ms(self) -> int:
        return int(self.t * 1000)


def make_topic(name: str = "persistent://t/ns/topic") -> tuple[Topic, Clock]:
    clock = Clock()
    return Topic(name, ledger_id=42, window=5, now=clock.now, now_ms=clock.now_ms), clock


def msg(key: str | None = None, size: int = 10) -> ProducerMessage:
    return ProducerMessage("QUFBQUFBQUFBQQ==", size, None, key)


def consumer(name: str, permits: int = 1000, priority: int = 0) -> tuple[DispatchConsumer, Sink]:
    return DispatchConsumer(name, priority_level=priority, permits=permits), Sink()


def test_publish_gives_increasing_ids_of_the_topics_ledger() -> None:
    topic, _ = make_topic("persistent://t/ns/orders-partition-3")
    ids = [topic.publish(msg()).message_id for _ in range(3)]  # type: ignore[union-attr]
    assert [decode_message_id(i) for i in ids] == [(42, 0, 3), (42, 1, 3), (42, 2, 3)]


def test_exclusive_takes_one_consumer_and_refuses_a_second() -> None:
    topic, _ = make_topic()
    a, sink = consumer("a")
    topic.subscribe("s", "Exclusive", a, sink)
    with pytest.raises(ConsumerBusyError, match="Exclusive consumer is already connected"):
        topic.subscribe("s", "Exclusive", *consumer("b"))
    delivery = topic.publish(msg())
    assert delivery is not None and delivery.receivers == {"s": a.consumer_id}
    assert sink.got == [delivery.message_id]


def test_shared_round_robins_and_failover_uses_one_active_consumer() -> None:
    topic, _ = make_topic()
    shared = [consumer(n) for n in "abc"]
    failover = [consumer(n) for n in "xy"]
    for c, s in shared:
        topic.subscribe("shared", "Shared", c, s)
    for c, s in failover:
        topic.subscribe("fail", "Failover", c, s)
    for _ in range(9):
        topic.publish(msg())
    assert [len(s.got) for _, s in shared] == [3, 3, 3]
    assert [len(s.got) for _, s in failover] == [9, 0]
    topic.unsubscribe("fail", failover[0][0])  # the active one leaves: the other takes over
    topic.publish(msg())
    assert len(failover[1][1].got) == 1


def test_key_shared_keeps_each_key_on_one_consumer() -> None:
    topic, _ = make_topic()
    members = [consumer(n) for n in "abc"]
    for c, s in members:
        topic.subscribe("ks", "Key_Shared", c, s)
    owner: dict[str, int] = {}
    for i in range(300):
        key = f"k{i % 20}"
        d = topic.publish(msg(key))
        assert d is not None
        receiver = d.receivers["ks"]
        assert owner.setdefault(key, receiver) == receiver  # type: ignore[arg-type]
    assert len(set(owner.values())) > 1  # keys spread over the consumers


def test_without_permits_messages_are_dropped_not_queued_and_acks_give_permits_back() -> None:
    topic, clock = make_topic()
    c, sink = consumer("slow", permits=2)
    topic.subscribe("s", "Shared", c, sink)
    deliveries = [topic.publish(msg()) for _ in range(5)]
    assert [d.receivers["s"] for d in deliveries if d] == [c.consumer_id] * 2 + [None] * 3
    assert topic.subscriptions["s"].dropped == 3
    assert topic.acknowledge("s", c, sink.got[0])
    assert not topic.acknowledge("s", c, sink.got[0])  # a second ack of the same message: ignored
    assert not topic.acknowledge("s", c, "CAEQAg==")  # never delivered to it: ignored
    assert topic.publish(msg()).receivers["s"] == c.consumer_id  # type: ignore[union-attr]
    clock.t += 1
    load = topic.load()
    assert (load.msg_rate_in, load.msg_rate_out, load.msg_drop_rate) == (6.0, 3.0, 3.0)


def test_every_subscription_gets_every_message() -> None:
    topic, clock = make_topic()
    subs = {name: consumer(name) for name in ("s1", "s2", "s3")}
    for name, (c, s) in subs.items():
        topic.subscribe(name, "Exclusive", c, s)
    topic.add_producer()
    for _ in range(4):
        topic.publish(msg(size=100))
    assert all(len(s.got) == 4 for _, s in subs.values())
    clock.t += 1
    load = topic.load()
    assert (load.msg_rate_in, load.msg_throughput_in, load.msg_rate_out, load.msg_throughput_out) == (
        4.0,
        400.0,
        12.0,
        1200.0,
    )
    assert (load.producer_count, load.consumer_count) == (1, 3)


def test_a_fenced_topic_ignores_publishes() -> None:
    topic, _ = make_topic()
    c, sink = consumer("a")
    topic.subscribe("s", "Shared", c, sink)
    topic.fenced = True
    assert topic.publish(msg()) is None
    assert sink.got == [] and topic.counters.msg_in.total_count == 0


def test_subscription_types_must_match_and_subscriptions_die_with_their_consumers() -> None:
    topic, _ = make_topic()
    a, sa = consumer("a")
    topic.subscribe("s", "Shared", a, sa)
    with pytest.raises(ConsumerBusyError, match="is of type Shared"):
        topic.subscribe("s", "Failover", *consumer("b"))
    topic.unsubscribe("s", a)
    assert "s" not in topic.subscriptions and topic.idle
    topic.subscribe("s", "Failover", *consumer("b"))  # a fresh subscription may take any type
    with pytest.raises(InvalidInputError):
        topic.subscribe("", "Shared", *consumer("c"))
    topic.unsubscribe("unknown", a)  # no error


def test_failover_on_a_partition_spreads_partitions_over_consumers() -> None:
    picks = collections.Counter()
    for p in range(4):
        topic, _ = make_topic(f"persistent://t/ns/orders-partition-{p}")
        members = [consumer(n) for n in ("a", "b")]
        for c, s in members:
            topic.subscribe("f", "Failover", c, s)
        topic.publish(msg())
        picks.update(n for (c, s), n in zip(members, "ab", strict=True) if s.got)
    assert picks == {"a": 2, "b": 2}
