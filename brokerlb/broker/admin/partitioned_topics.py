"""Partitioned-topic metadata: ``/admin/partitioned-topics/{tenant}/{ns}/{domain}/{topic}``.

``{"partitions": N}`` as Pulsar's ``PartitionedTopicMetadata``; a topic that was never
created as partitioned answers ``{"partitions": 0}``. Creation rules (Pulsar's
``internalCreatePartitionedTopic``): the namespace must exist (404), ``N > 0`` (406
"Number of partitions should be more than 0"), the name must not be a partition
(412), and it must not exist yet (409).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote_plus

from brokerlb.coordination import MetadataStore
from brokerlb.coordination.paths import partitioned_topic_path, partitioned_topics_path, policies_path
from brokerlb.errors import (
    ConflictError,
    CorruptMetadataError,
    InvalidInputError,
    InvalidTopicNameError,
    NamespaceNotFoundError,
    NodeExistsError,
    NoNodeError,
    NotAcceptableError,
)
from brokerlb.naming import NamespaceName, TopicName

__all__ = ["PartitionedTopics", "parse_partition_count"]


def parse_partition_count(body: object) -> int:
    """The request body of a create: a JSON integer."""
    if isinstance(body, bool) or not isinstance(body, int):
        raise InvalidInputError(f"The number of partitions must be a JSON integer, got {body!r}")
    if body <= 0:
        raise NotAcceptableError("Number of partitions should be more than 0")
    return body


class PartitionedTopics:
    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    async def create(self, topic: TopicName, partitions: int) -> None:
        if topic.is_partitioned:
            raise InvalidTopicNameError(str(topic), "a partitioned topic name must not contain '-partition-'")
        if await self.store.exists(policies_path(topic.namespace)) is None:
            raise NamespaceNotFoundError(f"Namespace {topic.namespace} does not exist")
        data = json.dumps({"partitions": partitions}).encode()
        try:
            await self.store.create(partitioned_topic_path(topic), data, make_parents=True)
        except NodeExistsError as exc:
            raise ConflictError(f"Partitioned topic {topic} already exists") from exc

    async def metadata(self, topic: TopicName) -> dict[str, Any]:
        path = partitioned_topic_path(topic.partitioned_topic_name if topic.is_partitioned else topic)
        if topic.is_partitioned:
            return {"partitions": 0}
        node = await self.store.get_or_none(path)
        if node is None:
            return {"partitions": 0}
        try:
            value = json.loads(node.data)
            partitions = int(value["partitions"])
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptMetadataError(f"Unreadable partitioned-topic metadata: {exc}", path) from exc
        return {"partitions": partitions}

    async def names(self, namespace: NamespaceName | str, domain: str) -> list[str]:
        """Full names of the namespace's partitioned topics of ``domain`` (sorted)."""
        ns = NamespaceName.parse(namespace)
        try:
            encoded = await self.store.children(partitioned_topics_path(ns, domain))
        except NoNodeError:
            return []
        return sorted(f"{domain}://{ns}/{unquote_plus(e)}" for e in encoded)

    async def delete(self, topic: TopicName) -> bool:
        """Remove the metadata; False when the topic was not partitioned."""
        try:
            await self.store.delete(partitioned_topic_path(topic))
            return True
        except NoNodeError:
            return False
