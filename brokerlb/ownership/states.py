"""Bundle ownership states and their valid transitions -- Pulsar's ``ServiceUnitState``.

::

    Init ──► Free ──► Assigning ──► Owned ──► Releasing ──► Free
      │        ▲          ▲           │           │
      │        └── Init ◄─┼── Deleted ◄── Splitting ◄┘ (Owned)
      └──► (any state: a record appears from the channel)  Releasing ──► Assigning (transfer)

``VALID_TRANSITIONS`` is Pulsar's table for the system-topic channel (``ServiceUnitState.validTransitions``):
Init → {Free, Owned, Assigning, Releasing, Splitting, Deleted}; Free → {Assigning,
Init}; Owned → {Splitting, Releasing}; Assigning → {Owned}; Releasing → {Assigning,
Free}; Splitting → {Deleted}; Deleted → {Init}.

In-flight states (Assigning, Releasing, Splitting) wait for another broker's
action; a watchdog resolves them if they last too long (:mod:`.machine`). The
watchdog and broker-loss handling may need a move outside the table (e.g.
Assigning → Free when the destination died); such moves are *forced*: they are
listed in ``FORCED_TRANSITIONS``, flagged in the transition log, and nothing else
may make them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

__all__ = [
    "BundleState",
    "VALID_TRANSITIONS",
    "STORE_TRANSITIONS",
    "COMMIT_TRANSITIONS",
    "FORCED_TRANSITIONS",
    "IN_FLIGHT",
    "ACTIVE",
    "is_valid_transition",
    "is_store_transition",
    "is_forced_transition",
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
    S.INIT: frozenset({S.FREE, S.OWNED, S.ASSIGNING, S.RELEASING, S.SPLITTING, S.DELETED}),
    S.FREE: frozenset({S.ASSIGNING, S.INIT}),
    S.OWNED: frozenset({S.SPLITTING, S.RELEASING}),
    S.ASSIGNING: frozenset({S.OWNED}),
    S.RELEASING: frozenset({S.ASSIGNING, S.FREE}),
    S.SPLITTING: frozenset({S.DELETED}),
    S.DELETED: frozenset({S.INIT}),
}

#: Moves outside the table that only the watchdog, broker-loss handling and ring
#: reconciliation may make (Pulsar's "override" with ``force=true``):
#:
#: * Assigning → Free -- the destination never confirmed (stuck, or it died);
#: * Owned → Free -- the owner died (its ownership node is gone);
#: * Splitting → Owned -- a split that never committed is rolled back;
#: * Splitting → Free -- the splitting owner died before the split committed;
#: * Owned / Free / Assigning / Releasing → Deleted -- the bundle left the ring
#:   (its namespace's bundles no longer contain it);
#: * Free / Deleted → Init -- tombstoning (the record is dropped).
FORCED_TRANSITIONS: frozenset[tuple[BundleState, BundleState]] = frozenset(
    {
        (S.ASSIGNING, S.FREE),
        (S.OWNED, S.FREE),
        (S.SPLITTING, S.OWNED),
        (S.SPLITTING, S.FREE),
        (S.OWNED, S.DELETED),
        (S.FREE, S.DELETED),
        (S.ASSIGNING, S.DELETED),
        (S.RELEASING, S.DELETED),
        (S.FREE, S.INIT),
        (S.DELETED, S.INIT),
    }
)

#: Pulsar's table for the metadata-store table view (``ServiceUnitState.validTransitionsOverMetadataStore``):
#: the one the ownership record in the metadata store follows.
STORE_TRANSITIONS: Mapping[BundleState, frozenset[BundleState]] = {
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

#: Waiting for a broker to act; resolved by the watchdog when stuck.
IN_FLIGHT: frozenset[BundleState] = frozenset({S.ASSIGNING, S.RELEASING, S.SPLITTING})
#: A broker is responsible for the bundle.
ACTIVE: frozenset[BundleState] = IN_FLIGHT | {S.OWNED}


def is_valid_transition(start: BundleState, finish: BundleState) -> bool:
    return finish in VALID_TRANSITIONS[start]


def is_forced_transition(start: BundleState, finish: BundleState) -> bool:
    return (start, finish) in FORCED_TRANSITIONS


def is_store_transition(start: BundleState, finish: BundleState) -> bool:
    """A valid change of the ownership record in the metadata store (:data:`STORE_TRANSITIONS`)."""
    return finish in STORE_TRANSITIONS[start]
