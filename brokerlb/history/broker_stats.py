"""Flatten a ``GET /admin/v2/broker-stats/topics`` document into :class:`TopicSample` rows.

Pulsar's document nests ``namespace → bundle range → domain → topic → stats``::

    {"public/default": {"0x00000000_0x40000000": {"persistent": {
        "persistent://public/default/t1": {
            "publishers": [...], "subscriptions": {"sub": {"consumers": [...], "msgBacklog": 5, ...}},
            "producerCount": 1, "averageMsgSize": 100.0, "msgRateIn": 10.0, "msgRateOut": 20.0,
            "msgThroughputIn": 1000.0, "msgThroughputOut": 2000.0, "msgInCount": 0, ...}}}}}

Per topic, the scalar fields are copied (missing ones are 0), and three are derived:
``consumerCount`` = consumers over all subscriptions, ``subscriptionCount`` = number of
subscriptions, ``msgBacklog`` = sum of the subscriptions' ``msgBacklog``. ``bundle`` is
``<namespace>/<range>``. Every row gets the dump's ``timestamp`` and ``broker``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from brokerlb.history.records import TopicSample
from brokerlb.model._validate import JsonObject, check_count, invalid

__all__ = ["topic_samples_from_broker_stats"]

_SCALARS = (
    ("msg_rate_in", "msgRateIn", False),
    ("msg_rate_out", "msgRateOut", False),
    ("msg_throughput_in", "msgThroughputIn", False),
    ("msg_throughput_out", "msgThroughputOut", False),
    ("producer_count", "producerCount", True),
    ("average_msg_size", "averageMsgSize", False),
    ("storage_size", "storageSize", True),
    ("backlog_size", "backlogSize", True),
    ("msg_in_count", "msgInCount", True),
    ("bytes_in_count", "bytesInCount", True),
    ("msg_out_count", "msgOutCount", True),
    ("bytes_out_count", "bytesOutCount", True),
)


def _topic_values(stats: JsonObject) -> dict[str, Any]:
    values: dict[str, Any] = {
        attr: stats.count(key) if is_count else stats.rate(key) for attr, key, is_count in _SCALARS
    }
    consumers = backlog = subscriptions = 0
    for _name, sub, path in stats.entries("subscriptions"):
        sub_obj = JsonObject(sub, path)
        subscriptions += 1
        listed = sub_obj.raw("consumers") or []
        if not isinstance(listed, list):
            raise invalid(sub_obj.field("consumers"), listed, "expected a list")
        consumers += len(listed)
        backlog += sub_obj.count("msgBacklog")
    values["consumer_count"] = consumers
    values["subscription_count"] = subscriptions
    values["msg_backlog"] = backlog
    return values


def _entries(data: Any, path: str) -> Iterator[tuple[str, Any, str]]:
    """``(key, value, path)`` of a JSON object's entries."""
    obj = JsonObject(data, path)
    for key, value in obj.data.items():
        if not isinstance(key, str):
            raise invalid(path or "<document>", key, "keys must be strings")
        yield key, value, f"{path}[{key}]" if path else key


def topic_samples_from_broker_stats(
    document: Mapping[str, Any], timestamp: int, broker: str
) -> list[TopicSample]:
    """One :class:`TopicSample` per topic of a ``broker-stats/topics`` document, in document order."""
    check_count(timestamp, "timestamp")
    samples: list[TopicSample] = []
    for namespace, bundles, ns_path in _entries(document, ""):
        for bundle_range, domains, bundle_path in _entries(bundles, ns_path):
            for _domain, topics, domain_path in _entries(domains, bundle_path):
                for topic, stats, topic_path in _entries(topics, domain_path):
                    values = _topic_values(JsonObject(stats, topic_path))
                    samples.append(
                        TopicSample(timestamp, broker, topic, f"{namespace}/{bundle_range}", **values)
                    )
    return samples
