"""Pulsar's ``TopicStats`` JSON (``pulsar-admin topics stats`` / ``partitioned-stats``) from what a broker serves.

:class:`TopicView` is what the data path knows about one served topic: topic-level rates (the
registry's :class:`~brokerlb.broker.data.topics.TopicStats`, real sliding-window rates), its publishers
and its subscriptions with their consumers. :func:`topic_stats_json` writes Pulsar's
``TopicStatsImpl`` shape (``NonPersistentTopicStats`` adds ``msgDropRate``);
:func:`partitioned_stats_json` sums partitions as ``PartitionedTopicStatsImpl.add`` does and adds
``metadata`` and, with ``perPartition``, ``partitions``.

Deviation: the current topic engine measures rates per topic, not per publisher, subscription or
consumer; those nested rate fields are left out rather than invented (a Java or Go client reads a
missing number as 0). ``msgBacklog`` is the subscription's entries not acknowledged yet and
``backlogSize`` the bytes from the slowest durable subscription's first unacknowledged entry, as
the topic engine keeps them; ``storageSize`` the bytes of the topic's ledgers in the storage tier.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from brokerlb.broker.data.topics import TopicStats

__all__ = [
    "ConsumerView",
    "SubscriptionView",
    "PublisherView",
    "TopicView",
    "topic_stats_json",
    "partitioned_stats_json",
    "empty_topic_view",
]


@dataclass(frozen=True, slots=True)
class ConsumerView:
    consumer_name: str
    available_permits: int = 0
    unacked_messages: int = 0
    address: str | None = None
    connected_since: str | None = None


@dataclass(frozen=True, slots=True)
class SubscriptionView:
    name: str
    type: str
    consumers: tuple[ConsumerView, ...] = ()
    msg_backlog: int = 0
    durable: bool = True
    msg_drop_rate: float | None = None

    @property
    def unacked_messages(self) -> int:
        return sum(c.unacked_messages for c in self.consumers)


@dataclass(frozen=True, slots=True)
class PublisherView:
    producer_id: int
    producer_name: str | None = None
    address: str | None = None
    connected_since: str | None = None


@dataclass(frozen=True, slots=True)
class TopicView:
    """One served topic as the data path sees it."""

    name: str
    stats: TopicStats = field(default_factory=TopicStats)
    publishers: tuple[PublisherView, ...] = ()
    subscriptions: tuple[SubscriptionView, ...] = ()
    #: totals since the topic was loaded, when the engine counts them (else left out of the JSON)
    msg_in_counter: int | None = None
    bytes_in_counter: int | None = None
    msg_out_counter: int | None = None
    bytes_out_counter: int | None = None
    msg_drop_rate: float | None = None
    #: bytes from the slowest durable subscription's first unacknowledged entry to the end
    backlog_size: int = 0
    #: bytes the topic's managed ledger keeps in storage (its ledgers' sizes)
    storage_size: int = 0
    owner_broker: str | None = None


def empty_topic_view(name: str, owner_broker: str | None = None) -> TopicView:
    """A created topic nobody is connected to (its stats are zero)."""
    return TopicView(name, owner_broker=owner_broker)


def _publisher_json(p: PublisherView) -> dict[str, Any]:
    out: dict[str, Any] = {"producerId": p.producer_id, "supportsPartialProducer": False, "metadata": {}}
    for key, value in (
        ("producerName", p.producer_name),
        ("address", p.address),
        ("connectedSince", p.connected_since),
    ):
        if value is not None:
            out[key] = value
    return out


def _consumer_json(c: ConsumerView) -> dict[str, Any]:
    out: dict[str, Any] = {
        "consumerName": c.consumer_name,
        "availablePermits": c.available_permits,
        "unackedMessages": c.unacked_messages,
        "blockedConsumerOnUnackedMsgs": False,
        "metadata": {},
    }
    for key, value in (("address", c.address), ("connectedSince", c.connected_since)):
        if value is not None:
            out[key] = value
    return out


def _subscription_json(s: SubscriptionView) -> dict[str, Any]:
    out: dict[str, Any] = {
        "msgBacklog": s.msg_backlog,
        "msgBacklogNoDelayed": s.msg_backlog,
        "msgDelayed": 0,
        "unackedMessages": s.unacked_messages,
        "blockedSubscriptionOnUnackedMsgs": False,
        "type": s.type,
        "consumers": [_consumer_json(c) for c in s.consumers],
        "isDurable": s.durable,
        "isReplicated": False,
        "allowOutOfOrderDelivery": False,
        "consumersAfterMarkDeletePosition": {},
        "nonContiguousDeletedMessagesRanges": 0,
        "nonContiguousDeletedMessagesRangesSerializedSize": 0,
        "subscriptionProperties": {},
    }
    if s.type in ("Exclusive", "Failover") and s.consumers:
        out["activeConsumerName"] = s.consumers[0].consumer_name
    if s.msg_drop_rate is not None:
        out["msgDropRate"] = s.msg_drop_rate
    return out


def topic_stats_json(view: TopicView) -> dict[str, Any]:
    """Pulsar's TopicStats of one topic (module docstring)."""
    st = view.stats
    out: dict[str, Any] = {
        "msgRateIn": st.msg_rate_in,
        "msgThroughputIn": st.msg_throughput_in,
        "msgRateOut": st.msg_rate_out,
        "msgThroughputOut": st.msg_throughput_out,
    }
    for key, value in (
        ("bytesInCounter", view.bytes_in_counter),
        ("msgInCounter", view.msg_in_counter),
        ("bytesOutCounter", view.bytes_out_counter),
        ("msgOutCounter", view.msg_out_counter),
    ):
        if value is not None:
            out[key] = value
    out.update(
        {
            "averageMsgSize": st.msg_throughput_in / st.msg_rate_in if st.msg_rate_in else 0.0,
            "msgChunkPublished": False,
            "storageSize": view.storage_size,
            "backlogSize": view.backlog_size,
            "publishRateLimitedTimes": 0,
            "earliestMsgPublishTimeInBacklogs": 0,
            "offloadedStorageSize": 0,
            "waitingPublishers": 0,
            "publishers": [_publisher_json(p) for p in view.publishers],
            "subscriptions": {
                s.name: _subscription_json(s) for s in sorted(view.subscriptions, key=lambda s: s.name)
            },
            "replication": {},
            "nonContiguousDeletedMessagesRanges": 0,
            "nonContiguousDeletedMessagesRangesSerializedSize": 0,
        }
    )
    if view.msg_drop_rate is not None:
        out["msgDropRate"] = view.msg_drop_rate
    if view.owner_broker is not None:
        out["ownerBroker"] = view.owner_broker
    return out


_SUMMED = (
    "msgRateIn",
    "msgThroughputIn",
    "msgRateOut",
    "msgThroughputOut",
    "bytesInCounter",
    "msgInCounter",
    "bytesOutCounter",
    "msgOutCounter",
    "storageSize",
    "backlogSize",
    "publishRateLimitedTimes",
    "offloadedStorageSize",
    "waitingPublishers",
    "nonContiguousDeletedMessagesRanges",
    "nonContiguousDeletedMessagesRangesSerializedSize",
)
_SUB_SUMMED = (
    "msgBacklog",
    "msgBacklogNoDelayed",
    "backlogSize",
    "msgDelayed",
    "unackedMessages",
    "msgDropRate",
)


def partitioned_stats_json(
    partitions: int, per_partition: Mapping[str, Mapping[str, Any]], *, include_partitions: bool = True
) -> dict[str, Any]:
    """Pulsar's PartitionedTopicStats: the partitions' stats summed (publishers and subscriptions merged
    by position and by name), ``metadata`` and, with ``include_partitions``, ``partitions``."""
    total: dict[str, Any] = topic_stats_json(TopicView(""))
    count = 0
    for stats in per_partition.values():
        count += 1
        for key in _SUMMED:
            if key in stats:
                total[key] = total.get(key, 0) + stats[key]
        total["averageMsgSize"] = (
            total["averageMsgSize"] * (count - 1) + stats.get("averageMsgSize", 0.0)
        ) / count
        if "msgDropRate" in stats:
            total["msgDropRate"] = total.get("msgDropRate", 0.0) + stats["msgDropRate"]
        _merge_publishers(total["publishers"], stats.get("publishers") or [])
        for name, sub in (stats.get("subscriptions") or {}).items():
            _merge_subscription(total["subscriptions"], name, sub)
    total["metadata"] = {"partitions": partitions}
    if include_partitions:
        total["partitions"] = {name: dict(s) for name, s in sorted(per_partition.items())}
    return total


def _merge_publishers(into: list[dict[str, Any]], publishers: Iterable[Mapping[str, Any]]) -> None:
    for index, publisher in enumerate(publishers):
        if index == len(into):
            into.append({"supportsPartialProducer": False, "metadata": {}})
        for key, value in publisher.items():
            into[index].setdefault(key, value)


def _merge_subscription(into: dict[str, Any], name: str, sub: Mapping[str, Any]) -> None:
    current = into.get(name)
    if current is None:
        into[name] = {**sub, "consumers": list(sub.get("consumers") or [])}
        return
    for key in _SUB_SUMMED:
        if key in sub:
            current[key] = current.get(key, 0) + sub[key]
    current["consumers"] = list(current.get("consumers") or []) + list(sub.get("consumers") or [])
