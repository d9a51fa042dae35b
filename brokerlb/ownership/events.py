"""What the ownership machine is fed, and what it answers -- all data, no I/O.

The machine (:class:`~brokerlb.ownership.machine.OwnershipMachine`) reduces the ownership table:
its shell feeds it the records as the metadata store's watches deliver them, the broker's session,
the registry's live incarnations and the clock, and carries out what it answers. Proposals (an
assignment, an unload, a split, an override) are not events: the machine's methods return the
compare-and-set :class:`Write` to make, and the new record comes back as a :class:`RecordChanged`
like any other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from brokerlb.ownership.record import OwnershipRecord

__all__ = [
    "TableEvent",
    "RecordChanged",
    "SessionChanged",
    "BrokersChanged",
    "LeadershipChanged",
    "Released",
    "ReassignFailed",
    "Tick",
    "TableInstruction",
    "Write",
    "StartServing",
    "StopServing",
    "StopCause",
    "ClientsMoved",
    "Release",
    "CommitSplit",
    "Reassign",
    "OwnerChanged",
    "NO_NODE",
]

#: The store version a :class:`Write` expects when the bundle has no record yet (a create).
NO_NODE = -1


# --------------------------------------------------------------------------- events


@dataclass(frozen=True, kw_only=True)
class TableEvent:
    at_ms: int


@dataclass(frozen=True, kw_only=True)
class RecordChanged(TableEvent):
    """The table's record of ``bundle`` as the store has it now (``None``: no record, Init), with its
    node version (:data:`NO_NODE` for none) and the store's transaction id of that change (``zxid``,
    the node's ``mzxid``; 0 when unknown): a read older than the one applied is ignored."""

    bundle: str
    record: OwnershipRecord | None
    stat_version: int = NO_NODE
    zxid: int = 0


@dataclass(frozen=True, kw_only=True)
class SessionChanged(TableEvent):
    """This broker's metadata session: its id while it is known alive and registered, else ``None``
    (a broker whose session is not known alive serves nothing and takes nothing)."""

    session: int | None


@dataclass(frozen=True, kw_only=True)
class BrokersChanged(TableEvent):
    """The registered brokers and the session each registration belongs to (the registry's view)."""

    sessions: Mapping[str, int]


@dataclass(frozen=True, kw_only=True)
class LeadershipChanged(TableEvent):
    """This broker leads (or stopped): the leader overrides orphans and stuck states, and tombstones."""

    leading: bool


@dataclass(frozen=True, kw_only=True)
class Released(TableEvent):
    """The source finished its release step of ``bundle`` (topics closed, or fenced for a transfer)."""

    bundle: str
    version: int


@dataclass(frozen=True, kw_only=True)
class ReassignFailed(TableEvent):
    """The leader could not carry out a :class:`Reassign` (no broker, a store error): try again later."""

    bundle: str


@dataclass(frozen=True, kw_only=True)
class Tick(TableEvent):
    """Time passed: the leader's monitor (in-flight bound, orphans, tombstones)."""


# --------------------------------------------------------------------------- instructions


@dataclass(frozen=True, kw_only=True)
class TableInstruction:
    bundle: str


@dataclass(frozen=True, kw_only=True)
class Write(TableInstruction):
    """Compare-and-set the bundle's record: from the node at ``expected`` (:data:`NO_NODE`: create)
    to ``record`` (``None``: delete, a tombstone). ``by`` and ``reason`` go into the story."""

    record: OwnershipRecord | None
    expected: int
    by: str = ""
    reason: str = ""


@dataclass(frozen=True, slots=True)
class StopCause:
    """Why a broker stops serving a bundle: ``unload`` (clients look the topic up again),
    ``transfer`` (to ``destination``: connections kept, publishes fenced until it owns the bundle),
    ``split`` / ``merge`` (the same broker serves the bundles that replace it: topics go on), ``lost``
    (the record no longer names this broker's session: ended, overridden, or not known alive)."""

    kind: str
    destination: str | None = None
    #: the bundles now serving the range (split children, the merged bundle)
    successors: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.kind} to {self.destination}" if self.destination else self.kind


@dataclass(frozen=True, kw_only=True)
class StartServing(TableInstruction):
    """``broker`` starts serving the bundle (its record names it, under its live session)."""

    broker: str
    session: int


@dataclass(frozen=True, kw_only=True)
class StopServing(TableInstruction):
    """``broker`` stops serving the bundle, for ``cause`` -- once per serving span."""

    broker: str
    cause: StopCause


@dataclass(frozen=True, kw_only=True)
class ClientsMoved(TableInstruction):
    """A transfer ``broker`` fenced has ended: close the bundle's clients, telling them ``owner`` (the
    new owner) or nothing (the transfer did not complete: they look the topic up again)."""

    broker: str
    owner: str | None


@dataclass(frozen=True, kw_only=True)
class Release(TableInstruction):
    """``broker`` (the source) closes the bundle -- fences it for a transfer to ``transfer_to`` -- and
    answers :class:`Released`."""

    broker: str
    version: int
    transfer_to: str | None = None


@dataclass(frozen=True, kw_only=True)
class CommitSplit(TableInstruction):
    """``broker`` (the owner) commits the split into ``children``: the ring and the records in one
    transaction (:meth:`~brokerlb.ownership.machine.OwnershipMachine.split_commit`)."""

    broker: str
    children: tuple[str, ...]
    version: int


@dataclass(frozen=True, kw_only=True)
class Reassign(TableInstruction):
    """The leader overrides the record (``force``): choose a broker other than ``exclude`` and call
    :meth:`~brokerlb.ownership.machine.OwnershipMachine.override`; ``keep_on`` is the broker to keep
    it on (a stuck split rolled back on its live owner)."""

    version: int
    exclude: str | None
    reason: str
    keep_on: str | None = None


@dataclass(frozen=True, kw_only=True)
class OwnerChanged(TableInstruction):
    """Waiting lookups: the bundle's owner now (``None``: none, look it up again); ``deleted``: the
    bundle left the ring (split or merged)."""

    owner: str | None
    deleted: bool = field(default=False)
