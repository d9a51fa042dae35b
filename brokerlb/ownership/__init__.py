"""Bundle ownership as a pure state machine (Pulsar's ServiceUnitState), with no I/O.

``OwnershipMachine.handle(*events) -> instructions``; a transition table, an
in-flight watchdog and a bounded transition log with ``story(bundle)``. The
metadata-store shells live in :mod:`brokerlb.coordination`.
"""

from brokerlb.ownership.events import (
    AbortAssignment,
    AbortSplit,
    AcquireOwnership,
    Assign,
    AssignmentDone,
    AssignmentFailed,
    BrokerLost,
    CloseBundle,
    DisconnectClients,
    Event,
    ForceRelease,
    Instruction,
    OwnerChanged,
    OwnershipLost,
    ReleaseDone,
    RingUpdated,
    Split,
    SplitBundle,
    SplitDone,
    SplitFailed,
    Tick,
    Unload,
)
from brokerlb.ownership.machine import (
    DEFAULT_IN_FLIGHT_TIMEOUT_MS,
    DEFAULT_TOMBSTONE_DELAY_MS,
    BundleRecord,
    OwnershipMachine,
    Transition,
)
from brokerlb.ownership.states import (
    ACTIVE,
    FORCED_TRANSITIONS,
    IN_FLIGHT,
    VALID_TRANSITIONS,
    BundleState,
    is_forced_transition,
    is_valid_transition,
)

__all__ = [
    "ACTIVE",
    "DEFAULT_IN_FLIGHT_TIMEOUT_MS",
    "DEFAULT_TOMBSTONE_DELAY_MS",
    "FORCED_TRANSITIONS",
    "IN_FLIGHT",
    "VALID_TRANSITIONS",
    "AbortAssignment",
    "AbortSplit",
    "AcquireOwnership",
    "Assign",
    "AssignmentDone",
    "AssignmentFailed",
    "BrokerLost",
    "BundleRecord",
    "BundleState",
    "CloseBundle",
    "DisconnectClients",
    "Event",
    "ForceRelease",
    "Instruction",
    "OwnerChanged",
    "OwnershipLost",
    "OwnershipMachine",
    "ReleaseDone",
    "RingUpdated",
    "Split",
    "SplitBundle",
    "SplitDone",
    "SplitFailed",
    "Tick",
    "Transition",
    "Unload",
    "is_forced_transition",
    "is_valid_transition",
]
