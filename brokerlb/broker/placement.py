"""Placement of unowned bundles as the broker sees it: affinity, merge blocks, then the engine.

:class:`PlacementService` is what lookups and admin flows call
(``select_broker(bundle)``). Before asking the decision engine (a ``decide``
function: the leader's ``selectBrokerForAssignment``) it applies two broker-level
rules:

* a bundle being merged is not placed (503, retriable) -- its range is about to vanish;
* a one-shot **bundle affinity** set by an admin unload with ``destinationBroker``
  (Pulsar's ``setNamespaceBundleAffinity``) wins once, if that broker is still active.

Concurrent placements of one bundle share one decision.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from brokerlb.broker.singleflight import SingleFlight
from brokerlb.errors import NoBrokerAvailableError, ServiceUnavailableError
from brokerlb.ring import NamespaceBundle

__all__ = ["PlacementService", "Decide"]

logger = logging.getLogger(__name__)

#: ``decide(bundle) -> broker id``; raises :class:`NoBrokerAvailableError` when none fits.
Decide = Callable[[NamespaceBundle], Awaitable[str]]


class PlacementService:
    def __init__(self, decide: Decide, active_brokers: Callable[[], Sequence[str]]) -> None:
        self._decide = decide
        self._active = active_brokers
        self._affinity: dict[str, str] = {}
        self._blocked: dict[str, str] = {}
        self._flights: SingleFlight[str, str] = SingleFlight()
        #: Placements made, by broker (for metrics and the demo).
        self.placed: dict[str, int] = {}

    def set_decide(self, decide: Decide) -> None:
        self._decide = decide

    async def select_broker(self, bundle: NamespaceBundle) -> str:
        name = str(bundle)
        why = self._blocked.get(name)
        if why is not None:
            raise ServiceUnavailableError(f"Bundle {name} is {why}; try again")
        return await self._flights.run(name, lambda: self._select(bundle, name))

    async def _select(self, bundle: NamespaceBundle, name: str) -> str:
        destination = self._affinity.pop(name, None)
        if destination is not None and destination in self._active():
            broker = destination
        else:
            if destination is not None:
                logger.info("Affinity of %s to %s dropped: the broker is no longer active", name, destination)
            broker = await self._decide(bundle)
        if not broker:
            raise NoBrokerAvailableError(f"No broker is available to own {name}")
        self.placed[broker] = self.placed.get(broker, 0) + 1
        return broker

    def set_bundle_affinity(self, bundle: str, broker: str) -> None:
        self._affinity[bundle] = broker

    def affinity(self, bundle: str) -> str | None:
        return self._affinity.get(bundle)

    def block(self, bundles: Sequence[str], why: str) -> None:
        for bundle in bundles:
            self._blocked[bundle] = why

    def unblock(self, bundles: Sequence[str]) -> None:
        for bundle in bundles:
            self._blocked.pop(bundle, None)
