import pytest

from brokerlb.errors import InvalidInputError
from brokerlb.kafka.assignors import TopicPartition
from brokerlb.kafka.group import FetchTracker, GroupPaths, decode_assignment, encode_assignment
from brokerlb.kafka.group.layout import (
    decode_subscription,
    decode_topic_partitions,
    encode_subscription,
    encode_topic,
)

T = TopicPartition


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_pause_statistics():
    clock = FakeClock()
    tracker = FetchTracker(clock)
    a, b = T("t", 0), T("t", 1)
    tracker.started("c1", [a, b])  # t=0
    clock.now = 10
    tracker.stopped("c1", [a, b])  # everyone stops at 10
    clock.now = 12
    tracker.started("c2", [a])  # a resumes at 12
    clock.now = 15
    tracker.started("c2", [b])  # b resumes at 15
    stats = tracker.pause_stats([a, b], 9, 20)
    assert stats.paused_partition_seconds == pytest.approx(2 + 5)
    assert stats.max_pause_s == pytest.approx(5)
    assert stats.stop_the_world_s == pytest.approx(2)  # nothing fetched between 10 and 12
    assert tracker.last_change_at == 15
    assert tracker.fetching() == {a: "c2", b: "c2"}


def test_double_fetch_is_recorded_not_raised():
    tracker = FetchTracker(FakeClock())
    tracker.started("c1", [T("t", 0)])
    tracker.started("c2", [T("t", 0)])
    assert len(tracker.violations) == 1 and "fetched by c2 while c1" in tracker.violations[0]
    tracker.stopped("c2", [T("t", 0)])  # not c2's: ignored
    assert tracker.fetching() == {T("t", 0): "c1"}


def test_layout_paths_and_json():
    paths = GroupPaths("g1")
    assert paths.consumer("c1") == "/consumers/g1/ids/c1"
    assert paths.owner(T("orders", 3)) == "/consumers/g1/owners/orders/3"
    assert decode_subscription(encode_subscription(["b", "a"], 123), "x") == ("a", "b")
    assert decode_topic_partitions(encode_topic(3), "x") == 3
    with pytest.raises(InvalidInputError, match="bad consumer registration"):
        decode_subscription(b"{}", "/consumers/g1/ids/c1")
    with pytest.raises(InvalidInputError, match="expected 0..n-1"):
        decode_topic_partitions(b'{"version":1,"partitions":{"0":[1],"2":[1]}}', "/brokers/topics/t")
    with pytest.raises(InvalidInputError, match="consumer group name"):
        GroupPaths("a/b")
    generation, assignment = decode_assignment(
        encode_assignment(7, {"c1": [T("t", 1), T("t", 0)], "c2": []}), "x"
    )
    assert generation == 7 and assignment == {"c1": frozenset({T("t", 0), T("t", 1)}), "c2": frozenset()}
    with pytest.raises(InvalidInputError, match="bad assignment"):
        decode_assignment(b'{"assignment": {}}', "/consumers/g1/assignment")
