"""The ZooKeeper-era Kafka layout (0.8) and its JSON, on any :class:`MetadataStore`.

=============================================  ==========  ===============================================
path                                           kind        data
=============================================  ==========  ===============================================
``/brokers/topics/{topic}``                    persistent  ``{"version":1,"partitions":{"0":[1,2],...}}``
``/consumers/{group}/ids/{consumerId}``        ephemeral   ``{"version":1,"subscription":{"t":1},
                                                            "pattern":"static","timestamp":"..."}``
``/consumers/{group}/owners/{topic}/{p}``      ephemeral   the owning consumer thread id (``{consumerId}-0``)
``/consumers/{group}/coordinator/member-NNN``  ephemeral   consumer id (coordinator style: election)
``/consumers/{group}/assignment``              persistent  coordinator style: ``{"generation":g,
                                                            "assignment":{consumerId:{t:[p]}}}``
=============================================  ==========  ===============================================

One stream (thread) per consumer: the thread id is ``{consumerId}-0``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from brokerlb.coordination import MetadataStore, join_path
from brokerlb.errors import InvalidInputError, NodeExistsError, NoNodeError
from brokerlb.kafka.assignors import TopicPartition

__all__ = [
    "BROKER_TOPICS",
    "topic_path",
    "GroupPaths",
    "thread_id",
    "encode_subscription",
    "decode_subscription",
    "encode_topic",
    "decode_topic_partitions",
    "create_topic",
    "set_topic_partitions",
]

BROKER_TOPICS = "/brokers/topics"


def topic_path(topic: str) -> str:
    return join_path(BROKER_TOPICS, topic)


class GroupPaths:
    """The paths of one consumer group."""

    def __init__(self, group: str) -> None:
        if not group or "/" in group:
            raise InvalidInputError(f"invalid consumer group name {group!r}")
        self.group = group
        self.root = join_path("/consumers", group)
        self.ids = join_path(self.root, "ids")
        self.owners = join_path(self.root, "owners")
        self.coordinator = join_path(self.root, "coordinator")
        self.assignment = join_path(self.root, "assignment")

    def consumer(self, consumer_id: str) -> str:
        return join_path(self.ids, consumer_id)

    def owner_topic(self, topic: str) -> str:
        return join_path(self.owners, topic)

    def owner(self, tp: TopicPartition) -> str:
        return join_path(self.owners, tp.topic, str(tp.partition))


def thread_id(consumer_id: str) -> str:
    """``ConsumerThreadId`` of the consumer's only stream."""
    return f"{consumer_id}-0"


def encode_subscription(topics: Iterable[str], timestamp_ms: int) -> bytes:
    return json.dumps(
        {
            "version": 1,
            "subscription": {t: 1 for t in sorted(topics)},
            "pattern": "static",
            "timestamp": str(timestamp_ms),
        },
        separators=(",", ":"),
    ).encode()


def decode_subscription(data: bytes, where: str) -> tuple[str, ...]:
    try:
        doc = json.loads(data)
        subscription = doc["subscription"]
        if not isinstance(subscription, dict):
            raise TypeError("subscription is not an object")
        return tuple(sorted(subscription))
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(f"bad consumer registration at {where}: {exc}") from exc


def encode_topic(num_partitions: int, replicas: Mapping[int, list[int]] | None = None) -> bytes:
    if num_partitions < 1:
        raise InvalidInputError(f"a topic needs at least one partition, got {num_partitions}")
    parts = {str(p): (replicas or {}).get(p, [0]) for p in range(num_partitions)}
    return json.dumps({"version": 1, "partitions": parts}, separators=(",", ":")).encode()


def decode_topic_partitions(data: bytes, where: str) -> int:
    """Number of partitions of a topic node (Kafka numbers them 0..n-1)."""
    try:
        partitions = json.loads(data)["partitions"]
        numbers = sorted(int(p) for p in partitions)
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(f"bad topic registration at {where}: {exc}") from exc
    if numbers != list(range(len(numbers))):
        raise InvalidInputError(f"topic at {where} has partitions {numbers}, expected 0..n-1")
    return len(numbers)


async def create_topic(store: MetadataStore, topic: str, num_partitions: int) -> None:
    """Register a topic as a broker would (``/brokers/topics/{topic}``)."""
    try:
        await store.create(topic_path(topic), encode_topic(num_partitions), make_parents=True)
    except NodeExistsError as exc:
        raise NodeExistsError(f"topic {topic} already exists", topic_path(topic)) from exc


async def set_topic_partitions(store: MetadataStore, topic: str, num_partitions: int) -> None:
    """Change a topic's partition count (adding partitions fires the consumers' topic watch)."""
    try:
        await store.set(topic_path(topic), encode_topic(num_partitions))
    except NoNodeError as exc:
        raise NoNodeError(f"topic {topic} does not exist", topic_path(topic)) from exc


def decode_json(data: bytes, where: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise InvalidInputError(f"bad JSON at {where}: {exc}") from exc
