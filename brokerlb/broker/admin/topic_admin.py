"""Topic administration: Pulsar's ``PersistentTopicsBase`` / ``NonPersistentTopics`` flows on one broker.

A topic exists when it was created as a persistent topic (its node under ``/managed-ledgers``,
:class:`~brokerlb.coordination.topic_metadata.PersistentTopics`) or while a broker serves it.
Operations on one topic are done by the owner of its bundle: another broker answers with a
:class:`~brokerlb.broker.ownership.redirect.Redirect` (307, ``authoritative`` = "I am the leader"). Create
and stats assign an unowned bundle first (Pulsar's ``validateTopicOwnership``); delete and the
subscriptions list of an unowned bundle are answered from the store.

=============================  ==================================================================
operation                      rules (status)
=============================  ==================================================================
list topics                    the namespace must exist (404); persistent: created topics and
                               every persistent topic a broker serves now; non-persistent: the
                               ones served now (each active broker is asked)
list partitioned topics        names under ``/admin/partitioned-topics/{ns}/{domain}``
create (non-partitioned)       namespace (404); a partitioned topic of that name (409 "This topic
                               already exists"); ``-partition-N`` names only for N below the
                               parent's partitions (412); exists (409)
create partitioned             as Pulsar (``PUT .../partitions``: 204; 406 N <= 0; 409 exists or a
                               topic of that name exists; 404 namespace); the persistent partitions
                               are created too
delete                         unknown (404 "Topic not found"); a partitioned topic's base name
                               (409, use delete-partitioned-topic); connected clients without
                               ``force`` (412 "Topic has active producers/subscriptions"); with
                               ``force`` the clients are disconnected (they look the topic up again)
delete partitioned             not partitioned (404); every partition deleted, then the metadata
stats                          unknown (404); Pulsar's TopicStats (:mod:`.topic_stats`)
partitioned-stats              not partitioned (404 "Partitioned Topic not found"); partitions'
                               stats summed, ``metadata``, ``partitions`` with ``perPartition``
subscriptions                  unknown (404); a partitioned topic: the union over its partitions
=============================  ==================================================================
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from brokerlb.admin.client import AsyncAdminClient
from brokerlb.broker.admin.partitioned_topics import PartitionedTopics
from brokerlb.broker.data.served_topics import ServedTopics
from brokerlb.broker.data.topic_stats import empty_topic_view, partitioned_stats_json, topic_stats_json
from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
from brokerlb.broker.ownership.lookup import LookupService
from brokerlb.broker.ownership.ownership_channel import OwnershipChannel
from brokerlb.broker.ownership.redirect import Redirect
from brokerlb.coordination.topic_metadata import PersistentTopics
from brokerlb.errors import (
    ConflictError,
    NoBrokerAvailableError,
    NotFoundError,
    PreconditionFailedError,
    TopicNotFoundError,
)
from brokerlb.naming import NamespaceName, TopicName

__all__ = ["TopicAdmin"]

logger = logging.getLogger(__name__)
#: partitions of a new partitioned topic whose metadata is written at the same time
_CONCURRENT_CREATES = 32


class TopicAdmin:
    """The topic admin operations of one broker (module docstring)."""

    def __init__(
        self,
        *,
        broker_id: str,
        bundles: NamespaceBundlesCache,
        channel: OwnershipChannel,
        lookup: LookupService,
        is_leader: Callable[[], bool],
        persistent: PersistentTopics,
        partitioned: PartitionedTopics,
        served: ServedTopics,
        brokers: Callable[[], Mapping[str, str]],
        admin: AsyncAdminClient,
    ) -> None:
        self.broker_id = broker_id
        self.bundles = bundles
        self.channel = channel
        self.lookup = lookup
        self.is_leader = is_leader
        self.persistent = persistent
        self.partitioned = partitioned
        self.served = served
        self.brokers = brokers
        self.admin = admin

    # ------------------------------------------------------------------ lists
    async def list_topics(self, namespace: str, domain: str) -> list[str]:
        ns = NamespaceName.parse(namespace)
        await self.bundles.get(ns)
        names = await self._served_everywhere(ns, domain)
        if domain == "persistent":
            names |= set(await self.persistent.names(ns))
        return sorted(names)

    async def list_partitioned(self, namespace: str, domain: str) -> list[str]:
        ns = NamespaceName.parse(namespace)
        await self.bundles.get(ns)
        return await self.partitioned.names(ns, domain)

    async def _served_everywhere(self, ns: NamespaceName, domain: str) -> set[str]:
        prefix = f"{domain}://{ns}/"
        names = {n for n in self.served.names() if n.startswith(prefix)}
        others = {b: url for b, url in self.brokers().items() if b != self.broker_id and url}
        reports = await asyncio.gather(
            *(self.admin.at(url).get_topics_stats() for url in others.values()), return_exceptions=True
        )
        for broker, report in zip(others, reports, strict=True):
            if isinstance(report, BaseException):
                logger.warning("Could not list the topics served by %s: %s", broker, report)
                continue
            bundles = (report or {}).get(str(ns)) or {}
            for domains in bundles.values():
                names.update(n for n in (domains.get(domain) or {}) if n.startswith(prefix))
        return names

    # ------------------------------------------------------------------ create / delete
    async def create(
        self, topic: TopicName, *, authoritative: bool = False, properties: Mapping[str, str] | None = None
    ) -> Redirect | None:
        await self.bundles.get(topic.namespace)
        await self._check_partition_name(topic)
        if (await self.partitioned.metadata(topic))["partitions"] > 0:
            raise ConflictError(f"This topic already exists: {topic} is a partitioned topic")
        redirect = await self._route(topic, authoritative, assign=True)
        if redirect is not None:
            return redirect
        if topic in self.served:
            raise ConflictError(f"This topic already exists: {topic}")
        if topic.is_persistent:
            await self.persistent.create(topic, properties)
        await self.served.create(topic)
        logger.info("Created topic %s", topic)
        return None

    async def create_partitioned(self, topic: TopicName, partitions: int) -> None:
        if topic.is_persistent and await self.persistent.exists(topic):
            raise ConflictError(f"This topic already exists: {topic} is a non-partitioned topic")
        await self.partitioned.create(topic, partitions)
        if topic.is_persistent:
            # a bounded number of metadata writes at a time: the event loop (and the store session)
            # keeps being served however many partitions there are
            pending = iter(range(partitions))

            async def create_some() -> None:
                for i in pending:
                    await self.persistent.ensure(topic.partition(i))

            await asyncio.gather(*(create_some() for _ in range(min(partitions, _CONCURRENT_CREATES))))

    async def delete(
        self, topic: TopicName, *, force: bool = False, authoritative: bool = False
    ) -> Redirect | None:
        await self.bundles.get(topic.namespace)
        if not topic.is_partitioned and (await self.partitioned.metadata(topic))["partitions"] > 0:
            raise ConflictError(f"Topic {topic} is a partitioned topic: use delete-partitioned-topic")
        redirect = await self._route(topic, authoritative, assign=False)
        if redirect is not None:
            return redirect
        served = topic in self.served
        if not served and not (topic.is_persistent and await self.persistent.exists(topic)):
            raise TopicNotFoundError(f"Topic {topic} not found")
        if served:
            if self.served.connections(topic) and not force:
                raise PreconditionFailedError(f"Topic {topic} has active producers/subscriptions")
            await self.served.close(topic)
        if topic.is_persistent:
            await self.persistent.delete(topic)
        logger.info("Deleted topic %s%s", topic, " (forced)" if force else "")
        return None

    async def delete_partitioned(self, topic: TopicName, *, force: bool = False) -> None:
        partitions = await self._partitions(topic)
        for i in range(partitions):
            part = topic.partition(i)
            with contextlib.suppress(NotFoundError):  # a partition never created: nothing to delete
                await self.admin.at(self._self_url()).delete_topic(str(part), force=force)
        await self.partitioned.delete(topic)
        logger.info("Deleted partitioned topic %s (%d partitions)", topic, partitions)

    # ------------------------------------------------------------------ stats
    async def stats(self, topic: TopicName, *, authoritative: bool = False) -> Redirect | dict[str, Any]:
        await self.bundles.get(topic.namespace)
        redirect = await self._route(topic, authoritative, assign=True)
        if redirect is not None:
            return redirect
        view = self.served.view(topic)
        if view is None:
            if not (topic.is_persistent and await self.persistent.exists(topic)):
                raise TopicNotFoundError(f"Topic {topic} not found")
            view = empty_topic_view(str(topic), self.broker_id)
        return topic_stats_json(view)

    async def internal_stats(
        self, topic: TopicName, *, authoritative: bool = False
    ) -> Redirect | dict[str, Any]:
        """Pulsar's ``PersistentTopicInternalStats``: the topic's managed ledger (loaded here from
        storage if it is not served yet, as Pulsar loads a topic for its internal stats)."""
        await self.bundles.get(topic.namespace)
        redirect = await self._route(topic, authoritative, assign=True)
        if redirect is not None:
            return redirect
        stats = self.served.internal_stats(topic)
        if stats is None:
            if not topic.is_persistent:
                raise TopicNotFoundError(f"Topic {topic} not found")
            await self.served.create(topic)
            stats = self.served.internal_stats(topic)
            if stats is None:
                raise TopicNotFoundError(f"Topic {topic} not found")
        return stats

    async def partitioned_stats(self, topic: TopicName, *, per_partition: bool = True) -> dict[str, Any]:
        await self.bundles.get(topic.namespace)
        partitions = await self._partitions(topic, what="Partitioned Topic not found")
        names = [topic.partition(i) for i in range(partitions)]
        results = await asyncio.gather(*(self._partition_stats(n) for n in names))
        return partitioned_stats_json(
            partitions,
            {str(n): s for n, s in zip(names, results, strict=True)},
            include_partitions=per_partition,
        )

    async def _partition_stats(self, partition: TopicName) -> dict[str, Any]:
        try:
            return dict(await self.admin.at(self._self_url()).get_topic_stats(str(partition)))
        except NotFoundError:
            return topic_stats_json(empty_topic_view(str(partition)))  # a partition nobody loaded yet

    async def subscriptions(self, topic: TopicName, *, authoritative: bool = False) -> Redirect | list[str]:
        await self.bundles.get(topic.namespace)
        if not topic.is_partitioned:
            partitions = (await self.partitioned.metadata(topic))["partitions"]
            if partitions > 0:
                names: set[str] = set()
                for i in range(partitions):
                    with contextlib.suppress(NotFoundError):
                        names.update(
                            await self.admin.at(self._self_url()).get_subscriptions(str(topic.partition(i)))
                        )
                return sorted(names)
        redirect = await self._route(topic, authoritative, assign=False)
        if redirect is not None:
            return redirect
        if topic in self.served:
            return self.served.subscriptions(topic)
        if topic.is_persistent and await self.persistent.exists(topic):
            return []
        raise TopicNotFoundError(f"Topic {topic} not found")

    # ------------------------------------------------------------------ internals
    async def _partitions(self, topic: TopicName, what: str = "Partitioned topic does not exist") -> int:
        partitions = int((await self.partitioned.metadata(topic))["partitions"])
        if partitions <= 0:
            raise NotFoundError(f"{what}: {topic} is not a partitioned topic")
        return partitions

    async def _check_partition_name(self, topic: TopicName) -> None:
        """Pulsar's ``validateNonPartitionTopicName``: ``x-partition-N`` only for a partition of ``x``."""
        if not topic.is_partitioned:
            return
        base = topic.partitioned_topic_name
        partitions = int((await self.partitioned.metadata(base))["partitions"])
        if topic.partition_index >= partitions:
            raise PreconditionFailedError(
                f'Can\'t create topic {topic} with "-partition-" in its name: '
                f"{base} has {partitions} partitions (index {topic.partition_index} is not one of them)"
            )

    async def _route(self, topic: TopicName, authoritative: bool, *, assign: bool) -> Redirect | None:
        """``None`` when this broker must answer (it owns the bundle, or nobody does and ``assign`` is
        False); else a redirect to the owner (assigning the bundle first when ``assign``)."""
        bundle = (await self.bundles.get(topic.namespace)).find_bundle(topic)
        owner = self.channel.owner(bundle).broker
        if owner is None:
            if not assign:
                return None
            result = await self.lookup.resolve(bundle, authoritative=authoritative)
            if result.redirect:
                return Redirect(self.lookup.web_url(result.broker), result.authoritative)
            owner = result.broker
        if owner == self.broker_id:
            return None
        return Redirect(self.lookup.web_url(owner), authoritative=self.is_leader())

    def _self_url(self) -> str:
        return _base(self.brokers().get(self.broker_id) or self.admin.url)


def _base(url: str | None) -> str:
    if not url:
        raise NoBrokerAvailableError("The owner's web service URL is not known")
    return url.rstrip("/")
