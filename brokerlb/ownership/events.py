"""Stimuli the ownership machine handles, and the instructions it returns.

Everything is data: the shell (a broker's channel) turns store watches, lookups,
admin calls and timers into events, feeds them to
:meth:`~brokerlb.ownership.machine.OwnershipMachine.handle`, and carries out the
instructions it gets back. Each event carries a ``stimulus_id`` (human-readable,
e.g. ``"lookup-42"``), the time ``at_ms`` (injected, never read from a clock here),
``by`` (who caused it: a broker id, ``"leader"``, ``"admin"``, ``"watchdog"``) and
``reason`` (why) -- these are what :meth:`story` shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "Event",
    "Assign",
    "AssignmentDone",
    "AssignmentFailed",
    "OwnershipLost",
    "Unload",
    "ReleaseDone",
    "Split",
    "SplitDone",
    "SplitFailed",
    "BrokerLost",
    "RingUpdated",
    "Tick",
    "Instruction",
    "AcquireOwnership",
    "CloseBundle",
    "DisconnectClients",
    "SplitBundle",
    "AbortAssignment",
    "ForceRelease",
    "AbortSplit",
    "OwnerChanged",
]


# --------------------------------------------------------------------------- events


@dataclass(frozen=True, kw_only=True)
class Event:
    stimulus_id: str
    at_ms: int
    by: str = ""
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class Assign(Event):
    """Place an Init/Free bundle on ``broker`` (a lookup's or the leader's decision): → Assigning."""

    bundle: str
    broker: str


@dataclass(frozen=True, kw_only=True)
class AssignmentDone(Event):
    """``broker`` owns the bundle now (it created the ownership node): Assigning → Owned."""

    bundle: str
    broker: str


@dataclass(frozen=True, kw_only=True)
class AssignmentFailed(Event):
    """``broker`` could not take the bundle (another broker holds it, or the destination of a
    transfer refused): Assigning → Free (forced). The source of a transfer disconnects its clients,
    which look the topic up again."""

    bundle: str
    broker: str


@dataclass(frozen=True, kw_only=True)
class OwnershipLost(Event):
    """``broker`` lost the bundle with its metadata session (its ownership node is gone and
    another broker may hold it): → Free (forced); the broker stops serving it."""

    bundle: str
    broker: str


@dataclass(frozen=True, kw_only=True)
class Unload(Event):
    """Move an Owned bundle off its owner: → Releasing. With ``to`` it is a transfer."""

    bundle: str
    to: str | None = None


@dataclass(frozen=True, kw_only=True)
class ReleaseDone(Event):
    """The source closed the bundle: Releasing → Free, or → Assigning(``to``) for a transfer."""

    bundle: str


@dataclass(frozen=True, kw_only=True)
class Split(Event):
    """Split an Owned bundle into ``children`` (full bundle names): → Splitting."""

    bundle: str
    children: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class SplitDone(Event):
    """The split committed (bundle metadata written): parent → Deleted, children → Owned by the source."""

    bundle: str


@dataclass(frozen=True, kw_only=True)
class SplitFailed(Event):
    """The split did not commit: Splitting → Owned again (forced rollback)."""

    bundle: str


@dataclass(frozen=True, kw_only=True)
class BrokerLost(Event):
    """``broker`` left the registry (crash, session expiry): resolve everything that waited on it."""

    broker: str


@dataclass(frozen=True, kw_only=True)
class RingUpdated(Event):
    """The namespace's current bundles (from bundle metadata): records of bundles no longer there end."""

    namespace: str
    bundles: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Tick(Event):
    """Time passed (``at_ms`` is now): run the in-flight watchdog and tombstoning."""


# --------------------------------------------------------------------------- instructions


@dataclass(frozen=True, kw_only=True)
class Instruction:
    bundle: str
    stimulus_id: str


@dataclass(frozen=True, kw_only=True)
class AcquireOwnership(Instruction):
    """``broker`` must take the bundle (create its ownership node, load topics), then report AssignmentDone."""

    broker: str


@dataclass(frozen=True, kw_only=True)
class CloseBundle(Instruction):
    """``broker`` must close the bundle's topics and report ReleaseDone.

    ``transfer_to`` set: keep clients connected until the destination owns it
    (Pulsar's multi-phase unload); unset: disconnect them now.
    """

    broker: str
    transfer_to: str | None = None


@dataclass(frozen=True, kw_only=True)
class DisconnectClients(Instruction):
    """``broker`` disconnects the bundle's clients: after a transfer, pointing them at
    ``redirect_to`` (the new owner); otherwise they look the topic up again. ``lost``: the
    ownership went with the session (nothing was handed over)."""

    broker: str
    redirect_to: str | None = None
    lost: bool = False


@dataclass(frozen=True, kw_only=True)
class SplitBundle(Instruction):
    """``broker`` must split the bundle into ``children`` (own them, write metadata), then report."""

    broker: str
    children: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class AbortAssignment(Instruction):
    """The watchdog gave up on an assignment: ``broker`` must drop any ownership it half took."""

    broker: str


@dataclass(frozen=True, kw_only=True)
class ForceRelease(Instruction):
    """The watchdog gave up on a release: delete ``broker``'s ownership node if it is still there."""

    broker: str


@dataclass(frozen=True, kw_only=True)
class AbortSplit(Instruction):
    """A split was rolled back: ``broker`` must release the ``children`` it may have taken."""

    broker: str
    children: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class OwnerChanged(Instruction):
    """Answer waiting lookups: the bundle is owned by ``owner`` (``None``: free, look up again)."""

    owner: str | None
    state: str = field(default="")
