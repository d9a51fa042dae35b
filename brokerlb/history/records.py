"""The three load-history record types, with their JSON Lines form.

Every record carries ``timestamp``: milliseconds since the epoch (UTC), an integer ``>= 0``.
One record is one line of a history file (``json.dumps`` of :meth:`to_json`).

* :class:`BrokerSample` -- one load report as the leader read it (``broker-samples/``)::

      {"timestamp": 1700000000000, "brokerId": "broker-1:8080", "localData": {<LocalBrokerData>}}

  ``localData`` is exactly :meth:`brokerlb.model.LocalBrokerData.to_json` (Pulsar's JSON).
  ``"localData": null`` records that the broker's registration vanished (the leader drops the
  broker from its load data; :meth:`BrokerSample.removed`).

* :class:`TopicSample` -- one topic at one time, the shape of ``broker-stats/topics``
  flattened (``topic-samples/``)::

      {"timestamp": 1700000000000, "broker": "broker-1:8080",
       "topic": "persistent://public/default/t1", "bundle": "public/default/0x00000000_0x40000000",
       "msgRateIn": 10.0, "msgRateOut": 20.0, "msgThroughputIn": 1000.0, "msgThroughputOut": 2000.0,
       "producerCount": 1, "consumerCount": 2, "subscriptionCount": 1, "averageMsgSize": 100.0,
       "storageSize": 0, "backlogSize": 0, "msgBacklog": 0,
       "msgInCount": 0, "bytesInCount": 0, "msgOutCount": 0, "bytesOutCount": 0}

  ``topic`` is the full name (the string Pulsar hashes); ``bundle`` (optional) is the bundle
  the broker had the topic in. All rows of one ``broker-stats/topics`` dump share its timestamp.

* :class:`BundleBoundaries` -- a namespace's bundles from this time on (``bundle-boundaries/``)::

      {"timestamp": 1700000000000, "namespace": "public/default",
       "boundaries": ["0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"],
       "numBundles": 4}

  Pulsar's ``BundlesData`` plus the namespace and the time. Write one at namespace creation
  and after every split or merge.

Construction validates (a NaN rate, a negative count, a topic that is not a full name...
raises :class:`~brokerlb.errors.InvalidLoadDataError` or the naming/ring error), so a
history file written through these types never holds a row the pipeline must reject.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from brokerlb.errors import InvalidLoadDataError, InvalidTopicNameError
from brokerlb.model import LocalBrokerData
from brokerlb.model._validate import JsonObject, check_count, check_non_negative, invalid
from brokerlb.naming import TopicName
from brokerlb.ring import NamespaceBundle, NamespaceBundles, format_boundary

__all__ = [
    "BROKER_SAMPLES",
    "TOPIC_SAMPLES",
    "BUNDLE_BOUNDARIES",
    "RECORD_KINDS",
    "KIND_PRODUCERS",
    "BrokerSample",
    "TopicSample",
    "BundleBoundaries",
    "HistoryRecord",
    "record_from_json",
    "MAX_TIMESTAMP_MS",
]

#: Directory (and file prefix) of each record kind under a history root.
BROKER_SAMPLES = "broker-samples"
TOPIC_SAMPLES = "topic-samples"
BUNDLE_BOUNDARIES = "bundle-boundaries"
RECORD_KINDS = (BROKER_SAMPLES, TOPIC_SAMPLES, BUNDLE_BOUNDARIES)

#: Who writes each kind (for errors and reports that find a kind missing).
KIND_PRODUCERS = {
    BROKER_SAMPLES: "the leader broker writes one per load report it reads when brokerlbLoadHistoryDir is set "
    "(the simulator too, run_scenario(..., history_dir=...))",
    TOPIC_SAMPLES: "every broker writes its topics every statsUpdateFrequencyInSecs when brokerlbLoadHistoryDir "
    "is set (the simulator too, run_scenario(..., history_dir=...))",
    BUNDLE_BOUNDARIES: "the brokers write a namespace's layout when it is created, split or merged, and a new "
    "leader the layouts of the namespaces in the reports, when brokerlbLoadHistoryDir is set (the simulator "
    "too)",
}

#: Timestamps are below 2**42 ms (year 2109); the pipeline packs them into 64-bit keys.
MAX_TIMESTAMP_MS = (1 << 42) - 1


def _timestamp(value: Any, field_name: str = "timestamp") -> int:
    ms = check_count(value, field_name)
    if ms > MAX_TIMESTAMP_MS:
        raise invalid(field_name, value, f"milliseconds since the epoch must be below {MAX_TIMESTAMP_MS + 1}")
    return ms


def _name(value: Any, field_name: str) -> str:
    if not isinstance(value, str) or not value:
        raise invalid(field_name, value, "expected a non-empty string")
    return value


@dataclass(frozen=True, slots=True)
class BrokerSample:
    """One load report of one broker, as the leader read it (or its removal: ``local_data=None``)."""

    kind: ClassVar[str] = BROKER_SAMPLES

    timestamp: int
    broker_id: str
    local_data: LocalBrokerData | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "timestamp", _timestamp(self.timestamp))
        _name(self.broker_id, "brokerId")
        if self.local_data is not None and not isinstance(self.local_data, LocalBrokerData):
            raise invalid("localData", self.local_data, "expected a LocalBrokerData or None")

    @classmethod
    def removed(cls, timestamp: int, broker_id: str) -> BrokerSample:
        """The broker's registration vanished at ``timestamp`` (the leader forgets its report)."""
        return cls(timestamp, broker_id, None)

    @property
    def is_removal(self) -> bool:
        return self.local_data is None

    def to_json(self) -> dict[str, Any]:
        return {
            "timestamp": self.timestamp,
            "brokerId": self.broker_id,
            "localData": None if self.local_data is None else self.local_data.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BrokerSample:
        obj = JsonObject(data)
        if "localData" not in obj.data:
            raise invalid("localData", None, "missing (use null for a removed broker)")
        local = obj.obj("localData")
        return cls(
            _timestamp(obj.raw("timestamp")),
            _name(obj.raw("brokerId"), "brokerId"),
            None if local is None else LocalBrokerData.from_json(local.data, "localData"),
        )


# (python attribute, JSON key, is a count)
_TOPIC_VALUES: tuple[tuple[str, str, bool], ...] = (
    ("msg_rate_in", "msgRateIn", False),
    ("msg_rate_out", "msgRateOut", False),
    ("msg_throughput_in", "msgThroughputIn", False),
    ("msg_throughput_out", "msgThroughputOut", False),
    ("producer_count", "producerCount", True),
    ("consumer_count", "consumerCount", True),
    ("subscription_count", "subscriptionCount", True),
    ("average_msg_size", "averageMsgSize", False),
    ("storage_size", "storageSize", True),
    ("backlog_size", "backlogSize", True),
    ("msg_backlog", "msgBacklog", True),
    ("msg_in_count", "msgInCount", True),
    ("bytes_in_count", "bytesInCount", True),
    ("msg_out_count", "msgOutCount", True),
    ("bytes_out_count", "bytesOutCount", True),
)
#: JSON keys of a topic sample's values, in order (all default to 0).
TOPIC_VALUE_KEYS = tuple(key for _, key, _ in _TOPIC_VALUES)


def _full_topic(topic: Any) -> TopicName:
    if not isinstance(topic, str):
        raise invalid("topic", topic, "expected a full topic name")
    try:
        parsed = TopicName.parse(topic)
    except InvalidTopicNameError as exc:
        raise invalid("topic", topic, exc.why) from exc
    if str(parsed) != topic:
        raise invalid("topic", topic, f"not a full topic name (the full name is {parsed})")
    return parsed


#: A broker's topic dump names few bundles many times: each is parsed once.
_parse_bundle = functools.lru_cache(maxsize=65_536)(NamespaceBundle.parse)


def _bundle_of(topic: TopicName, bundle: Any) -> str | None:
    if bundle is None:
        return None
    if not isinstance(bundle, str):
        raise invalid("bundle", bundle, "expected <tenant>/<namespace>/0x…_0x…")
    try:
        parsed = _parse_bundle(bundle)
    except Exception as exc:  # naming or range errors, all InvalidInputError
        raise invalid("bundle", bundle, str(exc)) from exc
    if parsed.namespace != topic.namespace:
        raise invalid("bundle", bundle, f"not a bundle of the topic's namespace {topic.namespace}")
    if not parsed.includes_hash(topic.ring_hash):
        raise invalid("bundle", bundle, f"the topic {topic} does not hash into this range")
    return str(parsed)


@dataclass(frozen=True, slots=True)
class TopicSample:
    """One topic's stats at one time (``broker-stats/topics`` flattened to a row)."""

    kind: ClassVar[str] = TOPIC_SAMPLES

    timestamp: int
    broker: str
    topic: str
    bundle: str | None = None
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    producer_count: int = 0
    consumer_count: int = 0
    subscription_count: int = 0
    average_msg_size: float = 0.0
    storage_size: int = 0
    backlog_size: int = 0
    msg_backlog: int = 0
    msg_in_count: int = 0
    bytes_in_count: int = 0
    msg_out_count: int = 0
    bytes_out_count: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "timestamp", _timestamp(self.timestamp))
        _name(self.broker, "broker")
        parsed = _full_topic(self.topic)
        object.__setattr__(self, "bundle", _bundle_of(parsed, self.bundle))
        for attr, key, is_count in _TOPIC_VALUES:
            value = getattr(self, attr)
            object.__setattr__(
                self, attr, check_count(value, key) if is_count else check_non_negative(value, key)
            )

    @property
    def namespace(self) -> str:
        return str(TopicName.parse(self.topic).namespace)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"timestamp": self.timestamp, "broker": self.broker, "topic": self.topic}
        if self.bundle is not None:
            out["bundle"] = self.bundle
        out.update({key: getattr(self, attr) for attr, key, _ in _TOPIC_VALUES})
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TopicSample:
        """Read a row; missing values are 0, unknown keys are ignored."""
        obj = JsonObject(data)
        values: dict[str, Any] = {
            attr: obj.count(key) if is_count else obj.rate(key) for attr, key, is_count in _TOPIC_VALUES
        }
        return cls(
            _timestamp(obj.raw("timestamp")),
            _name(obj.raw("broker"), "broker"),
            obj.raw("topic"),
            obj.raw("bundle"),
            **values,
        )


@dataclass(frozen=True, slots=True)
class BundleBoundaries:
    """A namespace's bundle boundaries, valid from ``timestamp`` until the next record of the namespace."""

    kind: ClassVar[str] = BUNDLE_BOUNDARIES

    timestamp: int
    namespace: str
    boundaries: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "timestamp", _timestamp(self.timestamp))
        bundles = NamespaceBundles.from_boundaries(self.namespace, self.boundaries)
        object.__setattr__(self, "namespace", str(bundles.namespace))
        object.__setattr__(self, "boundaries", tuple(bundles.boundaries))

    @classmethod
    def of(cls, timestamp: int, bundles: NamespaceBundles) -> BundleBoundaries:
        """The record for ``bundles`` (e.g. after a split) at ``timestamp``."""
        return cls(timestamp, str(bundles.namespace), tuple(bundles.boundaries))

    def bundles(self) -> NamespaceBundles:
        return NamespaceBundles(self.namespace, self.boundaries)

    @property
    def num_bundles(self) -> int:
        return len(self.boundaries) - 1

    def to_json(self) -> dict[str, Any]:
        return {
            "timestamp": self.timestamp,
            "namespace": self.namespace,
            "boundaries": [format_boundary(b) for b in self.boundaries],
            "numBundles": self.num_bundles,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BundleBoundaries:
        obj = JsonObject(data)
        boundaries = obj.raw("boundaries")
        if not isinstance(boundaries, Sequence) or isinstance(boundaries, str):
            raise invalid("boundaries", boundaries, "expected a list of 0x… strings")
        namespace = obj.raw("namespace")
        if not isinstance(namespace, str):
            raise invalid("namespace", namespace, "expected a namespace name")
        record = cls(_timestamp(obj.raw("timestamp")), namespace, tuple(boundaries))
        num = obj.raw("numBundles")
        if num is not None and num != record.num_bundles:
            raise invalid(
                "numBundles", num, f"does not match the {record.num_bundles} bundles of the boundaries"
            )
        return record


HistoryRecord = BrokerSample | TopicSample | BundleBoundaries

_BY_KIND: dict[str, Any] = {
    BROKER_SAMPLES: BrokerSample,
    TOPIC_SAMPLES: TopicSample,
    BUNDLE_BOUNDARIES: BundleBoundaries,
}


def record_from_json(kind: str, data: Mapping[str, Any]) -> HistoryRecord:
    """Read one line's JSON object as a record of ``kind`` (one of :data:`RECORD_KINDS`)."""
    try:
        reader = _BY_KIND[kind]
    except KeyError:
        raise InvalidLoadDataError(
            f"Unknown history record kind {kind!r}; known: {', '.join(RECORD_KINDS)}"
        ) from None
    return reader.from_json(data)
