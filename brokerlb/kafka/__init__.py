"""Kafka-style client-side balancing and Pulsar's client routing.

* :mod:`brokerlb.kafka.hashing` -- murmur2, murmur3_32, Java ``String.hashCode``;
* :mod:`brokerlb.kafka.partitioner` -- Kafka producer partitioning (keyed, KIP-480, KIP-794);
* :mod:`brokerlb.kafka.pulsar_routing` -- Pulsar's message routing modes;
* :mod:`brokerlb.kafka.assignors` -- consumer-group assignors (classic range, roundrobin,
  sticky, cooperative-sticky, load-aware; KIP-848 server-side uniform, range-server);
* :mod:`brokerlb.kafka.checker` -- the assignment checker.

Everything here is pure (no I/O); the ZooKeeper-era group protocol that runs
the assignors over a metadata store lives in :mod:`brokerlb.kafka.group`.
"""

from brokerlb.kafka.assignors import (
    ASSIGNORS,
    CooperativeStickyAssignor,
    GroupAssignment,
    GroupSnapshot,
    LoadAwareAssignor,
    Member,
    RangeAssignor,
    RoundRobinAssignor,
    ServerRangeAssignor,
    StickyAssignor,
    TopicPartition,
    UniformAssignor,
    get_assignor,
)
from brokerlb.kafka.checker import check_assignment, check_cooperative_round
from brokerlb.kafka.hashing import java_string_hash, murmur2, murmur3_32, to_positive
from brokerlb.kafka.partitioner import (
    BuiltInPartitioner,
    DefaultPartitioner,
    ProducerPartitioner,
    TopicMetadata,
    partition_for_key,
)
from brokerlb.kafka.pulsar_routing import (
    HashingScheme,
    MessageRoutingMode,
    RouterConfig,
    create_message_router,
)

__all__ = [
    "ASSIGNORS",
    "BuiltInPartitioner",
    "CooperativeStickyAssignor",
    "DefaultPartitioner",
    "GroupAssignment",
    "GroupSnapshot",
    "HashingScheme",
    "LoadAwareAssignor",
    "Member",
    "MessageRoutingMode",
    "ProducerPartitioner",
    "RangeAssignor",
    "RoundRobinAssignor",
    "RouterConfig",
    "ServerRangeAssignor",
    "StickyAssignor",
    "TopicMetadata",
    "TopicPartition",
    "UniformAssignor",
    "check_assignment",
    "check_cooperative_round",
    "create_message_router",
    "get_assignor",
    "java_string_hash",
    "murmur2",
    "murmur3_32",
    "partition_for_key",
    "to_positive",
]
