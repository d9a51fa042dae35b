"""Bundle ownership as one record per bundle and the pure machine that reduces them, with no I/O.

* :class:`OwnershipRecord` -- Pulsar's ``ServiceUnitStateData`` (state, destination and source
  broker, split children, force, timestamp, versionId; brokerlb adds the sessions of the brokers
  named), and :func:`check_next`, Pulsar's conflict resolver for the metadata-store table view;
* :class:`OwnershipMachine` -- the one reducer of the table: records in, the named broker's actions
  out; proposals (assign, unload, split, override, the commits) return the compare-and-set to write;
  a bounded log of transitions with ``story(bundle)``.

The metadata-store shell (the table view, compare-and-set writes) is
:class:`brokerlb.coordination.OwnershipTable`; a broker's channel around the machine is
:mod:`brokerlb.broker.ownership.ownership_channel`.
"""

from brokerlb.ownership.events import (
    NO_NODE,
    BrokersChanged,
    ClientsMoved,
    CommitSplit,
    LeadershipChanged,
    OwnerChanged,
    Reassign,
    ReassignFailed,
    RecordChanged,
    Release,
    Released,
    SessionChanged,
    StartServing,
    StopCause,
    StopServing,
    TableEvent,
    TableInstruction,
    Tick,
    Write,
)
from brokerlb.ownership.machine import (
    DEFAULT_IN_FLIGHT_TIMEOUT_MS,
    DEFAULT_TOMBSTONE_DELAY_MS,
    Owner,
    OwnershipMachine,
    Transition,
    owner_of,
)
from brokerlb.ownership.record import VERSION_ID_INIT, OwnershipRecord, check_next, state_of
from brokerlb.ownership.states import (
    ACTIVE,
    COMMIT_TRANSITIONS,
    IN_FLIGHT,
    VALID_TRANSITIONS,
    BundleState,
    is_valid_transition,
)

__all__ = [
    "ACTIVE",
    "COMMIT_TRANSITIONS",
    "DEFAULT_IN_FLIGHT_TIMEOUT_MS",
    "DEFAULT_TOMBSTONE_DELAY_MS",
    "IN_FLIGHT",
    "NO_NODE",
    "VALID_TRANSITIONS",
    "VERSION_ID_INIT",
    "BrokersChanged",
    "BundleState",
    "ClientsMoved",
    "CommitSplit",
    "LeadershipChanged",
    "Owner",
    "OwnerChanged",
    "OwnershipMachine",
    "OwnershipRecord",
    "Reassign",
    "ReassignFailed",
    "RecordChanged",
    "Release",
    "Released",
    "SessionChanged",
    "StartServing",
    "StopCause",
    "StopServing",
    "TableEvent",
    "TableInstruction",
    "Tick",
    "Transition",
    "Write",
    "check_next",
    "is_valid_transition",
    "owner_of",
    "state_of",
]
