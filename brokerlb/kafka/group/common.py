"""Pieces both group protocols share: reading the group's view, owner nodes, listeners."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Protocol

from brokerlb.coordination import MetadataStore
from brokerlb.errors import InvalidInputError, NodeExistsError, NoNodeError
from brokerlb.kafka.assignors import GroupSnapshot, Member, TopicPartition
from brokerlb.kafka.group.layout import (
    GroupPaths,
    decode_subscription,
    decode_topic_partitions,
    encode_subscription,
    thread_id,
    topic_path,
)

__all__ = [
    "RebalanceListener",
    "register_consumer",
    "read_members",
    "read_partitions",
    "read_owners",
    "read_snapshot",
    "claim_partitions",
    "release_partitions",
]

logger = logging.getLogger(__name__)


class RebalanceListener(Protocol):
    """The old consumer's ``ConsumerRebalanceListener`` (both hooks optional in practice)."""

    def before_releasing_partitions(self, owned: Mapping[str, set[int]]) -> None: ...

    def before_starting_fetchers(
        self, consumer_id: str, assignment: Mapping[str, list[TopicPartition]]
    ) -> None: ...


async def register_consumer(
    store: MetadataStore, paths: GroupPaths, consumer_id: str, topics: Iterable[str]
) -> None:
    """Create the ephemeral ``/consumers/{group}/ids/{id}`` node (``registerConsumerInZK``).

    An existing node of this session (a retried create that had succeeded) is fine;
    one of another session means the id is taken.
    """
    data = encode_subscription(topics, int(time.time() * 1000))
    try:
        await store.create(paths.consumer(consumer_id), data, ephemeral=True)
    except NodeExistsError:
        node = await store.get_or_none(paths.consumer(consumer_id))
        if node is None or not store.owns(node.stat):
            raise


async def read_members(store: MetadataStore, paths: GroupPaths) -> dict[str, tuple[str, ...]]:
    """``{consumer id: subscribed topics}`` from ``/consumers/{group}/ids`` (sorted ids)."""
    try:
        ids = await store.children(paths.ids)
    except NoNodeError:
        return {}
    members: dict[str, tuple[str, ...]] = {}
    for cid in sorted(ids):
        node = await store.get_or_none(paths.consumer(cid))
        if node is None:
            continue  # left while we were reading
        try:
            members[cid] = decode_subscription(node.data, paths.consumer(cid))
        except InvalidInputError as exc:
            logger.warning("ignoring consumer %s: %s", cid, exc)
    return members


async def read_partitions(store: MetadataStore, topics: Iterable[str]) -> dict[str, int]:
    """``{topic: partition count}`` for the topics registered under ``/brokers/topics``."""
    counts: dict[str, int] = {}
    for topic in sorted(set(topics)):
        node = await store.get_or_none(topic_path(topic))
        if node is not None:
            counts[topic] = decode_topic_partitions(node.data, topic_path(topic))
    return counts


async def read_owners(
    store: MetadataStore, paths: GroupPaths, topics: Iterable[str]
) -> dict[TopicPartition, str]:
    """``{partition: owning consumer id}`` from the owner nodes (thread ids ``{id}-0``)."""
    owners: dict[TopicPartition, str] = {}
    for topic in sorted(set(topics)):
        try:
            parts = await store.children(paths.owner_topic(topic))
        except NoNodeError:
            continue
        for p in parts:
            node = await store.get_or_none(paths.owner(TopicPartition(topic, int(p))))
            if node is not None:
                owner = node.data.decode()
                owners[TopicPartition(topic, int(p))] = owner[:-2] if owner.endswith("-0") else owner
    return owners


async def read_snapshot(store: MetadataStore, paths: GroupPaths, with_owners: bool) -> GroupSnapshot:
    """The group as the assignor sees it (``AssignmentContext``), optionally with current owners."""
    members = await read_members(store, paths)
    topics = {t for subs in members.values() for t in subs}
    counts = await read_partitions(store, topics)
    owned: dict[str, list[TopicPartition]] = {cid: [] for cid in members}
    if with_owners:
        for tp, cid in (await read_owners(store, paths, counts)).items():
            if cid in owned:
                owned[cid].append(tp)
    return GroupSnapshot(
        {cid: Member(cid, subs, tuple(sorted(owned[cid]))) for cid, subs in members.items()}, counts
    )


async def claim_partitions(
    store: MetadataStore, paths: GroupPaths, consumer_id: str, partitions: Iterable[TopicPartition]
) -> tuple[list[TopicPartition], TopicPartition | None]:
    """Create the owner nodes; stop at the first one that still exists.

    Returns ``(claimed, conflict)``: ``conflict`` is the partition whose node another
    consumer still holds (``reflectPartitionOwnershipDecision``'s ``ZkNodeExistsException``).
    """
    claimed: list[TopicPartition] = []
    for tp in sorted(partitions):
        try:
            await store.create(
                paths.owner(tp), thread_id(consumer_id).encode(), ephemeral=True, make_parents=True
            )
        except NodeExistsError:
            node = await store.get_or_none(paths.owner(tp))
            if node is not None and node.data == thread_id(consumer_id).encode() and store.owns(node.stat):
                claimed.append(tp)  # ours already (a retried create that had succeeded)
                continue
            return claimed, tp
        claimed.append(tp)
    return claimed, None


async def release_partitions(
    store: MetadataStore, paths: GroupPaths, consumer_id: str, partitions: Iterable[TopicPartition]
) -> None:
    """Delete our owner nodes (``deletePartitionOwnershipFromZK``); other consumers' nodes are left alone."""
    mine = thread_id(consumer_id).encode()

    async def release(tp: TopicPartition) -> None:
        node = await store.get_or_none(paths.owner(tp))
        if node is None or node.data != mine:
            return
        try:
            await store.delete(paths.owner(tp), version=node.stat.version)
        except NoNodeError:
            pass

    await asyncio.gather(*(release(tp) for tp in partitions))
