import pytest

from brokerlb.dispatch import DispatchConsumer, Message, SharedDispatcher
from brokerlb.errors import ConsumerBusyError, InvalidInputError


def make(*specs):
    d = SharedDispatcher()
    consumers = {}
    for name, level, permits in specs:
        consumers[name] = DispatchConsumer(name, priority_level=level, permits=permits)
        d.add_consumer(consumers[name])
    return d, consumers


def picks(d, n):
    out = []
    for _ in range(n):
        c = d.next_consumer()
        out.append(c.consumer_name if c else None)
        if c:
            c.consume_permits(1)
    return out


def test_pulsar_javadoc_example():
    d, _ = make(("C1", 0, 2), ("C2", 0, 1), ("C3", 0, 1), ("C4", 1, 2), ("C5", 1, 1))
    assert picks(d, 8) == ["C1", "C2", "C3", "C1", "C4", "C5", "C4", None]


def test_round_robin_within_a_level():
    d, _ = make(("a", 0, 100), ("b", 0, 100), ("c", 0, 100))
    assert picks(d, 7) == ["a", "b", "c", "a", "b", "c", "a"]


def test_consumers_sorted_by_priority_keeping_connection_order():
    d, _ = make(("low", 2, 5), ("x", 0, 5), ("mid", 1, 5), ("y", 0, 5))
    assert [c.consumer_name for c in d.consumers] == ["x", "y", "mid", "low"]
    assert picks(d, 4) == ["x", "y", "x", "y"]


def test_lower_levels_only_when_higher_have_no_permits_and_back_up_when_refilled():
    d, c = make(("hi", 0, 1), ("lo", 1, 10))
    assert picks(d, 3) == ["hi", "lo", "lo"]
    c["hi"].add_permits(2)
    assert picks(d, 3) == ["hi", "hi", "lo"]


def test_blocked_consumers_are_skipped():
    d, c = make(("a", 0, 5), ("b", 0, 5))
    c["a"].blocked = True
    assert picks(d, 3) == ["b", "b", "b"]


def test_no_level_zero_present():
    # the "look higher first" step only runs when the cursor is not on level 0
    d, c = make(("p1", 1, 1), ("p2", 2, 5))
    assert picks(d, 3) == ["p1", "p2", "p2"]
    c["p1"].add_permits(1)
    assert picks(d, 1) == ["p1"]


def test_dispatch_batches_up_to_round_robin_batch_size():
    d = SharedDispatcher(max_round_robin_batch_size=3)
    a, b = DispatchConsumer("a", permits=5), DispatchConsumer("b", permits=2)
    d.add_consumer(a)
    d.add_consumer(b)
    msgs = [Message(message_id=i) for i in range(9)]
    result = d.dispatch(msgs)
    assert [(c.consumer_name, [m.message_id for m in ms]) for c, ms in result.sent] == [
        ("a", [0, 1, 2]),
        ("b", [3, 4]),
        ("a", [5, 6]),
    ]
    assert [m.message_id for m in result.held] == [7, 8]
    assert (a.permits, b.permits) == (0, 0)


def test_add_remove_and_limits():
    d = SharedDispatcher(max_consumers=1)
    a = DispatchConsumer("a", permits=1)
    d.add_consumer(a)
    with pytest.raises(ConsumerBusyError, match="max consumers"):
        d.add_consumer(DispatchConsumer("b"))
    with pytest.raises(InvalidInputError, match="already connected"):
        d.add_consumer(a)
    d.remove_consumer(a)
    assert d.next_consumer() is None and d.select(Message()) is None
    with pytest.raises(InvalidInputError, match="not connected"):
        d.remove_consumer(a)
    with pytest.raises(InvalidInputError):
        SharedDispatcher(max_round_robin_batch_size=0)
    with pytest.raises(InvalidInputError, match="priorityLevel"):
        DispatchConsumer("x", priority_level=-1)


def test_removing_the_consumer_under_the_cursor():
    d, c = make(("a", 0, 9), ("b", 0, 9), ("c", 0, 9))
    assert picks(d, 2) == ["a", "b"]
    d.remove_consumer(c["c"])
    assert picks(d, 3) == ["a", "b", "a"]
