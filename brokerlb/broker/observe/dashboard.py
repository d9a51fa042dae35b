"""The live dashboard's data on one broker: the state document and a bundle's story, from what it watches.

Routes (:mod:`brokerlb.broker.http.dashboard_routes`) ask the leader for these (the leader's view);
a broker answers them itself when it leads or no leader is reachable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from brokerlb.broker.leader.balancer_status import BalancerStatus
from brokerlb.broker.leader.leader_feed import LeaderFeed
from brokerlb.broker.observe.dashboard_state import dashboard_state
from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
from brokerlb.broker.ownership.ownership_channel import OwnershipChannel
from brokerlb.broker.ownership.ownership_log import OwnershipLog, leader_moves_of
from brokerlb.model import LocalBrokerData
from brokerlb.naming import NamespaceName
from brokerlb.ring import NamespaceBundles

__all__ = ["Dashboard"]


class Dashboard:
    def __init__(
        self,
        *,
        cluster: str,
        broker_id: str,
        leader_id: Callable[[], str | None],
        status: BalancerStatus,
        feed: LeaderFeed,
        log: OwnershipLog,
        reports: Callable[[], dict[str, LocalBrokerData]],
        bundles: NamespaceBundlesCache,
        owners: OwnershipChannel,
        now_ms: Callable[[], int],
        started: Callable[[], Iterable[Any]] = tuple,
    ) -> None:
        self.started = started
        self.cluster = cluster
        self.broker_id = broker_id
        self.leader_id = leader_id
        self.status = status
        self.feed = feed
        self.log = log
        self.reports = reports
        self.bundles = bundles
        self.owners = owners
        self.now_ms = now_ms

    def _leader_moves(self) -> Any:
        return leader_moves_of(self.feed.recent, self.started())

    def namespaces(self) -> list[tuple[str, NamespaceBundles]]:
        """Every namespace the bundle cache knows, and those with owned bundles (heartbeats included)."""
        known = {ns: found[0] for ns in self.bundles.namespaces() if (found := self.bundles.policy_of(ns))}
        for bundle in self.owners.owners():
            ns = bundle.rsplit("/", 1)[0]
            if ns not in known:
                cached = self.bundles.cached(NamespaceName.parse(ns))
                if cached is not None:
                    known[ns] = cached
        return sorted(known.items())

    def state(self) -> dict[str, Any]:
        return dashboard_state(
            cluster=self.cluster,
            served_by=self.broker_id,
            leader=self.leader_id(),
            balancer=self.status.status(),
            reports=self.reports(),
            namespaces=self.namespaces(),
            owners=self.owners.owners(),
            cycles=list(self.feed.recent),
            moves=self.log.recent_moves(self._leader_moves),
            now_ms=self.now_ms(),
        )

    def bundle_story(self, bundle: str) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.log.entries(self._leader_moves, bundle=bundle)]
