"""What ``/admin/v2/brokers/ready`` and ``/admin/v2/brokers/health`` check, each condition named.

* **ready** -- the broker finished starting and is not stopping: its web server answers,
  it is registered under ``/loadbalance/brokers``, it joined the leader election and took
  its heartbeat namespaces (Pulsar: the broker's state is ``Started``). A load balancer
  or an orchestrator sends traffic to a ready broker.
* **healthy** -- ready, and right now able to serve: its metadata-store session is
  connected, its registration is in place, and it owns its heartbeat namespaces' bundles
  (Pulsar's health check produces and consumes on the heartbeat topic; owning the
  heartbeat bundle is the ownership part of that, which is what brokerlb serves).

Both answer the problems (empty: fine); the routes answer 200 ``ok`` or 503 with the problems.
Each gets only what it checks: the broker's life-cycle flags, its store session, registration and
ownership.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from brokerlb.naming import heartbeat_namespace, heartbeat_namespace_v2
from brokerlb.ring import NamespaceBundles

if TYPE_CHECKING:
    from brokerlb.broker.identity import BrokerIdentity
    from brokerlb.broker.ownership.ownership_channel import OwnershipChannel
    from brokerlb.coordination import BrokerRegistry, MetadataStore

__all__ = ["readiness", "health", "heartbeat_bundles"]


def heartbeat_bundles(ident: BrokerIdentity) -> list[str]:
    """The full bundles of this broker's two heartbeat namespaces."""
    return [
        str(NamespaceBundles.create(ns, 1).bundles[0])
        for ns in (
            heartbeat_namespace(ident.cluster, ident.broker_id),
            heartbeat_namespace_v2(ident.broker_id),
        )
    ]


def readiness(started: bool, ready: bool) -> list[str]:
    """Why the broker is not ready (empty: ready): it has not ``started``, or is no longer ``ready``."""
    if not started:
        return ["the broker has not finished starting"]
    if not ready:
        return ["the broker is stopping"]
    return []


def health(
    not_ready: list[str],
    *,
    identity: BrokerIdentity,
    store: MetadataStore,
    registry: BrokerRegistry,
    ownership: OwnershipChannel,
) -> list[str]:
    """Why the broker is not healthy (empty: healthy); ``not_ready`` is :func:`readiness`'s answer."""
    problems = list(not_ready)
    if problems:
        return problems
    if not store.connected:
        problems.append(f"the metadata-store session is {store.session_state.value}")
    if not registry.is_registered:
        problems.append("the broker is not registered under /loadbalance/brokers")
    for bundle in heartbeat_bundles(identity):
        if not ownership.owns(bundle):
            problems.append(f"the heartbeat bundle {bundle} is not owned by this broker")
    return problems
