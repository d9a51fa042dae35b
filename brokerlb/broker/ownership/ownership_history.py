"""The broker's ownership history for fault campaigns (``brokerlbOwnershipHistoryFile``).

One hook, written once: :func:`attach_ownership_history` listens to the broker's ownership channel,
the store's session liveness and the election, and appends
:class:`~brokerlb.testing.history.HistoryEvent` lines (the format and the meaning of each kind are in
:mod:`brokerlb.testing.history`):

* the ownership records this broker sees -- ``acquire`` when a record names it Owned under its
  session (``session``, and the record's ``versionId`` as ``epoch``); ``disable`` when a record
  names it as the source of a release (an unload or transfer started); ``release`` when such a
  release ended (the record moved on to the next owner, or Free); ``lost`` when a record that named
  it no longer does otherwise (an override, an ended session);
* serving -- ``serve-start`` / ``serve-stop`` at the moment the channel starts or stops accepting
  publishes for the bundle (:meth:`~brokerlb.broker.ownership.ownership_channel.OwnershipChannel.serving`);
  a stop because the session is not known alive is written at the moment the rule stopped
  publishes (``session_confirmed_until``), which may be earlier than when the line is written;
* the store's session liveness -- ``lease`` lines (how long the session is known alive, written
  when it moved by a quarter of the timeout and at every serve-start);
* the leader election -- ``lead-start`` / ``lead-stop`` with the cluster-wide leader epoch;
* owners checking a leader's command (:meth:`OwnershipHistory.leader_action`).

Lines are written with one ``write`` on a file opened for appending, so a process killed in the
middle of the campaign leaves at most one torn line (the reader skips it). Times are the machine's
monotonic clock (module docstring of :mod:`brokerlb.testing.history`), not the broker's injected
clock: they are the observer's.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from brokerlb.broker.ownership.ownership_channel import OwnershipChannel
from brokerlb.config import ServiceConfig
from brokerlb.coordination import LeaderElection, LeadershipChange
from brokerlb.coordination.store import MetadataStore
from brokerlb.ownership import BundleState
from brokerlb.ownership.record import OwnershipRecord
from brokerlb.testing.history import HistoryEvent, history_line

__all__ = ["OwnershipHistory", "attach_ownership_history"]

logger = logging.getLogger(__name__)
S = BundleState


class OwnershipHistory:
    """Appends this broker's ownership events to a file (module docstring)."""

    def __init__(
        self,
        path: str,
        broker_id: str,
        *,
        store: MetadataStore,
        channel: OwnershipChannel,
        now_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.broker_id = broker_id
        self.pid = os.getpid()
        self.store = store
        self.channel = channel
        self._now_ns = now_ns
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        #: bundles with an open serve-start
        self._serving: set[str] = set()
        #: the last ``lease`` horizon written (monotonic s) and the step between two lines
        self._lease_written = float("-inf")
        self._lease_step = store.session_timeout / 4
        self._removers: list[Callable[[], None]] = []

    def close(self) -> None:
        for remove in self._removers:
            remove()
        self._removers.clear()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # ------------------------------------------------------------------ writing
    def record(
        self,
        kind: str,
        bundle: str = "",
        *,
        session: int | None = None,
        epoch: int | None = None,
        reason: str = "",
        at_ns: int | None = None,
        until_ns: int | None = None,
    ) -> None:
        if self._fd < 0:
            return
        event = HistoryEvent(
            self._now_ns() if at_ns is None else at_ns,
            self.broker_id,
            self.pid,
            kind,
            bundle,
            session,
            epoch,
            reason,
            until_ns,
        )
        try:
            os.write(self._fd, history_line(event).encode())
        except OSError as exc:
            logger.warning("Could not record ownership history: %s", exc)

    def _stop_time(self) -> int:
        """Now, or the moment the session stopped being known alive if that was earlier."""
        now = self._now_ns()
        until = self.store.session_confirmed_until()
        if until == float("inf") or until == float("-inf"):
            return now
        return min(now, int(until * 1e9))

    def leader_action(
        self, bundle: str, token: int | None, outcome: str, *, at_ns: int | None = None
    ) -> None:
        """A leader's command carrying leader epoch ``token`` was checked (by the owner, or by the
        store's transaction of the leader's own write): ``accepted`` / ``refused: …``."""
        self.record("leader-action", bundle, epoch=token, reason=outcome, at_ns=at_ns)

    # ------------------------------------------------------------------ listeners
    def on_serving(self, bundle: str, serving: bool, why: str) -> None:
        if serving and bundle not in self._serving:
            self._serving.add(bundle)
            record = self.channel.record(bundle)
            self.record(
                "serve-start",
                bundle,
                session=self.channel.session,
                epoch=None if record is None else record.version,
                reason=why,
            )
            until = self.store.session_confirmed_until()
            if until not in (float("inf"), float("-inf")) and until > self._lease_written:
                self._lease_written = until
                self.record("lease", until_ns=int(until * 1e9))
        elif not serving and bundle in self._serving:
            self._serving.discard(bundle)
            alive = self.store.session_known_alive()
            self.record("serve-stop", bundle, reason=why, at_ns=None if alive else self._stop_time())

    def on_record(self, bundle: str, before: OwnershipRecord | None, after: OwnershipRecord | None) -> None:
        me = self.broker_id
        was_mine = before is not None and before.holder()[0] == me
        if (
            after is not None
            and after.state is S.OWNED
            and after.dst == me
            and after.dst_session == self.channel.session
        ):
            if not (before is not None and before.state is S.OWNED and before.dst == me):
                self.record(
                    "acquire", bundle, session=after.dst_session, epoch=after.version, reason=str(after)
                )
        elif after is not None and after.state is S.RELEASING and after.src == me:
            self.record("disable", bundle, reason=str(after))
        elif (
            was_mine
            and before is not None
            and before.state is S.RELEASING
            and not (after is not None and after.force)
        ):
            self.record("release", bundle, reason=str(after) if after is not None else "tombstoned")
        elif was_mine and not (after is not None and after.holder()[0] == me):
            if after is None or after.force or after.state not in (S.DELETED,):
                self.record("lost", bundle, reason=str(after) if after is not None else "no record")

    def on_confirmed(self, deadline: float) -> None:
        """The session is known alive until ``deadline``: a ``lease`` line when it moved by a quarter
        of the session timeout (only while serving something)."""
        if self._serving and deadline - self._lease_written >= self._lease_step:
            self._lease_written = deadline
            self.record("lease", until_ns=int(deadline * 1e9))

    def on_leadership(self, change: LeadershipChange) -> None:
        self.record(
            "lead-start" if change.leading else "lead-stop",
            epoch=change.fencing_token,
            reason=change.reason,
        )


def attach_ownership_history(
    conf: ServiceConfig,
    broker_id: str,
    *,
    store: MetadataStore,
    channel: OwnershipChannel,
    election: LeaderElection,
) -> OwnershipHistory | None:
    """Record this broker's ownership history when ``brokerlbOwnershipHistoryFile`` is set (else ``None``)."""
    path = conf.brokerlbOwnershipHistoryFile
    if not path:
        return None
    history = OwnershipHistory(path, broker_id, store=store, channel=channel)
    history._removers.append(channel.add_serving_listener(history.on_serving))
    history._removers.append(channel.add_record_listener(history.on_record))
    history._removers.append(store.add_confirmation_listener(history.on_confirmed))
    history._removers.append(election.add_listener(history.on_leadership))
    for bundle in channel.served():
        history.on_serving(bundle, True, "served at start")
    lease = election.lease
    if lease is not None:
        history.on_leadership(LeadershipChange(True, lease.epoch, "leading at start", lease.fencing_token))
    logger.info("Recording the ownership history in %s", path)
    return history
