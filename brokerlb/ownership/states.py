"""Bundle ownership states and their valid transitions -- Pulsar's ``ServiceUnitState``.

::

    Init ─► Assigning ─► Owned ─► Releasing ─► Free ─► Assigning ...
                          │            └──────► Assigning (a transfer goes on to its destination)
                          └─► Splitting ─► Deleted ─► Init

``VALID_TRANSITIONS`` is Pulsar's table for the metadata-store table view
(``ServiceUnitState.validTransitionsOverMetadataStore``): Init → {Assigning}; Free → {Assigning};
Owned → {Splitting, Releasing}; Assigning → {Owned}; Releasing → {Assigning, Free};
Splitting → {Deleted}; Deleted → {Init} (a tombstone: the record is deleted). The ownership record
in the metadata store follows it (:mod:`brokerlb.ownership.record`), with two exceptions, each
explicit:

* the moves of a split or merge *commit* (:data:`COMMIT_TRANSITIONS`), made in one transaction with
  the namespace's bundles;
* the leader's override (``force``: an orphan of an ended session, a state stuck in flight), which
  skips the table -- but never brings a Deleted bundle back.

In-flight states (Assigning, Releasing, Splitting) wait for a broker's action; the leader's monitor
overrides them when they last too long (:mod:`.machine`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

__all__ = [
    "BundleState",
    "VALID_TRANSITIONS",
    "COMMIT_TRANSITIONS",
    "IN_FLIGHT",
    "ACTIVE",
    "is_valid_transition",
]


class BundleState(enum.Enum):
    """Pulsar's ServiceUnitState names (values are Pulsar's spelling)."""

    INIT = "Init"
    FREE = "Free"
    OWNED = "Owned"
    ASSIGNING = "Assigning"
    RELEASING = "Releasing"
    SPLITTING = "Splitting"
    DELETED = "Deleted"

    def __str__(self) -> str:
        return self.value


S = BundleState

VALID_TRANSITIONS: Mapping[BundleState, frozenset[BundleState]] = {
    S.INIT: frozenset({S.ASSIGNING}),
    S.FREE: frozenset({S.ASSIGNING}),
    S.OWNED: frozenset({S.SPLITTING, S.RELEASING}),
    S.ASSIGNING: frozenset({S.OWNED}),
    S.RELEASING: frozenset({S.ASSIGNING, S.FREE}),
    S.SPLITTING: frozenset({S.DELETED}),
    S.DELETED: frozenset({S.INIT}),
}

#: brokerlb's moves inside one split or merge *commit* -- one transaction with the namespace's
#: bundles, so no reader ever sees a parent and a child both owned:
#:
#: * split: the parent Splitting → Deleted, each child Init / Free / Deleted → Owned by the parent's
#:   owner (Pulsar publishes the children first and the parent's Deleted later, three writes);
#: * merge (no Pulsar counterpart): each part Owned → Deleted, the merged bundle Init / Free /
#:   Deleted → Owned by the parts' owner (the parts were first moved to one broker).
COMMIT_TRANSITIONS: frozenset[tuple[BundleState, BundleState]] = frozenset(
    {
        (S.SPLITTING, S.DELETED),
        (S.OWNED, S.DELETED),
        (S.INIT, S.OWNED),
        (S.FREE, S.OWNED),
        (S.DELETED, S.OWNED),
    }
)

#: Waiting for a broker to act; overridden by the leader's monitor when stuck.
IN_FLIGHT: frozenset[BundleState] = frozenset({S.ASSIGNING, S.RELEASING, S.SPLITTING})
#: A broker is responsible for the bundle.
ACTIVE: frozenset[BundleState] = IN_FLIGHT | {S.OWNED}


def is_valid_transition(start: BundleState, finish: BundleState) -> bool:
    """A valid change of the ownership record (:data:`VALID_TRANSITIONS`)."""
    return finish in VALID_TRANSITIONS[start]
