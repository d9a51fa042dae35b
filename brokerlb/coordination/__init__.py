"""Coordination: the metadata store (embedded and ZooKeeper) and the recipes built on it.

Recipes use the :class:`MetadataStore` interface only -- never kazoo -- so every
one of them runs on the embedded store and on a real ZooKeeper alike.
"""

from brokerlb.coordination.factory import DEFAULT_OPERATION_TIMEOUT, DEFAULT_SESSION_TIMEOUT, open_store
from brokerlb.coordination.memory import MemoryMetadataStore, MemoryServer
from brokerlb.coordination.store import (
    ANY_VERSION,
    CheckOp,
    CreateOp,
    DeleteOp,
    EventType,
    MetadataStore,
    Node,
    Op,
    SessionEvent,
    SessionState,
    SetOp,
    Stat,
    WatchEvent,
    join_path,
    parent_path,
    validate_path,
)
from brokerlb.coordination.watches import ChildrenWatch, DataWatch

__all__ = [
    "ANY_VERSION",
    "DEFAULT_OPERATION_TIMEOUT",
    "DEFAULT_SESSION_TIMEOUT",
    "CheckOp",
    "ChildrenWatch",
    "CreateOp",
    "DataWatch",
    "DeleteOp",
    "EventType",
    "MemoryMetadataStore",
    "MemoryServer",
    "MetadataStore",
    "Node",
    "Op",
    "SessionEvent",
    "SessionState",
    "SetOp",
    "Stat",
    "WatchEvent",
    "join_path",
    "open_store",
    "parent_path",
    "validate_path",
]
