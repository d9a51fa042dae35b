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

#: Names whose modules start processes or use asyncio: imported on first use (PEP 562), so the
#: pure builders and invariant checkers can be used by the core without pulling in I/O libraries.
_LAZY = {
    "eventually": "brokerlb.testing.waiting",
    "ZooKeeperServer": "brokerlb.testing.zookeeper",
    "zookeeper_available": "brokerlb.testing.zookeeper",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'brokerlb.testing' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


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
