"""Explicit Spark schemas: the raw JSON Lines records and the Parquet tables the jobs write.

Raw schemas read every number as ``double`` and check integers afterwards, so an integral
float (``2.0``) is accepted for a count and ``2.5`` is rejected with a reason -- the same rule
as :mod:`brokerlb.model`. Each raw schema ends with ``_corrupt_record``: Spark puts the line
there when it is not JSON or a value has the wrong JSON type (a string for a number, ...).
Unknown keys are ignored, as Pulsar's Jackson set-up does.
"""

from __future__ import annotations

from pyspark.sql import types as T

__all__ = [
    "CORRUPT",
    "RESOURCE_FIELDS",
    "TOTAL_FIELDS",
    "COUNT_FIELDS",
    "STATS_RATE_FIELDS",
    "STATS_COUNT_FIELDS",
    "TOPIC_RATE_FIELDS",
    "TOPIC_COUNT_FIELDS",
    "BROKER_SAMPLE_RAW",
    "TOPIC_SAMPLE_RAW",
    "BUNDLE_BOUNDARIES_RAW",
    "REJECT_TABLE",
]

CORRUPT = "_corrupt_record"

D = T.DoubleType()
S = T.StringType()

RESOURCE_FIELDS = ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut")
TOTAL_FIELDS = ("msgThroughputIn", "msgThroughputOut", "msgRateIn", "msgRateOut")
COUNT_FIELDS = ("numTopics", "numBundles", "numConsumers", "numProducers")
STATS_RATE_FIELDS = ("msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut")
STATS_COUNT_FIELDS = ("consumerCount", "producerCount", "topics", "cacheSize")
TOPIC_RATE_FIELDS = ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut", "averageMsgSize")
TOPIC_COUNT_FIELDS = (
    "producerCount",
    "consumerCount",
    "subscriptionCount",
    "storageSize",
    "backlogSize",
    "msgBacklog",
    "msgInCount",
    "bytesInCount",
    "msgOutCount",
    "bytesOutCount",
)


def _fields(names: tuple[str, ...], kind: T.DataType) -> list[T.StructField]:
    return [T.StructField(name, kind) for name in names]


RESOURCE_USAGE = T.StructType([T.StructField("usage", D), T.StructField("limit", D)])
NAMESPACE_BUNDLE_STATS = T.StructType(_fields(STATS_RATE_FIELDS + STATS_COUNT_FIELDS, D))

LOCAL_BROKER_DATA = T.StructType(
    _fields(("webServiceUrl", "webServiceUrlTls", "pulsarServiceUrl", "pulsarServiceUrlTls"), S)
    + [
        T.StructField("persistentTopicsEnabled", T.BooleanType()),
        T.StructField("nonPersistentTopicsEnabled", T.BooleanType()),
    ]
    + [T.StructField(name, RESOURCE_USAGE) for name in RESOURCE_FIELDS]
    + _fields(TOTAL_FIELDS, D)
    + [T.StructField("lastUpdate", D), T.StructField("lastStats", T.MapType(S, NAMESPACE_BUNDLE_STATS))]
    + _fields(COUNT_FIELDS, D)
    + [T.StructField(name, T.ArrayType(S)) for name in ("bundles", "lastBundleGains", "lastBundleLosses")]
    + _fields(("brokerVersionString", "loadManagerClassName"), S)
    + [
        T.StructField("startTimestamp", D),
        T.StructField("loadReportType", S),
        T.StructField("underLoaded", S),
    ]
)

#: ``{"timestamp", "brokerId", "localData": LocalBrokerData | null}``
BROKER_SAMPLE_RAW = T.StructType(
    [
        T.StructField("timestamp", D),
        T.StructField("brokerId", S),
        T.StructField("localData", LOCAL_BROKER_DATA),
        T.StructField(CORRUPT, S),
    ]
)

#: ``{"timestamp", "broker", "topic", "bundle", <broker-stats/topics values>}``
TOPIC_SAMPLE_RAW = T.StructType(
    [
        T.StructField("timestamp", D),
        T.StructField("broker", S),
        T.StructField("topic", S),
        T.StructField("bundle", S),
    ]
    + _fields(TOPIC_RATE_FIELDS + TOPIC_COUNT_FIELDS, D)
    + [T.StructField(CORRUPT, S)]
)

#: ``{"timestamp", "namespace", "boundaries": ["0x…", ...], "numBundles"}``
BUNDLE_BOUNDARIES_RAW = T.StructType(
    [
        T.StructField("timestamp", D),
        T.StructField("namespace", S),
        T.StructField("boundaries", T.ArrayType(S)),
        T.StructField("numBundles", D),
        T.StructField(CORRUPT, S),
    ]
)

#: Rows of the reject table (partitioned by ``kind`` and ``ingestBatch``).
REJECT_TABLE = T.StructType(
    [
        T.StructField("reason", S),
        T.StructField("line", S),
        T.StructField("file", S),
        T.StructField("ingestedAt", T.LongType()),
    ]
)
