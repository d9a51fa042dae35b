"""Test kit shipped with brokerlb: builders and invariant checkers.

Used by brokerlb's own tests, the simulator and downstream users. Nothing here
imports pytest at module level.
"""

from brokerlb.testing.builders import (
    BANDWIDTH_LIMIT_KBPS,
    CPU_LIMIT,
    DIRECT_MEMORY_LIMIT_MB,
    MEMORY_LIMIT_MB,
    broker,
    broker_id,
    broker_load,
    bundle_data,
    bundle_stats,
    load_data,
    system_usage,
    usage,
)
from brokerlb.testing.invariants import (
    InvariantViolation,
    assert_every_topic_in_one_bundle,
    assert_ring_covers_keyspace,
    assert_single_owner,
)
from brokerlb.testing.waiting import eventually
from brokerlb.testing.zookeeper import ZooKeeperServer, zookeeper_available

__all__ = [
    "BANDWIDTH_LIMIT_KBPS",
    "CPU_LIMIT",
    "DIRECT_MEMORY_LIMIT_MB",
    "MEMORY_LIMIT_MB",
    "broker",
    "broker_id",
    "broker_load",
    "bundle_data",
    "bundle_stats",
    "load_data",
    "system_usage",
    "usage",
    "InvariantViolation",
    "assert_every_topic_in_one_bundle",
    "assert_ring_covers_keyspace",
    "assert_single_owner",
    "eventually",
    "ZooKeeperServer",
    "zookeeper_available",
]
