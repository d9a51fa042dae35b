"""The broker's ownership history for fault campaigns (``brokerlbOwnershipHistoryFile``).

One hook, written once: :func:`attach_ownership_history` listens to the places where what this
broker owns, serves and leads changes, and appends :class:`~brokerlb.testing.history.HistoryEvent`
lines (the format and the meaning of each kind are in :mod:`brokerlb.testing.history`):

* the ownership manager's events -- ``acquire`` (with the node's session and epoch) and
  ``serve-start``; ``disable``; ``release`` / ``lost`` (with ``serve-stop`` first);
* the topic registry -- ``serve-stop`` when a bundle's topics are fenced (transfer) or closed;
* the store's session liveness -- a span in which the session was not known alive (a frozen
  process, a long disconnection) is a ``serve-stop`` at the moment the liveness rule stopped
  publishes and, for the bundles still held, a ``serve-start`` when the session is confirmed again
  (publishes are refused in between: :meth:`~brokerlb.coordination.OwnershipManager.serving`);
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

from brokerlb.broker.topics import TopicRegistry
from brokerlb.config import ServiceConfig
from brokerlb.coordination import (
    LeaderElection,
    LeadershipChange,
    OwnershipEvent,
    OwnershipEventKind,
    OwnershipManager,
)
from brokerlb.coordination.store import MetadataStore
from brokerlb.testing.history import HistoryEvent, history_line

__all__ = ["OwnershipHistory", "attach_ownership_history"]

logger = logging.getLogger(__name__)


class OwnershipHistory:
    """Appends this broker's ownership events to a file (module docstring)."""

    def __init__(
        self,
        path: str,
        broker_id: str,
        *,
        store: MetadataStore,
        ownership: OwnershipManager,
        now_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.broker_id = broker_id
        self.pid = os.getpid()
        self.store = store
        self.ownership = ownership
        self._now_ns = now_ns
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        #: bundles with an open serve-start
        self._serving: set[str] = set()
        #: bundles acquired and not released or lost (served or not)
        self._held: set[str] = set()
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
        if until == float("inf"):
            return now
        return min(now, int(until * 1e9)) if until * 1e9 < now else now

    def serve_start(self, bundle: str, reason: str = "") -> None:
        if bundle not in self._serving:
            self._serving.add(bundle)
            session, epoch = self.ownership.epoch_of(bundle)
            self.record("serve-start", bundle, session=session, epoch=epoch, reason=reason)
            until = self.store.session_confirmed_until()
            if until != float("inf") and until > self._lease_written:  # the horizon it serves under
                self._lease_written = until
                self.record("lease", until_ns=int(until * 1e9))

    def serve_stop(self, bundle: str, reason: str = "", at_ns: int | None = None) -> None:
        if bundle in self._serving:
            self._serving.discard(bundle)
            self.record(
                "serve-stop", bundle, reason=reason, at_ns=self._stop_time() if at_ns is None else at_ns
            )

    def leader_action(self, bundle: str, token: int | None, outcome: str) -> None:
        """An owner checked a leader's command carrying leader epoch ``token``: ``accepted`` / ``refused: …``."""
        self.record("leader-action", bundle, epoch=token, reason=outcome)

    # ------------------------------------------------------------------ listeners
    def on_ownership(self, event: OwnershipEvent) -> None:
        bundle = event.bundle
        kind = event.kind
        if kind in (OwnershipEventKind.ACQUIRED, OwnershipEventKind.REACQUIRED):
            session, epoch = self.ownership.epoch_of(bundle)
            self._held.add(bundle)
            self.record("acquire", bundle, session=session, epoch=epoch, reason=kind.value)
            self.serve_start(bundle, kind.value)
        elif kind is OwnershipEventKind.DISABLED:
            self.record("disable", bundle, reason=event.reason)
        elif kind is OwnershipEventKind.RELEASED:
            self._held.discard(bundle)
            self.serve_stop(bundle, "released")
            self.record("release", bundle)
        elif kind is OwnershipEventKind.LOST:
            self._held.discard(bundle)
            self.serve_stop(bundle, f"lost: {event.reason}")
            self.record("lost", bundle, reason=event.reason, at_ns=self._stop_time())

    def on_confirmed(self, deadline: float) -> None:
        """The session is known alive until ``deadline``: a ``lease`` line when it moved by a quarter
        of the session timeout (only while serving something)."""
        if self._serving and deadline - self._lease_written >= self._lease_step:
            self._lease_written = deadline
            self.record("lease", until_ns=int(deadline * 1e9))

    def on_topics_stopped(self, bundle: str, why: str) -> None:
        self.serve_stop(bundle, why)

    def on_liveness_gap(self, lapsed_at: float, confirmed_at: float) -> None:
        """The session was not known alive from ``lapsed_at`` until ``confirmed_at`` (monotonic s)."""
        for bundle in sorted(self._serving):
            self.serve_stop(bundle, "session unconfirmed", at_ns=int(lapsed_at * 1e9))
        # held bundles serve again once the session is known alive (a confirmation that arrived
        # after its own deadline does not make it so: the next one will)
        for bundle in sorted(self._held):
            if self.ownership.serving(bundle):
                self.serve_start(bundle, "session confirmed again")

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
    ownership: OwnershipManager,
    topics: TopicRegistry,
    election: LeaderElection,
) -> OwnershipHistory | None:
    """Record this broker's ownership history when ``brokerlbOwnershipHistoryFile`` is set (else ``None``).

    Bundles already owned are recorded as acquired and served from now.
    """
    path = conf.brokerlbOwnershipHistoryFile
    if not path:
        return None
    history = OwnershipHistory(path, broker_id, store=store, ownership=ownership)
    history._removers.append(ownership.add_listener(history.on_ownership))
    history._removers.append(store.add_liveness_listener(history.on_liveness_gap))
    history._removers.append(store.add_confirmation_listener(history.on_confirmed))
    history._removers.append(election.add_listener(history.on_leadership))
    topics.add_stop_listener(history.on_topics_stopped)
    for bundle in ownership.owned_bundles():
        if ownership.serving(bundle):
            history.on_ownership(OwnershipEvent(OwnershipEventKind.ACQUIRED, bundle, "owned at start"))
    lease = election.lease
    if lease is not None:
        history.on_leadership(LeadershipChange(True, lease.epoch, "leading at start", lease.fencing_token))
    logger.info("Recording the ownership history in %s", path)
    return history
