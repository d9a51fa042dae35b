"""An owner refuses a leader's command that carries a superseded leader epoch.

The leader's unloads and splits of bundles other brokers own are REST calls to the owner. Each
carries the leader's fencing token (``leaderEpoch``: :attr:`~brokerlb.coordination.LeaderLease.fencing_token`,
the version of the leader-epoch node written with the leader node). Before acting, the owner reads
the epoch now current in the store (:func:`~brokerlb.coordination.current_fencing_token`): a
different one means another leader was elected since the command was decided -- a leader that lost
its session and resumed mid-task, say -- and the command is refused with 409 (Pulsar has no such
check: a leader that lost leadership mid-cycle still unloads). The leader checks its own token the
same way before acting on a bundle it owns itself.

A command without a token (an operator's, a client's) is not a leader's and is not fenced. The
check and the action are a store round trip apart: a leader elected inside that window is not
fenced out of this one command (the owner's own ownership node still makes it the only broker
acting on the bundle).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from brokerlb.coordination import current_fencing_token
from brokerlb.coordination.store import MetadataStore
from brokerlb.errors import ConflictError, InvalidInputError
from brokerlb.limits import shorten

__all__ = ["LeaderFence", "parse_leader_epoch"]

logger = logging.getLogger(__name__)

#: ``record(bundle, token, outcome)``: the ownership history's ``leader-action`` line, when recorded.
ActionRecorder = Callable[[str, int | None, str], None]


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
