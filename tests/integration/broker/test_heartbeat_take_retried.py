"""A broker whose first take of its heartbeat namespaces fails takes them later.

At start a broker owns ``pulsar/{cluster}/{brokerId}`` and ``pulsar/{brokerId}`` (Pulsar's
bootstrap namespaces); without them its health check fails. The take can fail while the cluster's
view settles (its own registration not yet seen, a leader change, a slow store): it was logged and
never tried again, leaving the broker unhealthy for good.
"""

from __future__ import annotations

import pytest

from brokerlb.broker.observe.health import heartbeat_bundles
from brokerlb.broker.ownership.lookup import LookupResult, LookupService
from brokerlb.errors import NoBrokerAvailableError
from brokerlb.ring import NamespaceBundle
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.waiting import eventually


async def test_a_failed_heartbeat_take_at_start_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    real = LookupService.resolve
    refused: list[str] = []

    async def resolve_failing_first(
        self: LookupService, bundle: NamespaceBundle, *, authoritative: bool = False
    ) -> LookupResult:
        name = str(bundle)
        if name.startswith("pulsar/") and refused.count(name) < 2:
            refused.append(name)
            raise NoBrokerAvailableError(f"Broker for {name} is not active (no registration)")
        return await real(self, bundle, authoritative=authoritative)

    monkeypatch.setattr(LookupService, "resolve", resolve_failing_first)
    cluster = await InProcessCluster(1).start()
    try:
        service = cluster.services[0]
        bundles = heartbeat_bundles(service.identity)
        await eventually(
            lambda: all(service.channel.owns(b) for b in bundles),
            60,
            interval=0.05,
            message="the broker owns its heartbeat bundles",
        )
        assert sorted(set(refused)) == sorted(bundles) and len(refused) == 2 * len(bundles)
    finally:
        await cluster.stop()
