import pytest

from brokerlb.dispatch import DispatchConsumer, FailoverDispatcher, Message, active_consumer_index
from brokerlb.errors import ConsumerBusyError, InvalidInputError


def active_names(partitions, consumers):
    out = []
    for p in range(partitions):
        d = FailoverDispatcher(partition_index=p)
        for c in consumers:
            d.add_consumer(c)
        out.append(d.active_consumer.consumer_name)
    return out


def test_partitions_spread_over_consumers_by_name():
    consumers = [DispatchConsumer(n) for n in ("c", "a", "b")]
    assert active_names(6, consumers) == ["a", "b", "c", "a", "b", "c"]


def test_only_highest_priority_consumers_are_active():
    consumers = [DispatchConsumer("a"), DispatchConsumer("b"), DispatchConsumer("c", priority_level=1)]
    assert active_names(4, consumers) == ["a", "b", "a", "b"]
    backups = [DispatchConsumer("x", priority_level=3), DispatchConsumer("y", priority_level=2)]
    assert active_names(3, backups) == ["y", "y", "y"]


def test_all_dispatchers_of_a_topic_agree_whatever_the_connection_order():
    names = ["c3", "c1", "c2"]
    forward = active_names(5, [DispatchConsumer(n) for n in names])
    backward = active_names(5, [DispatchConsumer(n) for n in reversed(names)])
    assert forward == backward


def test_failover_on_leave_and_join_reports_changes():
    d = FailoverDispatcher(partition_index=1)
    a, b = DispatchConsumer("a", permits=10), DispatchConsumer("b", permits=10)
    assert d.add_consumer(a) is True and d.active_consumer is a
    assert d.add_consumer(b) is True and d.active_consumer is b  # partition 1 % 2 -> "b"
    assert d.remove_consumer(b) is True and d.active_consumer is a
    c = DispatchConsumer("c", priority_level=1)
    assert d.add_consumer(c) is False  # lower priority: a stays active
    assert d.remove_consumer(a) is True and d.active_consumer is c
    assert d.remove_consumer(c) is True and d.active_consumer is None


def test_non_partitioned_topic_uses_first_connected():
    d = FailoverDispatcher()
    late, early = DispatchConsumer("a", priority_level=0), DispatchConsumer("z", priority_level=5)
    d.add_consumer(early)
    d.add_consumer(late)
    assert d.active_consumer is early


def test_only_the_active_consumer_receives_and_messages_wait_for_permits():
    d = FailoverDispatcher(partition_index=0)
    a, b = DispatchConsumer("a", permits=2), DispatchConsumer("b", permits=50)
    d.add_consumer(a)
    d.add_consumer(b)
    result = d.dispatch([Message(message_id=i) for i in range(5)])
    assert [(c.consumer_name, len(ms)) for c, ms in result.sent] == [("a", 2)] and len(result.held) == 3
    assert d.select(Message()) is None  # a has no permits: nobody else may take it
    a.add_permits(1)
    assert d.select(Message()) is a


def test_exclusive_refuses_a_second_consumer():
    d = FailoverDispatcher(exclusive=True)
    d.add_consumer(DispatchConsumer("a"))
    with pytest.raises(ConsumerBusyError, match="Exclusive consumer is already connected"):
        d.add_consumer(DispatchConsumer("b"))
    assert d.subscription_type == "Exclusive"


def test_errors():
    with pytest.raises(InvalidInputError):
        active_consumer_index([], 0)
    d = FailoverDispatcher(max_consumers=1)
    d.add_consumer(DispatchConsumer("a"))
    with pytest.raises(ConsumerBusyError, match="max consumers"):
        d.add_consumer(DispatchConsumer("b"))
    with pytest.raises(InvalidInputError, match="not connected"):
        d.remove_consumer(DispatchConsumer("zz"))
