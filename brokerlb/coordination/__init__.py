"""Coordination: the metadata store (embedded and ZooKeeper) and the recipes built on it.

Recipes use the :class:`MetadataStore` interface only -- never kazoo -- so every
one of them runs on the embedded store and on a real ZooKeeper alike.
"""

from brokerlb.coordination.bundle_metadata import BundleMetadata
from brokerlb.coordination.cache import TreeCache
from brokerlb.coordination.cluster_policies import ClusterPolicies
from brokerlb.coordination.election import (
    ElectionState,
    LeaderElection,
    LeaderLease,
    LeadershipChange,
    current_fencing_token,
    fenced_ops,
    leader_guard,
)
from brokerlb.coordination.factory import (
    DEFAULT_OPERATION_TIMEOUT,
    DEFAULT_SESSION_TIMEOUT,
    open_store,
    open_store_from_config,
)
from brokerlb.coordination.load_data import LoadDataStore
from brokerlb.coordination.lock import EphemeralLock, LockState
from brokerlb.coordination.memory import MemoryMetadataStore, MemoryServer
from brokerlb.coordination.ownership_table import Guard, OwnershipTable, StoredRecord
from brokerlb.coordination.records import (
    DRAINING_KEY,
    AdvertisedListener,
    AutoFailoverPolicy,
    FailureDomain,
    LeaderBroker,
    LocalPolicies,
    NamespaceEphemeralData,
    NamespaceIsolationData,
    NamespaceIsolationPolicies,
    Policies,
    RegisteredBroker,
    decode_json,
    encode_json,
)
from brokerlb.coordination.registry import BrokerRegistry, RegistryEvent, RegistryEventKind
from brokerlb.coordination.retry import BUNDLE_UPDATE_RETRY, RetryPolicy, retry_async
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
    "AdvertisedListener",
    "AutoFailoverPolicy",
    "BUNDLE_UPDATE_RETRY",
    "BrokerRegistry",
    "BundleMetadata",
    "ClusterPolicies",
    "ElectionState",
    "EphemeralLock",
    "FailureDomain",
    "LeaderBroker",
    "LeaderElection",
    "LeaderLease",
    "LeadershipChange",
    "current_fencing_token",
    "fenced_ops",
    "leader_guard",
    "Guard",
    "OwnershipTable",
    "StoredRecord",
    "RegisteredBroker",
    "DRAINING_KEY",
    "LoadDataStore",
    "LocalPolicies",
    "LockState",
    "NamespaceEphemeralData",
    "NamespaceIsolationData",
    "NamespaceIsolationPolicies",
    "Policies",
    "RegistryEvent",
    "RegistryEventKind",
    "RetryPolicy",
    "TreeCache",
    "decode_json",
    "encode_json",
    "retry_async",
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
    "open_store_from_config",
    "parent_path",
    "validate_path",
]
