"""The coordination and ownership APIs other parts build on: pinned names, light imports."""

from __future__ import annotations

import subprocess
import sys

import brokerlb.coordination as coordination
import brokerlb.ownership as ownership

COORDINATION_API = {
    # store
    "MetadataStore",
    "MemoryMetadataStore",
    "MemoryServer",
    "open_store",
    "open_store_from_config",
    "SessionState",
    "SessionEvent",
    "EventType",
    "WatchEvent",
    "Stat",
    "Node",
    "CreateOp",
    "SetOp",
    "DeleteOp",
    "CheckOp",
    "Op",
    "ANY_VERSION",
    "DataWatch",
    "ChildrenWatch",
    "TreeCache",
    "join_path",
    "parent_path",
    "validate_path",
    "DEFAULT_SESSION_TIMEOUT",
    "DEFAULT_OPERATION_TIMEOUT",
    # records
    "NamespaceEphemeralData",
    "AdvertisedListener",
    "RegisteredBroker",
    "DRAINING_KEY",
    "LeaderBroker",
    "LocalPolicies",
    "Policies",
    "NamespaceIsolationData",
    "NamespaceIsolationPolicies",
    "AutoFailoverPolicy",
    "FailureDomain",
    "encode_json",
    "decode_json",
    # recipes
    "EphemeralLock",
    "LockState",
    "BrokerRegistry",
    "RegistryEvent",
    "RegistryEventKind",
    "LeaderElection",
    "LeaderLease",
    "LeadershipChange",
    "ElectionState",
    "current_fencing_token",
    "fenced_ops",
    "leader_guard",
    "OwnershipTable",
    "StoredRecord",
    "Guard",
    "BundleMetadata",
    "ClusterPolicies",
    "LoadDataStore",
    "RetryPolicy",
    "BUNDLE_UPDATE_RETRY",
    "retry_async",
}


def test_coordination_exports():
    assert set(coordination.__all__) == COORDINATION_API
    assert all(hasattr(coordination, name) for name in coordination.__all__)


def test_ownership_exports():
    assert {
        "OwnershipMachine",
        "OwnershipRecord",
        "BundleState",
        "Transition",
        "VALID_TRANSITIONS",
        "COMMIT_TRANSITIONS",
        "IN_FLIGHT",
        "check_next",
        "RecordChanged",
        "SessionChanged",
        "BrokersChanged",
        "LeadershipChanged",
        "Released",
        "Tick",
        "Write",
        "StartServing",
        "StopServing",
        "Release",
        "CommitSplit",
        "Reassign",
    } <= set(ownership.__all__)
    assert all(hasattr(ownership, name) for name in ownership.__all__)


def test_imports_stay_light():
    code = (
        "import sys, brokerlb.coordination, brokerlb.ownership; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kazoo', 'fastapi', 'httpx', 'pyspark')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    code = "import sys, brokerlb.ownership; print('asyncio' in sys.modules)"
    # the pure state machine imports no I/O machinery at all
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
