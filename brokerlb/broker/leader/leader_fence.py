"""Every write of the leader is conditional on the leader epoch it was decided under.

Each leadership has a cluster-wide epoch, its fencing token
(:attr:`~brokerlb.coordination.LeaderLease.fencing_token`: the version of the leader-epoch node,
written in the transaction that creates the leader node). One check is built in one place,
:mod:`brokerlb.coordination.election`: :func:`~brokerlb.coordination.leader_guard` (for a write of
ownership records) and :func:`~brokerlb.coordination.fenced_ops` (for any other metadata write) put
"the epoch is still ``token``" into the write's own transaction, so a superseded leader's write
changes nothing (:class:`~brokerlb.errors.LeadershipLostError`). The leader's writes, and the
token each carries:

=========================================  ===================================================
write                                      conditional on
=========================================  ===================================================
a shedding move (Owned → Releasing)        the cycle's token (``BrokerActions``), recorded as
                                           accepted / refused by :meth:`LeaderFence.guarded`
a split (the owner's Splitting write; the  the cycle's token; another broker's split is a REST
parent's stored data deleted)              call with ``leaderEpoch``, admitted by :meth:`LeaderFence.admit`
a merge (the parts' moves, the one         the token the merge was decided under
transaction of parts, merged bundle and    (``BrokerActions`` → ``NamespaceService.merge_parts``
ring; the parts' stored data deleted)      → ``OwnerActions.merge``)
persisted load data (bundle histories,     the lease's token (``LeaderTasks.persist_once``)
brokers' time averages)
the monitor's overrides (a dead owner's    the current token (``OwnerActions``)
bundles, a state too long in flight)
a lookup's assignment the leader decided   the current token (``LookupService``)
=========================================  ===================================================

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

from brokerlb.coordination import current_fencing_token
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
    """Admits a leader's command only while its epoch is the current one (module docstring)."""

    def __init__(self, store: MetadataStore, record: ActionRecorder | None = None) -> None:
        self.store = store
        self.record = record
        #: commands refused, for tests and operators
        self.refused = 0

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
