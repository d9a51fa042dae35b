"""Kafka's producer partitioning: keyed murmur2, KIP-480 sticky and KIP-794 uniform sticky.

Goal: pick the partition of each record exactly as the Java producer does, with
the randomness injected (a seeded :class:`random.Random`) so runs are repeatable.

* Keyed records: ``toPositive(murmur2(serializedKey)) % numPartitions`` over *all*
  partitions of the topic (``BuiltInPartitioner.partitionForKey``), whether or
  not their leaders are available.
* :class:`StickyPartitionCache` / :class:`DefaultPartitioner` -- KIP-480 (Kafka
  2.4 to 3.2): a null-key record sticks to one partition per topic until the
  producer is about to open a new batch (``onNewBatch``); the next one is drawn
  uniformly among the *available* partitions, never the one just left when
  another is available.
* :class:`BuiltInPartitioner` -- KIP-794 (Kafka 3.3+, the default): switch after
  ``batch.size`` bytes were produced to the sticky partition (up to ``2 x`` when
  the caller disables the switch because the batch is not ready); the next
  partition is uniform among available ones or, with
  ``partitioner.adaptive.partitioning.enable=true`` (default), weighted by
  ``maxQueue + 1 - queue`` from the per-partition queue lengths
  (:func:`load_stats_from_queues`, RecordAccumulator's ``partitionReady``),
  excluding partitions whose leader has not been ready for longer than
  ``partitioner.availability.timeout.ms``.
* :class:`ProducerPartitioner` -- ``KafkaProducer.partition``: explicit partition,
  then a custom partitioner, then the key unless ``partitioner.ignore.keys``,
  else the built-in uniform sticky partitioner.

Config keys read (Kafka producer names): ``batch.size`` (16384),
``partitioner.adaptive.partitioning.enable`` (true),
``partitioner.availability.timeout.ms`` (0 = off), ``partitioner.ignore.keys``
(false).

Worked example::

    >>> partition_for_key(b"foobar", 6)
    0
    >>> import random
    >>> p = BuiltInPartitioner("t", sticky_batch_size=100, rng=random.Random(7))
    >>> meta = TopicMetadata(4)
    >>> first = p.peek_current_partition(meta)
    >>> p.update_partition_info(60, meta) is None    # 60 < 100 bytes: stay
    True
    >>> p.update_partition_info(60, meta) is not None   # 120 >= 100: switch
    True
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from brokerlb.errors import InvalidInputError
from brokerlb.kafka.hashing import INT_MAX, murmur2, to_positive

__all__ = [
    "UNKNOWN_PARTITION",
    "DEFAULT_BATCH_SIZE",
    "TopicMetadata",
    "PartitionQueue",
    "PartitionLoadStats",
    "partition_for_key",
    "load_stats_from_queues",
    "StickyPartitionCache",
    "DefaultPartitioner",
    "BuiltInPartitioner",
    "ProducerPartitioner",
]

#: ``RecordMetadata.UNKNOWN_PARTITION``: "let the built-in partitioner choose".
UNKNOWN_PARTITION = -1
#: ``batch.size`` default, bytes.
DEFAULT_BATCH_SIZE = 16384


def _random_positive(rng: random.Random) -> int:
    """``Utils.toPositive(ThreadLocalRandom.current().nextInt())``."""
    return rng.getrandbits(32) & INT_MAX


@dataclass(frozen=True)
class TopicMetadata:
    """What the producer's metadata knows about one topic.

    ``available`` lists the partitions whose leader is known
    (``Cluster.availablePartitionsForTopic``); ``None`` means all of them.
    """

    num_partitions: int
    available: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if (
            isinstance(self.num_partitions, bool)
            or not isinstance(self.num_partitions, int)
            or self.num_partitions < 1
        ):
            raise InvalidInputError(f"a topic needs at least one partition, got {self.num_partitions!r}")
        if self.available is not None:
            bad = [p for p in self.available if not 0 <= p < self.num_partitions]
            if bad:
                raise InvalidInputError(f"available partitions {bad} outside 0..{self.num_partitions - 1}")
            object.__setattr__(self, "available", tuple(sorted(set(self.available))))

    @property
    def available_partitions(self) -> tuple[int, ...]:
        if self.available is None:
            return tuple(range(self.num_partitions))
        return self.available


def partition_for_key(serialized_key: bytes, num_partitions: int) -> int:
    """``BuiltInPartitioner.partitionForKey``: ``toPositive(murmur2(key)) % numPartitions``."""
    if num_partitions < 1:
        raise InvalidInputError(f"num_partitions must be >= 1, got {num_partitions}")
    return to_positive(murmur2(serialized_key)) % num_partitions


# --------------------------------------------------------------------------- KIP-480


class StickyPartitionCache:
    """KIP-480's ``StickyPartitionCache``: one sticky partition per topic."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._index: dict[str, int] = {}

    def partition(self, topic: str, metadata: TopicMetadata) -> int:
        current = self._index.get(topic)
        if current is None:
            return self.next_partition(topic, metadata, UNKNOWN_PARTITION)
        return current

    def next_partition(self, topic: str, metadata: TopicMetadata, prev_partition: int) -> int:
        """Draw a new sticky partition if ``prev_partition`` is still the current one."""
        old = self._index.get(topic)
        if old is not None and old != prev_partition:
            return old  # someone already switched
        available = metadata.available_partitions
        if not available:
            new = _random_positive(self._rng) % metadata.num_partitions
        elif len(available) == 1:
            new = available[0]
        else:
            candidate = old
            while candidate is None or candidate == old:
                candidate = available[_random_positive(self._rng) % len(available)]
            new = candidate
        self._index[topic] = new
        return new


class DefaultPartitioner:
    """Kafka 2.4-3.2 ``DefaultPartitioner``: murmur2 for keys, KIP-480 sticky for null keys."""

    def __init__(self, rng: random.Random) -> None:
        self.sticky = StickyPartitionCache(rng)

    def partition(self, topic: str, key: bytes | None, metadata: TopicMetadata) -> int:
        if key is None:
            return self.sticky.partition(topic, metadata)
        return partition_for_key(key, metadata.num_partitions)

    def on_new_batch(self, topic: str, metadata: TopicMetadata, prev_partition: int) -> int:
        """The producer is about to open a new batch on ``prev_partition``: switch."""
        return self.sticky.next_partition(topic, metadata, prev_partition)


# --------------------------------------------------------------------------- KIP-794


@dataclass(frozen=True)
class PartitionQueue:
    """One partition's batch queue as the sender sees it (RecordAccumulator ``partitionReady``).

    ``leader_unready_ms`` is the leader's ``readyTimeMs - drainTimeMs``: how long the
    node has had data it could not drain.
    """

    partition: int
    queue_size: int
    has_leader: bool = True
    leader_unready_ms: int = 0


@dataclass(frozen=True)
class PartitionLoadStats:
    """The cumulative frequency table of KIP-794 and the partition ids it covers."""

    cumulative_frequency: tuple[int, ...]
    partition_ids: tuple[int, ...]


def load_stats_from_queues(
    queues: Sequence[PartitionQueue], num_partitions: int, availability_timeout_ms: int = 0
) -> tuple[list[int], list[int], int] | None:
    """``(queueSizes, partitionIds, length)`` as RecordAccumulator builds them for a topic.

    Returns ``None`` (uniform switching) until every partition has a queue, as
    Java does. Partitions without a leader are left out; a partition whose
    leader has been unready for more than ``availability_timeout_ms`` (when > 0)
    is dropped by *not advancing* the index, so the next partition overwrites
    its slot -- Java's ``--queueSizesIndex``.
    """
    if len(queues) < num_partitions:
        return None
    sizes = [0] * len(queues)
    ids = [0] * len(queues)
    index = -1
    for q in queues:
        if not q.has_leader:
            continue
        index += 1
        ids[index] = q.partition
        sizes[index] = q.queue_size
        if availability_timeout_ms > 0 and q.leader_unready_ms > availability_timeout_ms:
            index -= 1
    return sizes, ids, index + 1


class BuiltInPartitioner:
    """KIP-794 uniform sticky partitioner for one topic (``BuiltInPartitioner``).

    State kept between records: the sticky partition, the bytes produced to it,
    and the load stats from the last ``updatePartitionLoadStats``.
    """

    def __init__(
        self, topic: str, sticky_batch_size: int = DEFAULT_BATCH_SIZE, rng: random.Random | None = None
    ) -> None:
        if sticky_batch_size < 1:
            raise InvalidInputError(f"stickyBatchSize must be >= 1 but got {sticky_batch_size}")
        self.topic = topic
        self.sticky_batch_size = sticky_batch_size
        self._rng = rng if rng is not None else random.Random()
        self.load_stats: PartitionLoadStats | None = None
        self._sticky: int | None = None
        self._produced_bytes = 0

    @property
    def produced_bytes(self) -> int:
        return self._produced_bytes

    def next_partition(self, metadata: TopicMetadata) -> int:
        """Draw the next sticky partition (uniform, or weighted by the load stats)."""
        rnd = _random_positive(self._rng)
        stats = self.load_stats
        if stats is None:
            available = metadata.available_partitions
            if available:
                return available[rnd % len(available)]
            return rnd % metadata.num_partitions
        cft = stats.cumulative_frequency
        weighted = rnd % cft[-1]
        # first entry strictly greater than `weighted` (Java: abs(binarySearch + 1))
        return stats.partition_ids[bisect.bisect_right(cft, weighted)]

    def peek_current_partition(self, metadata: TopicMetadata) -> int:
        if self._sticky is None:
            self._sticky = self.next_partition(metadata)
            self._produced_bytes = 0
        return self._sticky

    def update_partition_info(
        self, appended_bytes: int, metadata: TopicMetadata, enable_switch: bool = True
    ) -> int | None:
        """Count ``appended_bytes`` on the sticky partition; switch when enough was produced.

        Switches once ``batch.size`` bytes were produced (``enable_switch``) or
        ``2 x batch.size`` regardless. Returns the new partition, or ``None``.
        """
        if self._sticky is None:
            return None
        self._produced_bytes += appended_bytes
        size = self.sticky_batch_size
        if (self._produced_bytes >= size and enable_switch) or self._produced_bytes >= size * 2:
            self._sticky = self.next_partition(metadata)
            self._produced_bytes = 0
            return self._sticky
        return None

    def update_partition_load_stats(
        self, queue_sizes: Sequence[int] | None, partition_ids: Sequence[int] | None, length: int
    ) -> None:
        """Build the cumulative frequency table from queue lengths (``updatePartitionLoadStats``).

        Queue sizes ``0 3 1`` become weights ``4 1 3`` (``max + 1 - size``) and the
        table ``4 5 8``; adaptive switching is off (``None``) when there are no
        stats, fewer than two partitions, or all queues are equal and none was
        excluded.
        """
        if queue_sizes is None or partition_ids is None:
            self.load_stats = None
            return
        if len(queue_sizes) != len(partition_ids) or not 0 <= length <= len(queue_sizes):
            raise InvalidInputError(
                f"queue sizes ({len(queue_sizes)}), partition ids ({len(partition_ids)}) and length "
                f"({length}) do not fit together"
            )
        if length < 1 or len(queue_sizes) < 2:
            self.load_stats = None
            return
        sizes = list(queue_sizes[:length])
        max_plus_1 = max(sizes) + 1
        if len(set(sizes)) == 1 and length == len(queue_sizes):
            self.load_stats = None
            return
        cft: list[int] = []
        running = 0
        for s in sizes:
            running += max_plus_1 - s
            cft.append(running)
        self.load_stats = PartitionLoadStats(tuple(cft), tuple(partition_ids[:length]))


# --------------------------------------------------------------------------- producer


CustomPartitioner = Callable[[str, "bytes | None", TopicMetadata], int]


@dataclass
class ProducerPartitioner:
    """``KafkaProducer.partition`` plus the accumulator's use of :class:`BuiltInPartitioner`.

    Config: ``batch_size`` = ``batch.size``; ``ignore_keys`` =
    ``partitioner.ignore.keys``; ``adaptive`` =
    ``partitioner.adaptive.partitioning.enable``; ``availability_timeout_ms`` =
    ``partitioner.availability.timeout.ms``; ``custom`` = ``partitioner.class``.
    """

    rng: random.Random = field(default_factory=random.Random)
    batch_size: int = DEFAULT_BATCH_SIZE
    ignore_keys: bool = False
    adaptive: bool = True
    availability_timeout_ms: int = 0
    custom: CustomPartitioner | None = None
    _builtin: dict[str, BuiltInPartitioner] = field(default_factory=dict, repr=False)

    def builtin(self, topic: str) -> BuiltInPartitioner:
        part = self._builtin.get(topic)
        if part is None:
            part = self._builtin[topic] = BuiltInPartitioner(topic, self.batch_size, self.rng)
        return part

    def partition(
        self, topic: str, key: bytes | None, metadata: TopicMetadata, explicit_partition: int | None = None
    ) -> int:
        """The partition a record goes to (the built-in choice when no key decides)."""
        if explicit_partition is not None:
            return explicit_partition
        if self.custom is not None:
            chosen = self.custom(topic, key, metadata)
            if chosen < 0:
                raise InvalidInputError(
                    f"the custom partitioner returned partition {chosen} for topic {topic}; "
                    "partitions must be non-negative"
                )
            return chosen
        if key is not None and not self.ignore_keys:
            return partition_for_key(key, metadata.num_partitions)
        return self.builtin(topic).peek_current_partition(metadata)

    def record_appended(
        self,
        topic: str,
        key: bytes | None,
        appended_bytes: int,
        metadata: TopicMetadata,
        enable_switch: bool = True,
        explicit_partition: int | None = None,
    ) -> None:
        """Tell the built-in partitioner ``appended_bytes`` went to its sticky partition.

        Only records the built-in partitioner placed count, as in Java.
        """
        if explicit_partition is not None or self.custom is not None:
            return
        if key is not None and not self.ignore_keys:
            return
        self.builtin(topic).update_partition_info(appended_bytes, metadata, enable_switch)

    def update_queues(self, topic: str, queues: Sequence[PartitionQueue], num_partitions: int) -> None:
        """Feed the sender's view of the topic's queues into adaptive partitioning."""
        if not self.adaptive:
            self.builtin(topic).update_partition_load_stats(None, None, 0)
            return
        stats = load_stats_from_queues(queues, num_partitions, self.availability_timeout_ms)
        if stats is None:
            self.builtin(topic).update_partition_load_stats(None, None, 0)
        else:
            self.builtin(topic).update_partition_load_stats(*stats)
