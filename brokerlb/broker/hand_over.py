"""Handing a bundle to the broker that must own it next (the destination side of a transfer).

``await hand_over(bundle, destination)``: this broker takes the bundle at once when it is the
destination (an authoritative resolution acquires the ownership node); any other destination is
asked to take it (``PUT .../{bundle}/acquire``, a brokerlb extension). Used by the owner when it
transfers a bundle and by the admin flows that assign a bundle now (unload with a destination of
an unowned bundle, the bundle a merge produced).
"""

from __future__ import annotations

from brokerlb.admin.client import AsyncAdminClient
from brokerlb.broker.lookup import LookupService
from brokerlb.coordination import BrokerRegistry
from brokerlb.errors import NoBrokerAvailableError
from brokerlb.ring import NamespaceBundle

__all__ = ["HandOver"]


class HandOver:
    def __init__(
        self, broker_id: str, *, lookup: LookupService, registry: BrokerRegistry, admin: AsyncAdminClient
    ) -> None:
        self._broker_id = broker_id
        self._lookup = lookup
        self._registry = registry
        self._admin = admin

    async def __call__(self, bundle: NamespaceBundle, destination: str) -> None:
        if destination == self._broker_id:
            await self._lookup.resolve(bundle, authoritative=True)
            return
        report = self._registry.broker_json(destination)
        url = report.get("webServiceUrl") if isinstance(report, dict) else None
        if not url:
            raise NoBrokerAvailableError(f"Broker {destination} is not active")
        await self._admin.at(str(url).rstrip("/")).acquire_bundle(str(bundle.namespace), bundle.range)
