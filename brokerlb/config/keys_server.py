"""Broker keys outside the load balancer that a brokerlb broker uses.

Names, types and defaults are Pulsar's ``ServiceConfiguration`` (read at apache/pulsar
commit 0023b9371b309b64aca6f47f03cd05aba78bb280, a 4.x master version); the doc lines are
our own wording.
"""

from __future__ import annotations

from brokerlb.config.kinds import (
    BOOL,
    INT,
    LONG,
    OPTIONAL_INT,
    OPTIONAL_STRING,
    STRING,
    choice,
)
from brokerlb.config.names import metadata_store_url_problem
from brokerlb.config.registry import KeyGroup, key

__all__ = ["ServerKeys", "MetadataStoreKeys", "PolicyKeys", "MetricsKeys", "TOPIC_TYPES"]

#: Pulsar's ``TopicType`` values as broker.conf spells them (``toString()``).
TOPIC_TYPES = ("partitioned", "non-partitioned")


class ServerKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "Server"
    INTRO = "Identity, addresses and ports of the broker, and its request limits."

    clusterName: str | None = key(
        OPTIONAL_STRING, None, "Name of the cluster this broker belongs to.", required=True
    )
    advertisedAddress: str | None = key(
        OPTIONAL_STRING,
        None,
        "Host name or IP the broker advertises; unset = the machine's canonical host name. "
        "The broker id is advertisedAddress:webServicePort.",
    )
    bindAddress: str = key(STRING, "0.0.0.0", "Host name or IP the broker's ports bind to.")
    advertisedListeners: str | None = key(
        OPTIONAL_STRING,
        None,
        "Extra named listeners, `name:pulsar://host:port` comma-separated; lookups with "
        "`listenerName` answer with that listener's URLs.",
    )
    internalListenerName: str | None = key(
        OPTIONAL_STRING, None, "Listener used between brokers; unset = the first advertised listener."
    )
    brokerServicePort: int | None = key(
        OPTIONAL_INT, 6650, "Port of the binary protocol (pulsar://); empty = none.", ge=0, le=65535
    )
    brokerServicePortTls: int | None = key(
        OPTIONAL_INT, None, "Port of the TLS binary protocol (pulsar+ssl://); empty = none.", ge=0, le=65535
    )
    webServicePort: int | None = key(
        OPTIONAL_INT, 8080, "HTTP port (REST admin and lookup); empty = none.", ge=0, le=65535
    )
    webServicePortTls: int | None = key(OPTIONAL_INT, None, "HTTPS port; empty = none.", ge=0, le=65535)
    enablePersistentTopics: bool = key(
        BOOL, True, "The broker serves persistent topics (reported as persistentTopicsEnabled)."
    )
    enableNonPersistentTopics: bool = key(
        BOOL, True, "The broker serves non-persistent topics (reported as nonPersistentTopicsEnabled)."
    )
    brokerShutdownTimeoutMs: int = key(
        LONG,
        60000,
        "Time a graceful shutdown may take before the process stops anyway.",
        dynamic=True,
        ge=0,
        unit="millis",
    )
    maxConcurrentLookupRequest: int = key(
        INT, 50000, "Lookups served at once; more are answered 503 at once.", dynamic=True, ge=1
    )
    maxConcurrentTopicLoadRequest: int = key(
        INT, 5000, "Topic loads in progress at once.", dynamic=True, ge=1
    )
    httpMaxRequestSize: int = key(
        LONG,
        1024 * 1024,
        "Largest HTTP request body in bytes; a larger one is answered 413. -1 = no limit.",
        ge=-1,
        deviation="Pulsar's default is -1 (no limit); brokerlb bounds bodies at 1 MiB by default "
        "(every admin body it accepts is a few KB at most).",
    )
    webSocketServiceEnabled: bool = key(
        BOOL,
        False,
        "Serve Pulsar's WebSocket API (produce/consume at /ws/v2/...) on the web port; "
        "`brokerlb standalone` turns it on, as Pulsar's standalone does.",
    )


class MetadataStoreKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "Metadata store"
    INTRO = (
        "Where brokers keep ownership, load reports and policies. brokerlb supports an "
        "embedded in-process store (`memory:`), the same kept on disk (`sqlite:DIRECTORY`) and "
        "ZooKeeper (`zk:host:port,...[/chroot]`)."
    )

    metadataStoreUrl: str = key(
        STRING,
        "memory:",
        "Metadata store: `memory:[name]` (embedded, in-process), `sqlite:DIRECTORY` (embedded, kept "
        "on disk; one process at a time) or `zk:host:port[,host:port...][/chroot]` (a bare "
        "`host:port,...` is ZooKeeper too).",
        check=metadata_store_url_problem,
        deviation="Pulsar has no default (it must be set); brokerlb defaults to the embedded "
        "store `memory:` and supports the `memory:`, `sqlite:` (Pulsar's standalone: RocksDB) and `zk:` schemes.",
    )
    metadataStoreSessionTimeoutMillis: int = key(
        LONG,
        30000,
        "Session timeout; a broker whose session expires loses its ephemeral nodes.",
        gt=0,
        unit="millis",
    )
    metadataStoreOperationTimeoutSeconds: int = key(
        INT, 30, "Timeout of one metadata-store operation.", gt=0, unit="seconds"
    )


class PolicyKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "Namespace and topic defaults"
    INTRO = "Defaults applied when namespaces and topics are created."

    defaultNumberOfNamespaceBundles: int = key(
        INT, 4, "Bundles of a namespace created without a bundle count.", dynamic=True, ge=1
    )
    allowAutoTopicCreation: bool = key(
        BOOL, True, "Create a topic on first use (a lookup of a missing topic then succeeds).", dynamic=True
    )
    allowAutoTopicCreationType: str = key(
        choice(
            *TOPIC_TYPES, aliases=[("NON_PARTITIONED", "non-partitioned"), ("PARTITIONED", "partitioned")]
        ),
        "non-partitioned",
        "Type of auto-created topics: partitioned or non-partitioned.",
        dynamic=True,
    )
    maxNumPartitionsPerPartitionedTopic: int = key(
        INT,
        4096,
        "Most partitions a partitioned topic may be created with (406 above); 0 = no limit "
        "(beyond a Java int, as in Pulsar).",
        dynamic=True,
        ge=0,
        deviation="Pulsar's default is 0 (no limit); brokerlb's is 4096: creating a partitioned topic "
        "writes one metadata node per partition, and one request for 1,000,000 partitions took a "
        "broker to 4.4 GB with its metadata session lost.",
    )
    defaultNumPartitions: int = key(
        INT, 1, "Partitions of an auto-created partitioned topic.", dynamic=True, ge=1
    )
    forceDeleteTenantAllowed: bool = key(
        BOOL,
        False,
        "Allow `DELETE /admin/v2/tenants/{tenant}?force=true` (deletes its namespaces and topics).",
        dynamic=True,
    )
    forceDeleteNamespaceAllowed: bool = key(
        BOOL,
        False,
        "Allow `DELETE /admin/v2/namespaces/{tenant}/{ns}?force=true` (deletes its topics).",
        dynamic=True,
    )


class MetricsKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "Statistics and metrics"
    INTRO = "How often statistics are computed and what is exported."

    statsUpdateFrequencyInSecs: int = key(
        INT, 60, "How often topic and bundle statistics are recomputed.", ge=1, unit="seconds"
    )
    exposeBundlesMetricsInPrometheus: bool = key(
        BOOL, False, "Export per-bundle load metrics (pulsar_bundle_*) at /metrics.", dynamic=True
    )
    exposeTopicLevelMetricsInPrometheus: bool = key(
        BOOL,
        True,
        "Export topic metrics (pulsar_rate_in, ...) per topic at /metrics; false = summed per namespace.",
    )
