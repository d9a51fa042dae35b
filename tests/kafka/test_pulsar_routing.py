import random

import pytest

from brokerlb.clock import ManualClock
from brokerlb.errors import InvalidConfigError, InvalidInputError, UnknownStrategyError
from brokerlb.kafka.hashing import java_string_hash, murmur3_32
from brokerlb.kafka.pulsar_routing import (
    FunctionMessageRouter,
    HashingScheme,
    MessageRoutingMode,
    RoundRobinPartitionMessageRouter,
    RouterConfig,
    SinglePartitionMessageRouter,
    create_message_router,
    make_hash,
)


def test_single_partition_router_matches_pulsar_unit_test():
    # SinglePartitionMessageRouterImplTest: no key -> the fixed index; key -> key.hashCode() % 100
    router = SinglePartitionMessageRouter(1234, HashingScheme.JAVA_STRING_HASH)
    assert router.choose_partition(None, 2468) == 1234
    assert router.choose_partition("key1", 100) == java_string_hash("key1") % 100
    assert router.choose_partition("key2", 100) == java_string_hash("key2") % 100


def test_hashing_schemes():
    assert make_hash("polygenelubricants", HashingScheme.JAVA_STRING_HASH) == 0  # MIN_VALUE & MAX_VALUE
    assert make_hash("hello", HashingScheme.MURMUR3_32_HASH) == murmur3_32(b"hello") & 0x7FFFFFFF
    assert make_hash("ünï", HashingScheme.MURMUR3_32_HASH) == murmur3_32("ünï".encode()) & 0x7FFFFFFF
    assert HashingScheme.parse("Murmur3_32Hash") is HashingScheme.MURMUR3_32_HASH
    with pytest.raises(UnknownStrategyError, match="JavaStringHash"):
        HashingScheme.parse("crc32")


def test_round_robin_with_batching_switches_on_time_boundaries():
    clock = ManualClock(0)
    router = RoundRobinPartitionMessageRouter(HashingScheme.JAVA_STRING_HASH, 3, True, 10, clock)
    seen = []
    for _ in range(12):
        seen.append(router.choose_partition(None, 4))
        clock.advance(0.005)  # 5 ms: two messages per 10 ms window
    assert seen == [3, 3, 0, 0, 1, 1, 2, 2, 3, 3, 0, 0]


def test_round_robin_without_batching_is_a_counter():
    router = RoundRobinPartitionMessageRouter(HashingScheme.JAVA_STRING_HASH, 2, False, 10)
    assert [router.choose_partition(None, 3) for _ in range(6)] == [2, 0, 1, 2, 0, 1]


def test_round_robin_counter_wraps_like_java_int():
    router = RoundRobinPartitionMessageRouter(HashingScheme.JAVA_STRING_HASH, 2**31 - 1, False, 10)
    first, second = router.choose_partition(None, 7), router.choose_partition(None, 7)
    assert first == (2**31 - 1) % 7 and second == (-(2**31)) % 7


def test_key_supersedes_round_robin():
    router = RoundRobinPartitionMessageRouter(HashingScheme.MURMUR3_32_HASH, 0, True, 10, ManualClock(0))
    assert router.choose_partition("k", 16) == (murmur3_32(b"k") & 0x7FFFFFFF) % 16


def test_switch_interval_from_config_defaults():
    assert RouterConfig().partition_switch_ms == 10
    assert RouterConfig(batching_max_publish_delay_micros=5000).partition_switch_ms == 50
    router = RoundRobinPartitionMessageRouter(HashingScheme.JAVA_STRING_HASH, 0, True, 0)
    assert router.partition_switch_ms == 1  # Math.max(1, partitionSwitchMs)


def test_create_message_router_draws_start_from_rng():
    clock = ManualClock(0)
    single = create_message_router(
        RouterConfig(message_routing_mode=MessageRoutingMode.SINGLE_PARTITION), 8, random.Random(42), clock
    )
    assert isinstance(single, SinglePartitionMessageRouter)
    assert single.partition_index == random.Random(42).randrange(8)
    rr = create_message_router(RouterConfig(), 8, random.Random(42), clock)
    assert isinstance(rr, RoundRobinPartitionMessageRouter)
    assert rr.start_partition == random.Random(42).randrange(8)
    custom = FunctionMessageRouter(lambda key, n: n - 1)
    routed = create_message_router(
        RouterConfig(message_routing_mode=MessageRoutingMode.CUSTOM_PARTITION, custom_message_router=custom),
        8,
        random.Random(1),
    )
    assert routed.choose_partition("x", 8) == 7


def test_router_errors():
    with pytest.raises(InvalidConfigError, match="customMessageRouter"):
        create_message_router(
            RouterConfig(message_routing_mode=MessageRoutingMode.CUSTOM_PARTITION), 4, random.Random(1)
        )
    with pytest.raises(InvalidInputError, match="at least one partition"):
        SinglePartitionMessageRouter(0, HashingScheme.JAVA_STRING_HASH).choose_partition(None, 0)
    assert MessageRoutingMode.parse("SinglePartition") is MessageRoutingMode.SINGLE_PARTITION
    with pytest.raises(UnknownStrategyError):
        MessageRoutingMode.parse("Broadcast")
