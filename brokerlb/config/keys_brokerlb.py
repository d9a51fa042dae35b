"""brokerlb's own keys: options and deviations Pulsar does not have.

Every key here starts with ``brokerlb`` so it can never clash with a Pulsar key, and is
listed as a brokerlb option in docs/configuration.md. To add one, add one line to
:class:`BrokerlbKeys`::

    brokerlbSomething: bool = key(BOOL, False, "What it does and how it differs from Pulsar.")

then regenerate the docs (``brokerlb config keys --markdown > docs/configuration.md``).
"""

from __future__ import annotations

from brokerlb.config.kinds import BOOL, DOUBLE, INT, OPTIONAL_STRING, STRING, choice
from brokerlb.config.registry import KeyGroup, key

__all__ = ["BrokerlbKeys"]


class BrokerlbKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "brokerlb options"
    EXTENSION = True
    INTRO = "brokerlb's own options (not in Pulsar); every name starts with `brokerlb`."

    brokerlbStorageUrl: str = key(
        STRING,
        "memory:",
        "The storage tier of persistent topics: memory:[name] (this process only, NOT durable: "
        "tests and the simulator; plain memory: is shared by the brokers of the process that use the "
        "same metadataStoreUrl), sqlite:DIRECTORY (the embedded default of brokerlb standalone; "
        "brokers of one machine may share it), postgresql://user@host:port/database (many machines; "
        "durability across machines by PostgreSQL's synchronous replication). Replaces Pulsar's "
        "BookKeeper client.",
        deviation="Pulsar stores ledgers in BookKeeper and the ledger list and cursors in the "
        "metadata store; brokerlb keeps all of them in one engine so a fence is checked in the same "
        "transaction as each append.",
    )
    brokerlbLoadHistoryDir: str | None = key(
        OPTIONAL_STRING,
        None,
        "Directory (one every broker of the cluster can write) where the load history is written for "
        "the Spark pipeline and the simulator (docs/load-history.md): the leader's broker samples, "
        "each broker's topic samples every statsUpdateFrequencyInSecs, every bundle layout written; "
        "unset = no history is written.",
    )
    brokerlbLoadHistoryPublishIntervalSeconds: float = key(
        DOUBLE,
        60.0,
        "With brokerlbLoadHistoryDir: each broker publishes its open history files (renames them from "
        "their hidden in-progress names, so the pipeline's ingest sees them) at least this often; also "
        "on demand, POST /admin/v2/brokers/load-history/publish.",
        min_seconds=0.1,
        unit="seconds",
    )
    brokerlbLoadHistoryDepartureHoldSeconds: float = key(
        DOUBLE,
        60.0,
        "With brokerlbLoadHistoryDir: after a broker leaves, load records (broker and topic samples) "
        "are held back this long and written only if the writing broker is still running then; a "
        "broker that stops first drops them, so a cluster that stops does not record its brokers "
        "leaving with their load (docs/load-history.md). 0 = write at once.",
        ge=0,
        unit="seconds",
    )
    brokerlbOwnershipHistoryFile: str | None = key(
        OPTIONAL_STRING,
        None,
        "Testing aid for fault campaigns: a file where the broker appends one JSON line per change of "
        "what it owns, serves and leads (acquire, serve-start, serve-stop, release, lost, lead-start, "
        "leader-action ...; times on the machine's monotonic clock); unset = nothing is recorded.",
    )
    brokerlbClockOffsetFile: str | None = key(
        OPTIONAL_STRING,
        None,
        "Testing aid for fault campaigns: the broker's wall clock is the system's plus the number of "
        "milliseconds in this file, read at start and again on SIGUSR1 (a clock that jumps); monotonic "
        "time, which sessions and leases run on, is not moved. Unset = the system clock.",
    )
    brokerlbThresholdShedderSingleHistoryUpdate: bool = key(
        BOOL,
        False,
        "ThresholdShedder: when lower-boundary shedding runs, Pulsar recomputes the average and so "
        "advances every broker's usage history a second time in the same cycle; true advances it "
        "once per cycle.",
        dynamic=True,
    )
    brokerlbTransferShedderCountSwapGain: bool = key(
        BOOL,
        False,
        "TransferShedder: Pulsar adds the throughput a swap moves back to the max broker to the "
        "'gained' traffic only when loadBalancerDebugModeEnabled is true (the statement sits inside "
        "the debug-logging block); true always counts it.",
        dynamic=True,
    )
    brokerlbTransferShedderCheckSwapCandidates: bool = key(
        BOOL,
        False,
        "TransferShedder: Pulsar swaps bundles of the least loaded broker back to the most loaded one "
        "without checking that the least loaded broker owns them or that they were not just unloaded "
        "(a bundle transferred there may bounce straight back); true skips such swap candidates.",
        dynamic=True,
    )
    brokerlbModularTransferEnabled: bool = key(
        BOOL,
        True,
        "Modular load manager: an unload whose destination is known (a shedder's choice, or an "
        "admin unload with destinationBroker) is a transfer -- the owner hands the bundle straight "
        "to the destination and tells its clients where it went, as the extensible manager does with "
        "loadBalancerTransferEnabled, so the bundle is never without an owner. false restores Pulsar's "
        "modular behaviour: the bundle is unloaded and the destination is kept as a one-shot affinity "
        "for the next lookup.",
        dynamic=True,
    )
    brokerlbKeepPreallocationsUntilReported: bool = key(
        BOOL,
        True,
        "Modular placement: a bundle assigned to a broker stays counted there (topics, rates, the "
        "namespace's even spread, anti-affinity) until that broker reports it. Pulsar's refresh drops "
        "every preallocation of a broker as soon as the broker reports any one of them, so the other "
        "bundles of a burst of lookups are counted nowhere and later placements pile onto the same "
        "broker. A preallocation also ends when a later report of another broker lists the bundle "
        "(a lookup raced the placement), and a one-shot affinity left by an unload is preallocated "
        "too, so every lookup until the destination takes the bundle is sent there (Pulsar answers "
        "the affinity once: a second lookup in between got a fresh choice). false restores Pulsar's "
        "rules.",
        dynamic=True,
    )
    brokerlbReportOwnedIdleBundles: bool = key(
        BOOL,
        True,
        "List every owned bundle in the load report (lastStats, bundles), idle or not. Pulsar lists "
        "only bundles with loaded topics, so a newly elected leader cannot see idle bundles; false "
        "restores Pulsar's behaviour.",
    )
    brokerlbHostUsage: str = key(
        choice("measured", "traffic"),
        "measured",
        "Where a broker's cpu/memory/bandwidth usage comes from: `measured` (psutil, cgroup v1/v2 "
        "quotas, NIC speed from /sys, as Pulsar's LinuxBrokerHostUsageImpl) or `traffic` (modelled "
        "from the broker's own message rates and throughput; for several brokers in one process, "
        "where measured numbers are shared and meaningless). Standalone mode uses `traffic`.",
    )
    brokerlbModelCores: float = key(
        DOUBLE,
        4.0,
        "With brokerlbHostUsage=traffic: CPUs of the modelled broker (cpu limit = 100 x this).",
        gt=0,
    )
    brokerlbModelMsgRatePerCore: float = key(
        DOUBLE,
        50000.0,
        "With brokerlbHostUsage=traffic: messages per second (in + out) one CPU handles.",
        gt=0,
    )
    brokerlbMaxJsonDepth: int = key(
        INT,
        64,
        "Deepest nesting of a JSON request body (arrays and objects); a deeper one is answered 400. "
        "Pulsar has no such bound (Jackson's own is 1000 levels since 2.15).",
        ge=1,
    )
    brokerlbMaxNameLength: int = key(
        INT,
        255,
        "Longest tenant, namespace, topic (local part) or other stored name, in characters; a longer "
        "one is answered 412 (400 for names outside the topic hierarchy). 0 = no limit, as in Pulsar.",
        ge=0,
    )
    brokerlbFrameCompletionTimeoutSeconds: float = key(
        DOUBLE,
        30.0,
        "A binary frame that has begun must be complete within this time, or the connection is closed "
        "(a client cannot make the broker hold partial frames; Pulsar has no such bound). A connection "
        "that has not read what the broker sent for keepAliveIntervalSeconds is closed too.",
        gt=0,
        unit="seconds",
    )
    brokerlbStrictNamespaceBundles: bool = key(
        BOOL,
        True,
        "Namespace creation refuses numBundles <= 0 and bundle boundaries that are not strictly "
        "increasing (400). false = Pulsar's behaviour: numBundles <= 0 means "
        "defaultNumberOfNamespaceBundles and boundaries are sorted and de-duplicated.",
    )
