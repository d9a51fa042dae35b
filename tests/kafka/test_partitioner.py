import random
from collections import Counter

import pytest
from kafka.partitioner.default import DefaultPartitioner as KpDefault

from brokerlb.errors import InvalidInputError
from brokerlb.kafka.partitioner import (
    UNKNOWN_PARTITION,
    BuiltInPartitioner,
    DefaultPartitioner,
    PartitionQueue,
    ProducerPartitioner,
    StickyPartitionCache,
    TopicMetadata,
    load_stats_from_queues,
    partition_for_key,
)


class KpCluster:
    def __init__(self, n):
        self.n = n

    def topics(self):
        return {"t"}

    def partitions_for_topic(self, topic):
        return set(range(self.n))

    def available_partitions_for_topic(self, topic):
        return set(range(self.n))


class ScriptedRandom(random.Random):
    """getrandbits returns the scripted values in turn (Java's mockRandom in RecordAccumulatorTest)."""

    def __init__(self, values):
        super().__init__(0)
        self.values = list(values)

    def getrandbits(self, k):
        return self.values.pop(0)


def test_keyed_partition_matches_kafka_python():
    rng = random.Random(1)
    kp = KpDefault()
    for _ in range(3000):
        key = rng.randbytes(rng.randrange(0, 40))
        n = rng.randrange(1, 300)
        assert partition_for_key(key, n) == kp.partition("t", None, key, None, None, KpCluster(n))


def test_keyed_partition_ignores_availability():
    meta = TopicMetadata(6, available=(1,))
    assert DefaultPartitioner(random.Random(0)).partition("t", b"foobar", meta) == partition_for_key(
        b"foobar", 6
    )


def test_topic_metadata_validation():
    with pytest.raises(InvalidInputError, match="at least one partition"):
        TopicMetadata(0)
    with pytest.raises(InvalidInputError, match="outside"):
        TopicMetadata(3, available=(5,))
    assert TopicMetadata(3, available=(2, 0, 2)).available_partitions == (0, 2)
    with pytest.raises(InvalidInputError):
        partition_for_key(b"k", 0)


# --------------------------------------------------------------------------- KIP-480


def test_kip480_sticks_until_new_batch_and_then_changes():
    cache = StickyPartitionCache(random.Random(3))
    meta = TopicMetadata(5)
    first = cache.partition("t", meta)
    assert all(cache.partition("t", meta) == first for _ in range(50))
    for _ in range(200):
        prev = cache.partition("t", meta)
        nxt = cache.next_partition("t", meta, prev)
        assert nxt != prev and cache.partition("t", meta) == nxt


def test_kip480_stale_new_batch_is_ignored():
    cache = StickyPartitionCache(random.Random(3))
    meta = TopicMetadata(5)
    current = cache.partition("t", meta)
    other = (current + 1) % 5
    assert cache.next_partition("t", meta, other) == current  # someone else already switched


def test_kip480_uses_available_partitions_only():
    cache = StickyPartitionCache(random.Random(9))
    meta = TopicMetadata(10, available=(2, 7))
    seen = set()
    prev = cache.partition("t", meta)
    for _ in range(40):
        prev = cache.next_partition("t", meta, prev)
        seen.add(prev)
    assert seen == {2, 7}
    single = StickyPartitionCache(random.Random(9))
    one = TopicMetadata(10, available=(4,))
    assert single.partition("t", one) == 4 and single.next_partition("t", one, 4) == 4
    none = StickyPartitionCache(random.Random(9))
    assert 0 <= none.partition("t", TopicMetadata(3, available=())) < 3


def test_kip480_spreads_batches_uniformly():
    part = DefaultPartitioner(random.Random(11))
    meta = TopicMetadata(4)
    counts = Counter()
    prev = part.partition("t", None, meta)
    for _ in range(4000):
        counts[prev] += 1
        prev = part.on_new_batch("t", meta, prev)
    assert set(counts) == {0, 1, 2, 3}
    assert max(counts.values()) < 1.15 * min(counts.values())


# --------------------------------------------------------------------------- KIP-794


def test_builtin_switches_after_batch_size_bytes():
    p = BuiltInPartitioner("t", sticky_batch_size=1000, rng=random.Random(5))
    meta = TopicMetadata(8)
    current = p.peek_current_partition(meta)
    switches = []
    for _ in range(30):
        new = p.update_partition_info(100, meta)
        if new is not None:
            switches.append(new)
    assert len(switches) == 3  # 3000 bytes in 100-byte records, switch every 1000
    assert p.peek_current_partition(meta) == switches[-1] and current is not None


def test_builtin_switch_disabled_until_twice_the_batch_size():
    p = BuiltInPartitioner("t", sticky_batch_size=1000, rng=random.Random(5))
    meta = TopicMetadata(8)
    p.peek_current_partition(meta)
    assert p.update_partition_info(1500, meta, enable_switch=False) is None
    assert p.produced_bytes == 1500
    assert p.update_partition_info(500, meta, enable_switch=False) is not None  # reached 2 x 1000
    assert p.produced_bytes == 0


def test_builtin_rejects_bad_batch_size():
    with pytest.raises(InvalidInputError, match="stickyBatchSize"):
        BuiltInPartitioner("t", sticky_batch_size=0)


def test_cumulative_frequency_table_matches_kip794_example():
    # queue sizes 0 3 1 -> weights 4 1 3 -> table 4 5 8
    p = BuiltInPartitioner("t", rng=ScriptedRandom(range(8)))
    p.update_partition_load_stats([0, 3, 1], [10, 11, 12], 3)
    assert p.load_stats.cumulative_frequency == (4, 5, 8)
    picks = [p.next_partition(TopicMetadata(13)) for _ in range(8)]
    # random 0..3 -> partition[0], 4 -> partition[1], 5..7 -> partition[2]
    assert picks == [10, 10, 10, 10, 11, 12, 12, 12]


def test_load_stats_off_when_equal_or_too_few():
    p = BuiltInPartitioner("t")
    p.update_partition_load_stats([2, 2, 2], [0, 1, 2], 3)
    assert p.load_stats is None
    p.update_partition_load_stats([5], [0], 1)
    assert p.load_stats is None
    p.update_partition_load_stats([2, 2, 2], [0, 1, 2], 2)  # one excluded: adaptive stays on
    assert p.load_stats is not None and p.load_stats.partition_ids == (0, 1)
    p.update_partition_load_stats(None, None, 0)
    assert p.load_stats is None
    with pytest.raises(InvalidInputError, match="do not fit"):
        p.update_partition_load_stats([1, 2], [0], 2)


def test_queue_stats_exclude_leaderless_and_unready_partitions():
    queues = [
        PartitionQueue(0, 4),
        PartitionQueue(1, 9, leader_unready_ms=500),
        PartitionQueue(2, 1),
        PartitionQueue(3, 2, has_leader=False),
    ]
    sizes, ids, length = load_stats_from_queues(queues, 4, availability_timeout_ms=100)
    assert (ids[:length], sizes[:length]) == ([0, 2], [4, 1])
    sizes, ids, length = load_stats_from_queues(queues, 4, availability_timeout_ms=0)
    assert (ids[:length], sizes[:length]) == ([0, 1, 2], [4, 9, 1])
    assert load_stats_from_queues(queues[:2], 4) is None  # not every partition has a queue yet


def test_adaptive_partitioning_prefers_short_queues():
    producer = ProducerPartitioner(rng=random.Random(2), batch_size=10)
    meta = TopicMetadata(3)
    producer.update_queues("t", [PartitionQueue(0, 0), PartitionQueue(1, 9), PartitionQueue(2, 0)], 3)
    counts = Counter()
    for _ in range(3000):
        counts[producer.partition("t", None, meta)] += 1
        producer.record_appended("t", None, 10, meta)
    # weights 10 : 1 : 10
    assert counts[1] < 0.1 * counts[0] and counts[1] < 0.1 * counts[2]
    producer_uniform = ProducerPartitioner(rng=random.Random(2), batch_size=10, adaptive=False)
    producer_uniform.update_queues("t", [PartitionQueue(0, 0), PartitionQueue(1, 9), PartitionQueue(2, 0)], 3)
    assert producer_uniform.builtin("t").load_stats is None


def test_producer_precedence_explicit_custom_key_builtin():
    meta = TopicMetadata(6)
    producer = ProducerPartitioner(rng=random.Random(4))
    assert producer.partition("t", b"foobar", meta, explicit_partition=5) == 5
    assert producer.partition("t", b"foobar", meta) == partition_for_key(b"foobar", 6)
    sticky = producer.partition("t", None, meta)
    assert producer.partition("t", None, meta) == sticky
    ignoring = ProducerPartitioner(rng=random.Random(4), ignore_keys=True)
    assert ignoring.partition("t", b"foobar", meta) == ignoring.partition("t", b"other", meta)
    custom = ProducerPartitioner(custom=lambda topic, key, m: 2)
    assert custom.partition("t", b"k", meta) == 2
    with pytest.raises(InvalidInputError, match="non-negative"):
        ProducerPartitioner(custom=lambda topic, key, m: UNKNOWN_PARTITION).partition("t", b"k", meta)


def test_keyed_records_do_not_advance_the_sticky_partition():
    producer = ProducerPartitioner(rng=random.Random(4), batch_size=10)
    meta = TopicMetadata(6)
    sticky = producer.partition("t", None, meta)
    for _ in range(10):
        producer.record_appended("t", b"key", 100, meta)
    assert producer.partition("t", None, meta) == sticky
    producer.record_appended("t", None, 10, meta)
    assert producer.builtin("t").produced_bytes == 0  # switched
