"""Pulsar subscription dispatchers as pure, deterministic classes (no sockets, no cursor).

* :class:`SharedDispatcher` -- round robin honouring priority levels;
* :class:`FailoverDispatcher` -- one active consumer per partition (also Exclusive);
* :class:`KeySharedDispatcher` -- AUTO_SPLIT (consistent-hash ring or range splitting)
  and STICKY (fixed ranges) sticky-key selection.

The interface the data path plugs into is described in :mod:`brokerlb.dispatch.base`.
"""

from brokerlb.dispatch.base import (
    DEFAULT_RANGE_SIZE,
    NONE_KEY,
    DispatchConsumer,
    Dispatcher,
    DispatchResult,
    HashRange,
    Message,
    sticky_key_hash,
)
from brokerlb.dispatch.failover import FailoverDispatcher, active_consumer_index
from brokerlb.dispatch.key_shared import KeySharedDispatcher, KeySharedMode
from brokerlb.dispatch.selectors import (
    DEFAULT_REPLICA_POINTS,
    ConsistentHashingSelector,
    HashRangeAutoSplitSelector,
    HashRangeExclusiveSelector,
)
from brokerlb.dispatch.shared import SharedDispatcher

__all__ = [
    "DEFAULT_RANGE_SIZE",
    "DEFAULT_REPLICA_POINTS",
    "NONE_KEY",
    "ConsistentHashingSelector",
    "DispatchConsumer",
    "DispatchResult",
    "Dispatcher",
    "FailoverDispatcher",
    "HashRange",
    "HashRangeAutoSplitSelector",
    "HashRangeExclusiveSelector",
    "KeySharedDispatcher",
    "KeySharedMode",
    "Message",
    "SharedDispatcher",
    "active_consumer_index",
    "create_dispatcher",
    "sticky_key_hash",
]


def create_dispatcher(
    subscription_type: str,
    *,
    partition_index: int = -1,
    key_shared_mode: KeySharedMode = KeySharedMode.AUTO_SPLIT,
    use_consistent_hashing: bool = True,
    replica_points: int = DEFAULT_REPLICA_POINTS,
) -> Dispatcher:
    """A dispatcher for ``Exclusive``, ``Failover``, ``Shared`` or ``Key_Shared`` (Pulsar's SubType names)."""
    from brokerlb.errors import UnknownStrategyError

    if subscription_type == "Shared":
        return SharedDispatcher()
    if subscription_type in ("Failover", "Exclusive"):
        return FailoverDispatcher(partition_index, exclusive=subscription_type == "Exclusive")
    if subscription_type == "Key_Shared":
        return KeySharedDispatcher(key_shared_mode, use_consistent_hashing, replica_points)
    raise UnknownStrategyError(
        subscription_type, "subscription type", ["Exclusive", "Failover", "Shared", "Key_Shared"]
    )
