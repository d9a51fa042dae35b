"""Lossless planned moves: a bundle's topic state goes to the next owner before clients reconnect.

:class:`TopicHandOff` is the narrow interface the owner's unload / transfer flow
(:class:`~brokerlb.broker.owner_actions.OwnerActions`) calls; it knows nothing of how the
broker is composed -- it gets the data path, an admin client and three small functions.

* :meth:`TopicHandOff.has_state` -- does the bundle have anything to hand over (retained entries
  or durable subscriptions of persistent topics, or states parked here by an earlier move)?
* :meth:`TopicHandOff.choose_destination` -- for an unload without a destination: where the
  leader's placement puts the bundle now (as Pulsar 3.x unloads with a destination). On the
  leader that is its own placement; elsewhere ``GET .../{bundle}/placement`` on the leader
  (a brokerlb extension; nothing is owned by asking). Heartbeat and SLA-monitor namespaces
  belong to one broker and are never handed over.
* :meth:`TopicHandOff.send` -- fence the bundle's topics, export their states
  (:meth:`~brokerlb.broker.data_path.DataPath.export_bundle`) and ``PUT`` them to the
  destination (``.../{bundle}/topicState``, :mod:`brokerlb.messaging.handoff` bytes), which
  parks them until the topics are opened there. To this broker itself: parked locally.

The owner calls ``send`` in its release step (the one place,
:meth:`~brokerlb.broker.owner_actions.OwnerActions`), after fencing and before the bundle's record
goes on to the destination; the destination then takes the bundle, and only then are the old
owner's sessions of a transfer closed (an unload's are closed at once: their lookup waits for the
move to settle). So every message
acknowledged to a producer before the fence is in the state the next owner starts from, and
no client reaches the next owner before the state does. If the destination cannot be reached
the states are lost (logged as an error): the same as a crash of the old owner.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from brokerlb.broker.data_path import DataPath
from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.errors import BrokerLBError
from brokerlb.messaging.handoff import encode_bundle_state
from brokerlb.naming import broker_of_heartbeat_namespace, broker_of_sla_namespace
from brokerlb.ring import NamespaceBundle

__all__ = ["HandOffTarget", "TopicHandOff", "LEADER_WAIT"]

#: Seconds an unload waits for a leader to choose the next owner (a stopping leader's successor).
LEADER_WAIT = 10.0
#: Seconds between two looks for that leader.
LEADER_POLL = 0.05


@dataclass(frozen=True, slots=True)
class HandOffTarget:
    """Where a bundle's topic state goes on an unload: ``broker`` (which then takes the bundle)."""

    broker: str


logger = logging.getLogger(__name__)


class TopicHandOff:
    def __init__(
        self,
        data_path: DataPath,
        *,
        self_id: str,
        self_url: str | None,
        admin: Any,
        web_url_of: Callable[[str], str | None],
        leader_url: Callable[[], Awaitable[str | None]],
        is_leader: Callable[[], bool],
        place: Callable[[NamespaceBundle], Awaitable[HandOffTarget]],
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.data_path = data_path
        self.self_id = self_id
        self._self_url = (self_url or "").rstrip("/")
        self._admin = admin
        self._web_url_of = web_url_of
        self._leader_url = leader_url
        self._is_leader = is_leader
        self._place = place
        self._clock = clock
        #: states sent, by outcome: ``sent`` / ``local`` / ``failed`` (counts of topics)
        self.stats = {"sent": 0, "local": 0, "failed": 0}

    def has_state(self, bundle: str) -> bool:
        """Nothing to hand over: topics live on the storage tier (the next owner opens them there)."""
        return False

    async def choose_destination(self, bundle: NamespaceBundle) -> HandOffTarget | None:
        namespace = bundle.namespace
        if broker_of_heartbeat_namespace(namespace) or broker_of_sla_namespace(namespace):
            return None
        deadline = self._clock.monotonic() + LEADER_WAIT
        try:
            while True:
                if self._is_leader():
                    return await self._place(bundle)
                url = await self._leader_url()
                if url and url.rstrip("/") != self._self_url:
                    answer = await self._admin.at(url).bundle_placement(str(namespace), bundle.range)
                    broker = answer.get("broker") if isinstance(answer, dict) else None
                    if not (isinstance(broker, str) and broker):
                        return None
                    return HandOffTarget(broker)
                # no leader, or still this broker although it left the election (it is stopping):
                # wait for the next leader
                if self._clock.monotonic() >= deadline:
                    logger.error(
                        "No leader to place %s within %.0f s: its topic state is lost", bundle, LEADER_WAIT
                    )
                    return None
                await self._clock.sleep(LEADER_POLL)
        except BrokerLBError as exc:
            logger.warning("No destination for the topic state of %s (%s); unloading without it", bundle, exc)
            return None

    async def send(self, bundle: NamespaceBundle, destination: str) -> bool:
        states = self.data_path.export_bundle(str(bundle))
        if not states:
            return True
        if destination == self.self_id:
            self.data_path.import_states(states)
            self.stats["local"] += len(states)
            return True
        url = self._web_url_of(destination)
        try:
            if not url:
                raise BrokerLBError(f"broker {destination} is not registered")
            await self._admin.at(url).put_topic_state(
                str(bundle.namespace), bundle.range, encode_bundle_state(str(bundle), states)
            )
        except BrokerLBError as exc:
            self.stats["failed"] += len(states)
            logger.error(
                "Could not hand the state of %d topics of %s to %s (%s): their retained messages are lost",
                len(states),
                bundle,
                destination,
                exc,
            )
            return False
        self.stats["sent"] += len(states)
        logger.info("Handed the state of %d topics of %s to %s", len(states), bundle, destination)
        return True
