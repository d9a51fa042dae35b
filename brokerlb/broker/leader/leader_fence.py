"""The one seam of the leader's writes: every one is conditional on the leader epoch it was decided under.

Each leadership has a cluster-wide epoch, its fencing token
(:attr:`~brokerlb.coordination.LeaderLease.fencing_token`: the version of the leader-epoch node,
written in the transaction that creates the leader node). The check is built in one place,
:mod:`brokerlb.coordination.election` -- :func:`~brokerlb.coordination.leader_guard` (a write of
ownership records) and :func:`~brokerlb.coordination.fenced_ops` (the leader's load data) put "the
epoch is still ``token``" into the write's own transaction, so a superseded leader's write changes
nothing -- and applied in one place, :class:`LeaderFence`: :meth:`LeaderFence.epoch` is the only
read of the election's token in the broker, :meth:`LeaderFence.guards` the only maker of a record
write's condition, :meth:`LeaderFence.guarded` records the outcome of the leader's own moves. The
leader's writes and the epoch each is conditional on:

=========================================  ===================================================
write                                      conditional on
=========================================  ===================================================
a shedding move (Owned → Releasing)        the epoch the cycle read (``BrokerActions``),
                                           recorded as accepted / refused by :meth:`LeaderFence.guarded`
a split (the owner's Splitting write; the  the cycle's epoch; another broker's split is a REST
parent's stored data deleted)              call with ``leaderEpoch``, admitted by :meth:`LeaderFence.admit`
a merge (the parts' moves, the one         the epoch the merge was decided under (``BrokerActions``
transaction of parts, merged bundle and    → ``NamespaceService.merge_parts`` → ``OwnerActions.merge``;
ring; the parts' stored data deleted)      an operator's merge: :meth:`LeaderFence.epoch` when asked)
persisted load data (bundle histories,     the lease's epoch (``LeaderTasks.persist_once``)
brokers' time averages)
the monitor's overrides (a dead owner's    :meth:`LeaderFence.current` (``OwnerActions``)
bundles, a state too long in flight) and
the machine's other leader writes
a lookup's assignment the leader decided   :meth:`LeaderFence.current` (``LookupService``)
=========================================  ===================================================

:meth:`LeaderFence.epoch` is this broker's *latest* leadership's epoch, kept after it ends: work
started under it and still running after another leader was elected -- a process that paused
mid-task -- carries it and is refused.

:meth:`LeaderFence.admit` is the owner's side of a leader's REST command: before acting, the owner
reads the epoch now current in the store (:func:`~brokerlb.coordination.current_fencing_token`); a
different one means another leader was elected since the command was decided -- a leader that lost
its session and resumed mid-task, say -- and the command is refused with 409 (Pulsar has no such
check: a leader that lost leadership mid-cycle still unloads). The check and the action are a store
round trip apart, so the owner's own write carries the guard too. A command without a token (an
operator's, a client's) is not a leader's and is not fenced.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from brokerlb.coordination import current_fencing_token, leader_guard
from brokerlb.coordination.ownership_table import Guard
from brokerlb.coordination.store import MetadataStore
from brokerlb.errors import ConflictError, InvalidInputError, LeadershipLostError
from brokerlb.limits import shorten

__all__ = ["LeaderFence", "parse_leader_epoch"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class ActionRecorder(Protocol):
    """The ownership history's ``leader-action`` line, when recorded (``at_ns``: when the action
    was decided to go ahead, on the machine's monotonic clock; default now)."""

    def __call__(self, bundle: str, token: int | None, outcome: str, *, at_ns: int | None = None) -> None: ...


class EpochSource(Protocol):
    """Where this broker's leader epoch comes from: the election
    (:attr:`~brokerlb.coordination.LeaderElection.last_fencing_token`)."""

    @property
    def last_fencing_token(self) -> int | None: ...


def parse_leader_epoch(value: str | None) -> int | None:
    """The ``leaderEpoch`` query parameter (absent → ``None``); a non-integer is a 400."""
    if value is None or value == "":
        return None
    try:
        epoch = int(value)
    except ValueError:
        raise InvalidInputError(f"leaderEpoch must be an integer, got '{shorten(value)}'") from None
    if epoch < 0:
        raise InvalidInputError(f"leaderEpoch must not be negative, got {epoch}")
    return epoch


class LeaderFence:
    """The seam every leader write goes through (module docstring)."""

    def __init__(
        self, store: MetadataStore, election: EpochSource, record: ActionRecorder | None = None
    ) -> None:
        self.store = store
        self._election = election
        self.record = record
        #: commands and writes refused, for tests and operators
        self.refused = 0

    def epoch(self) -> int | None:
        """The epoch of this broker's latest leadership, kept after it ended (``None``: it never
        led): what the leader's work is decided under. The one read of the election's token."""
        return self._election.last_fencing_token

    def guards(self, epoch: int | None) -> list[Guard]:
        """The condition of a leader's write of ownership records decided under ``epoch``: the epoch
        still current (a superseded leader's write changes nothing:
        :class:`~brokerlb.errors.LeadershipLostError`). ``None``: not a leader's write, no condition."""
        return leader_guard(epoch)

    def current(self) -> list[Guard]:
        """:meth:`guards` of :meth:`epoch`: for the writes the leader makes as it goes (the monitor's
        overrides, a lookup's assignment)."""
        return self.guards(self.epoch())

    async def admit(self, bundle: str, token: int | None, what: str) -> None:
        """Return if the command may run; :class:`ConflictError` (409) if its leader was superseded."""
        if token is None:
            return
        current = await current_fencing_token(self.store)
        if current != token:
            self.refused += 1
            reason = f"refused: leader epoch {token} is not current ({current})"
            if self.record is not None:
                self.record(bundle, token, reason)
            logger.warning("Refused the %s of %s from a superseded leader: %s", what, bundle, reason)
            raise ConflictError(
                f"Refused to {what} {bundle}: the leader that asked (epoch {token}) is no longer the leader "
                f"(epoch now {current})"
            )
        if self.record is not None:
            self.record(bundle, token, "accepted")

    async def guarded(
        self, bundle: str, token: int | None, what: str, write: Callable[[], Awaitable[T]]
    ) -> T:
        """The leader's own write of ``bundle``'s record, conditional on its epoch ``token`` in the
        store's transaction (:func:`~brokerlb.coordination.leader_guard`): recorded as accepted
        when it committed (at the moment it was sent: the epoch was current at the commit, later
        than that), as refused when the guard failed (:class:`LeadershipLostError`)."""
        sent = time.monotonic_ns()
        try:
            result = await write()
        except LeadershipLostError as exc:
            if token is not None:
                self.refused += 1
                if self.record is not None:
                    self.record(bundle, token, f"refused: {exc}")
            raise
        if token is not None and self.record is not None:
            self.record(bundle, token, "accepted", at_ns=sent)
        return result
