"""Test kit shipped with brokerlb: builders and invariant checkers.

Used by brokerlb's own tests, the simulator and downstream users. Nothing here
imports pytest at module level.
"""

from brokerlb.testing.invariants import (
    InvariantViolation,
    assert_every_topic_in_one_bundle,
    assert_ring_covers_keyspace,
    assert_single_owner,
)
from brokerlb.testing.waiting import eventually
from brokerlb.testing.zookeeper import ZooKeeperServer, zookeeper_available

__all__ = [
    "InvariantViolation",
    "assert_every_topic_in_one_bundle",
    "assert_ring_covers_keyspace",
    "assert_single_owner",
    "eventually",
    "ZooKeeperServer",
    "zookeeper_available",
]
