"""Pulsar's producer message routing for partitioned topics (client side).

Goal: choose the partition of each message as Pulsar's Java client does
(``PartitionedProducerImpl.getMessageRouter`` and the routers it builds), with
the random start partition and the clock injected.

* ``RoundRobinPartition`` (default mode): a keyed message goes to
  ``signSafeMod(hash(key), n)``; without a key, with batching enabled the
  partition changes on ``partitionSwitchMs`` boundaries
  (``signSafeMod(now / partitionSwitchMs + start, n)``) so batches fill up;
  with batching disabled it is a plain counter from ``start``.
* ``SinglePartition``: keyed messages hashed as above, the others all go to one
  partition chosen at random when the producer is created.
* ``CustomPartition``: the user's :class:`MessageRouter`.

Hashing schemes (``HashingScheme``): ``JavaStringHash`` (default:
``String.hashCode() & Integer.MAX_VALUE``) and ``Murmur3_32Hash``
(MurmurHash3 x86_32 seed 0 of the UTF-8 key ``& Integer.MAX_VALUE``).

Config read (``ProducerConfigurationData`` names): ``messageRoutingMode``,
``hashingScheme``, ``batchingEnabled`` (true),
``batchingMaxPublishDelayMicros`` (1000) and
``batchingPartitionSwitchFrequencyByPublishDelay`` (10): the switch interval is
their product, 10 ms by default.

    >>> from brokerlb.clock import ManualClock
    >>> r = RoundRobinPartitionMessageRouter(HashingScheme.JAVA_STRING_HASH, start_partition=1,
    ...                                      batching_enabled=True, partition_switch_ms=10,
    ...                                      clock=ManualClock(1_000))
    >>> r.choose_partition(None, 4), r.choose_partition("key1", 100)
    (1, 98)
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.errors import InvalidConfigError, InvalidInputError, UnknownStrategyError
from brokerlb.kafka.hashing import INT_MAX, java_string_hash, murmur3_32, sign_safe_mod

__all__ = [
    "HashingScheme",
    "MessageRoutingMode",
    "MessageRouter",
    "make_hash",
    "RoundRobinPartitionMessageRouter",
    "SinglePartitionMessageRouter",
    "FunctionMessageRouter",
    "RouterConfig",
    "create_message_router",
]


_E = TypeVar("_E", bound=enum.Enum)


def _parse_enum(cls: type[_E], name: str, kind: str) -> _E:
    """The member whose Java name (``RoundRobinPartition``) or Python name matches ``name``."""
    for member in cls:
        if name == member.value or name.upper() == member.name:
            return member
    raise UnknownStrategyError(name, kind, [m.value for m in cls])


class HashingScheme(enum.Enum):
    """``org.apache.pulsar.client.api.HashingScheme``."""

    JAVA_STRING_HASH = "JavaStringHash"
    MURMUR3_32_HASH = "Murmur3_32Hash"

    @classmethod
    def parse(cls, name: str) -> HashingScheme:
        return _parse_enum(cls, name, "hashing scheme")


class MessageRoutingMode(enum.Enum):
    """``org.apache.pulsar.client.api.MessageRoutingMode``."""

    ROUND_ROBIN_PARTITION = "RoundRobinPartition"
    SINGLE_PARTITION = "SinglePartition"
    CUSTOM_PARTITION = "CustomPartition"

    @classmethod
    def parse(cls, name: str) -> MessageRoutingMode:
        return _parse_enum(cls, name, "message routing mode")


def make_hash(key: str, scheme: HashingScheme) -> int:
    """``Hash.makeHash(key)`` of the scheme: a non-negative ``int``."""
    if scheme is HashingScheme.JAVA_STRING_HASH:
        return java_string_hash(key) & INT_MAX
    return murmur3_32(key.encode("utf-8")) & INT_MAX


class MessageRouter(Protocol):
    """``MessageRouter.choosePartition(msg, metadata)`` reduced to what routers read."""

    def choose_partition(self, key: str | None, num_partitions: int) -> int: ...


def _check_partitions(num_partitions: int) -> None:
    if num_partitions < 1:
        raise InvalidInputError(f"a partitioned topic needs at least one partition, got {num_partitions}")


class RoundRobinPartitionMessageRouter:
    """``RoundRobinPartitionMessageRouterImpl``; state: the round-robin counter."""

    def __init__(
        self,
        hashing_scheme: HashingScheme,
        start_partition: int,
        batching_enabled: bool,
        partition_switch_ms: int,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.hashing_scheme = hashing_scheme
        self.start_partition = start_partition
        self.batching_enabled = batching_enabled
        self.partition_switch_ms = max(1, partition_switch_ms)
        self._clock = clock
        self._counter = start_partition

    def choose_partition(self, key: str | None, num_partitions: int) -> int:
        _check_partitions(num_partitions)
        if key is not None:  # a key supersedes round robin
            return sign_safe_mod(make_hash(key, self.hashing_scheme), num_partitions)
        if self.batching_enabled:
            now_ms = self._clock.now_ms()
            return sign_safe_mod(now_ms // self.partition_switch_ms + self.start_partition, num_partitions)
        index = self._counter
        self._counter = _wrap_int32(self._counter + 1)  # AtomicInteger.getAndIncrement wraps
        return sign_safe_mod(index, num_partitions)


def _wrap_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


class SinglePartitionMessageRouter:
    """``SinglePartitionMessageRouterImpl``: keyless messages all go to ``partition_index``."""

    def __init__(self, partition_index: int, hashing_scheme: HashingScheme) -> None:
        self.partition_index = partition_index
        self.hashing_scheme = hashing_scheme

    def choose_partition(self, key: str | None, num_partitions: int) -> int:
        _check_partitions(num_partitions)
        if key is not None:
            return sign_safe_mod(make_hash(key, self.hashing_scheme), num_partitions)
        return self.partition_index


@dataclass(frozen=True)
class FunctionMessageRouter:
    """A ``CustomPartition`` router from a plain function ``(key, num_partitions) -> partition``."""

    fn: Callable[[str | None, int], int]

    def choose_partition(self, key: str | None, num_partitions: int) -> int:
        return self.fn(key, num_partitions)


@dataclass(frozen=True)
class RouterConfig:
    """The producer settings ``getMessageRouter`` reads (Pulsar names and defaults)."""

    message_routing_mode: MessageRoutingMode = MessageRoutingMode.ROUND_ROBIN_PARTITION
    hashing_scheme: HashingScheme = HashingScheme.JAVA_STRING_HASH
    batching_enabled: bool = True
    batching_max_publish_delay_micros: int = 1000
    batching_partition_switch_frequency_by_publish_delay: int = 10
    custom_message_router: MessageRouter | None = None

    @property
    def partition_switch_ms(self) -> int:
        """``TimeUnit.MICROSECONDS.toMillis(batchingPartitionSwitchFrequencyIntervalMicros())``."""
        micros = (
            self.batching_max_publish_delay_micros * self.batching_partition_switch_frequency_by_publish_delay
        )
        return micros // 1000


def create_message_router(
    config: RouterConfig, num_partitions: int, rng: random.Random, clock: Clock = SYSTEM_CLOCK
) -> MessageRouter:
    """``PartitionedProducerImpl.getMessageRouter``: the random start comes from ``rng``."""
    _check_partitions(num_partitions)
    mode = config.message_routing_mode
    if mode is MessageRoutingMode.CUSTOM_PARTITION:
        if config.custom_message_router is None:
            raise InvalidConfigError(
                "customMessageRouter",
                None,
                "messageRoutingMode CustomPartition needs a custom message router",
            )
        return config.custom_message_router
    start = rng.randrange(num_partitions)  # ThreadLocalRandom.current().nextInt(numPartitions)
    if mode is MessageRoutingMode.SINGLE_PARTITION:
        return SinglePartitionMessageRouter(start, config.hashing_scheme)
    return RoundRobinPartitionMessageRouter(
        config.hashing_scheme, start, config.batching_enabled, config.partition_switch_ms, clock
    )
