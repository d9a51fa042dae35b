"""What an operator reaches on a broker beyond lookups and bundles, wired from the broker's parts.

:class:`BrokerOperations` builds, starts and stops (one hook each in
:class:`~brokerlb.broker.service.BrokerService`):

* cluster metadata at start: the cluster's ClusterData and the tenants ``public`` and ``pulsar``
  where missing (:func:`~brokerlb.coordination.tenants.ensure_cluster_metadata`);
* tenants (:class:`~brokerlb.coordination.tenants.Tenants`), namespace policies and deletion
  (:class:`~brokerlb.broker.namespace_admin.NamespaceAdmin`), topics
  (:class:`~brokerlb.broker.topic_admin.TopicAdmin`);
* dynamic configuration (:class:`~brokerlb.broker.dynamic_config.DynamicConfiguration`).

Each route module gets only the part it uses (:mod:`brokerlb.broker.http.operations_routes`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from brokerlb.broker.dynamic_config import DynamicConfiguration
from brokerlb.broker.namespace_admin import NamespaceAdmin
from brokerlb.broker.served_topics import ServedTopics
from brokerlb.broker.topic_admin import TopicAdmin
from brokerlb.coordination.records import ClusterData
from brokerlb.coordination.tenants import Tenants, ensure_cluster_metadata
from brokerlb.coordination.topic_metadata import PersistentTopics

if TYPE_CHECKING:
    from brokerlb.broker.service import BrokerService

__all__ = ["BrokerOperations"]

logger = logging.getLogger(__name__)


class BrokerOperations:
    """Operator-facing parts of one broker (module docstring)."""

    def __init__(self, service: BrokerService) -> None:
        ident = service.identity
        self.cluster = ident.cluster
        self.broker_id = ident.broker_id
        self.store = service.store
        self.cluster_data = ClusterData(
            service_url=ident.web_service_url,
            service_url_tls=ident.web_service_url_tls,
            broker_service_url=ident.pulsar_service_url,
            broker_service_url_tls=ident.pulsar_service_url_tls,
        )
        registry = service.registry

        def broker_urls() -> dict[str, str]:
            urls: dict[str, str] = {}
            for broker in registry.available_brokers():
                report = registry.broker_json(broker)
                url = report.get("webServiceUrl") if isinstance(report, dict) else None
                if url:
                    urls[broker] = url
            urls.setdefault(ident.broker_id, ident.web_service_url or "")
            return urls

        self.broker_urls = broker_urls
        self.tenants = Tenants(service.store)
        self.persistent = PersistentTopics(service.store)
        self.served = ServedTopics(service.topics, service.data_path, ident.broker_id)
        self.topics = TopicAdmin(
            broker_id=ident.broker_id,
            bundles=service.bundles,
            owners=service.owners,
            resolve=lambda bundle, authoritative: service.lookup.resolve(bundle, authoritative=authoritative),
            is_leader=lambda: service.election.is_leader,
            persistent=self.persistent,
            partitioned=service.partitioned_topics,
            served=self.served,
            brokers=broker_urls,
            admin=service.admin,
        )
        self.namespaces = NamespaceAdmin(
            conf=service.conf,
            cluster=ident.cluster,
            store=service.store,
            metadata=service.metadata,
            tenants=self.tenants,
            topics=self.topics,
            persistent=self.persistent,
            partitioned=service.partitioned_topics,
            self_url=lambda: ident.web_service_url or "",
            admin=service.admin,
        )
        self.dynamic = DynamicConfiguration(service.conf, service.store)

    async def start(self) -> None:
        written = await ensure_cluster_metadata(self.store, self.cluster, self.cluster_data)
        if written:
            logger.info("Broker %s wrote the cluster metadata %s", self.broker_id, ", ".join(written))
        await self.dynamic.start()

    def close(self) -> None:
        self.dynamic.close()
