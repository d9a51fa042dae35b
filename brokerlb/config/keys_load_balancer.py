"""Load-balancer keys of Pulsar's broker.conf (modular load manager and shared keys).

Names, types and defaults are Pulsar 4.x ``ServiceConfiguration`` (read at apache/pulsar
commit 0023b9371b309b64aca6f47f03cd05aba78bb280); doc lines are our own wording. Pulsar
puts no ``minValue`` on these keys; the bounds below are brokerlb's, chosen so that a
value that makes no sense (a negative percentage, a zero interval that would make a
periodic task spin) is refused with a clear error instead of misbehaving later.

Interval keys named ``...Minutes`` take fractions in brokerlb (``0.05`` = 3 s), so demos
and tests can run load-balancing cycles in seconds; integers read exactly as in Pulsar.
"""

from __future__ import annotations

from brokerlb.config.kinds import (
    BOOL,
    CLASSNAME,
    DOUBLE,
    INT,
    LONG,
    MINUTES,
    OPTIONAL_DOUBLE,
    STRING,
    choice,
    list_of,
)
from brokerlb.config.names import load_manager_class_problem
from brokerlb.config.registry import KeyGroup, key
from brokerlb.ring.split_algorithms import SUPPORTED_SPLIT_ALGORITHMS

__all__ = [
    "LoadBalancerKeys",
    "LoadReportKeys",
    "ResourceUsageKeys",
    "SheddingKeys",
    "PlacementKeys",
    "BundleSplitKeys",
    "PULSAR_LB_PACKAGE",
]

#: package of Pulsar's modular load-manager classes (strategies are named by class)
PULSAR_LB_PACKAGE = "org.apache.pulsar.broker.loadbalance.impl"

_SUB_MINUTE = (
    "Pulsar reads whole minutes only; brokerlb also accepts fractions "
    "(e.g. 0.05 = 3 seconds) so that cycles can run faster than once a minute."
)


class LoadBalancerKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "Load manager"
    INTRO = "Which load manager runs, and keys shared by all of its parts."

    loadBalancerEnabled: bool = key(
        BOOL, True, "Run the load balancer (load reports, shedding, automatic splits)."
    )
    loadManagerClassName: str = key(
        CLASSNAME,
        f"{PULSAR_LB_PACKAGE}.ModularLoadManagerImpl",
        "Load manager: ModularLoadManagerImpl, or "
        "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl (PIP-192). "
        "Class or short name; any other name is refused.",
        dynamic=True,
        check=load_manager_class_problem,
    )
    topicBundleAssignmentStrategy: str = key(
        CLASSNAME,
        "org.apache.pulsar.common.naming.ConsistentHashingTopicBundleAssigner",
        "How a topic maps to a bundle (CRC-32 of the topic name on the bundle ring).",
    )
    namespaceBundleUnloadingTimeoutMs: int = key(
        LONG,
        60000,
        "Time an unload waits for the bundle's topics to close (a timeout is not an error).",
        dynamic=True,
        ge=0,
        unit="millis",
    )
    loadBalancerPlacementStrategy: str = key(
        STRING,
        "leastLoadedServer",
        "Placement of the old SimpleLoadManagerImpl (leastLoadedServer or weightedRandomSelection).",
        deprecated="used only by SimpleLoadManagerImpl; see loadBalancerLoadPlacementStrategy",
    )
    loadBalancerBrokerUnderloadedThresholdPercentage: int = key(
        INT,
        50,
        "Usage under which SimpleLoadManagerImpl calls a broker under-loaded.",
        deprecated="used only by SimpleLoadManagerImpl",
        ge=0,
    )
    loadBalancerBrokerComfortLoadLevelPercentage: int = key(
        INT,
        65,
        "Usage SimpleLoadManagerImpl considers just right.",
        deprecated="used only by SimpleLoadManagerImpl",
        ge=0,
    )


class LoadReportKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "Load reports"
    INTRO = (
        "When a broker rewrites its load report (LocalBrokerData under "
        "/loadbalance/brokers) and how the leader keeps bundle data."
    )

    loadBalancerReportUpdateThresholdPercentage: int = key(
        INT,
        10,
        "Write the report early when usage, message rate, throughput or bundle count "
        "changed by more than this percentage.",
        dynamic=True,
        ge=0,
    )
    loadBalancerReportUpdateMinIntervalMillis: int = key(
        INT,
        5000,
        "How often a broker checks whether to write its report.",
        dynamic=True,
        min_seconds=0.05,
        unit="millis",
    )
    loadBalancerReportUpdateMaxIntervalMinutes: float = key(
        MINUTES,
        15,
        "Write the report at least this often even without a change.",
        dynamic=True,
        ge=0,
        deviation=_SUB_MINUTE,
    )
    loadBalancerHostUsageCheckIntervalMinutes: float = key(
        MINUTES,
        1,
        "How often host usage (CPU, memory, NIC) is sampled.",
        dynamic=True,
        min_seconds=0.05,
        deviation=_SUB_MINUTE,
    )
    loadBalancerResourceQuotaUpdateIntervalMinutes: float = key(
        MINUTES,
        15,
        "How often the leader persists bundle data and time-averaged broker data.",
        min_seconds=0.5,
        deviation=_SUB_MINUTE,
    )
    loadBalancerMaxNumberOfBundlesInBundleLoadReport: int = key(
        INT,
        10,
        "Bundles kept in a broker's report (top-K by load); -1 keeps all (modular only).",
        dynamic=True,
        ge=-1,
    )
    loadBalancerOverrideBrokerNicSpeedGbps: float | None = key(
        OPTIONAL_DOUBLE,
        None,
        "NIC speed in Gbit/s to use instead of the detected one (the limit of bandwidthIn/bandwidthOut).",
        gt=0,
    )


class ResourceUsageKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "Resource usage weights"
    INTRO = (
        "Weights of each resource in the weighted max usage "
        "max(cpu%·w, directMemory%·w, bandwidthIn%·w, bandwidthOut%·w) used by "
        "ThresholdShedder, AvgShedder, LeastResourceUsageWithWeight and LeastLongTermMessageRate."
    )

    loadBalancerCPUResourceWeight: float = key(DOUBLE, 1.0, "Weight of CPU usage.", dynamic=True, ge=0)
    loadBalancerMemoryResourceWeight: float = key(
        DOUBLE,
        0.0,
        "Weight of JVM heap usage.",
        dynamic=True,
        ge=0,
        deprecated="since Pulsar 3.0 memory is no longer a load signal",
    )
    loadBalancerDirectMemoryResourceWeight: float = key(
        DOUBLE, 0.0, "Weight of direct-memory usage (not recommended as a load signal).", dynamic=True, ge=0
    )
    loadBalancerBandwidthInResourceWeight: float = key(
        DOUBLE, 1.0, "Weight of inbound NIC usage.", dynamic=True, ge=0
    )
    loadBalancerBandwidthOutResourceWeight: float = key(
        DOUBLE, 1.0, "Weight of outbound NIC usage.", dynamic=True, ge=0
    )
    loadBalancerHistoryResourcePercentage: float = key(
        DOUBLE,
        0.9,
        "Weight of history in the usage average: avg = avg·h + usage·(1-h).",
        dynamic=True,
        ge=0,
        le=1,
    )


class SheddingKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "Load shedding"
    INTRO = (
        "The leader periodically unloads bundles from busy brokers. Strategies: "
        "ThresholdShedder (default), OverloadShedder, UniformLoadShedder, AvgShedder."
    )

    loadBalancerSheddingEnabled: bool = key(
        BOOL, True, "Unload bundles automatically to spread load.", dynamic=True
    )
    loadBalancerSheddingIntervalMinutes: float = key(
        MINUTES,
        1,
        "How often the leader runs the shedding strategy.",
        dynamic=True,
        min_seconds=0.5,
        deviation=_SUB_MINUTE,
    )
    loadBalancerSheddingGracePeriodMinutes: float = key(
        MINUTES,
        30,
        "A bundle unloaded by shedding is not shed again within this time.",
        dynamic=True,
        ge=0,
        deviation=_SUB_MINUTE,
    )
    loadBalancerLoadSheddingStrategy: str = key(
        CLASSNAME,
        f"{PULSAR_LB_PACKAGE}.ThresholdShedder",
        "Shedding strategy (class or short name); ThresholdShedder since Pulsar 2.10 "
        "(OverloadShedder before).",
        dynamic=True,
    )
    loadBalancerBrokerOverloadedThresholdPercentage: int = key(
        INT,
        85,
        "Usage above which a broker is overloaded (OverloadShedder, placement, TransferShedder).",
        dynamic=True,
        ge=0,
    )
    loadBalancerBrokerThresholdShedderPercentage: int = key(
        INT,
        10,
        "ThresholdShedder sheds a broker whose usage exceeds the average by this many points.",
        dynamic=True,
        ge=0,
    )
    loadBalancerBundleUnloadMinThroughputThreshold: float = key(
        DOUBLE,
        10.0,
        "ThresholdShedder skips a broker when less than this many MB/s would move.",
        dynamic=True,
        ge=0,
    )
    lowerBoundarySheddingEnabled: bool = key(
        BOOL,
        False,
        "ThresholdShedder also sheds from the busiest broker when some broker is below average − threshold.",
    )
    atLeastOneBundleSelected: bool = key(
        BOOL,
        True,
        "ThresholdShedder and OverloadShedder unload at least one bundle of a broker they shed.",
        dynamic=True,
    )
    loadBalancerMsgRateDifferenceShedderThreshold: float = key(
        DOUBLE,
        50.0,
        "UniformLoadShedder: shed when the highest message rate exceeds the lowest "
        "by more than this percentage (0 disables).",
        dynamic=True,
        ge=0,
    )
    loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold: float = key(
        DOUBLE,
        4.0,
        "UniformLoadShedder: shed when the highest throughput is more than this "
        "multiple of the lowest (0 disables).",
        dynamic=True,
        ge=0,
    )
    minUnloadMessage: int = key(
        INT, 1000, "UniformLoadShedder/AvgShedder: least message rate worth moving.", dynamic=True, ge=0
    )
    minUnloadMessageThroughput: int = key(
        INT,
        1024 * 1024,
        "UniformLoadShedder/AvgShedder: least throughput (bytes/s) worth moving.",
        dynamic=True,
        ge=0,
    )
    maxUnloadPercentage: float = key(
        DOUBLE,
        0.2,
        "UniformLoadShedder/AvgShedder: share of the max−min difference to move "
        "(0.5 recommended for AvgShedder).",
        dynamic=True,
        ge=0,
        le=1,
    )
    maxUnloadBundleNumPerShedding: int = key(
        INT, -1, "UniformLoadShedder: most bundles unloaded per cycle; -1 = no limit.", dynamic=True, ge=-1
    )
    loadBalancerAvgShedderLowThreshold: int = key(
        INT,
        15,
        "AvgShedder: score gap (points) between paired brokers that counts a low hit.",
        dynamic=True,
        ge=0,
    )
    loadBalancerAvgShedderHighThreshold: int = key(
        INT, 40, "AvgShedder: score gap (points) that counts a high hit.", dynamic=True, ge=0
    )
    loadBalancerAvgShedderHitCountLowThreshold: int = key(
        INT, 8, "AvgShedder: low hits in a row before a pair is balanced.", dynamic=True, ge=0
    )
    loadBalancerAvgShedderHitCountHighThreshold: int = key(
        INT, 2, "AvgShedder: high hits in a row before a pair is balanced.", dynamic=True, ge=0
    )


class PlacementKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "Placement"
    INTRO = "How the leader picks a broker for an unowned bundle (filters, then a strategy)."

    loadBalancerLoadPlacementStrategy: str = key(
        CLASSNAME,
        f"{PULSAR_LB_PACKAGE}.LeastLongTermMessageRate",
        "Placement strategy (class or short name): LeastLongTermMessageRate, "
        "LeastResourceUsageWithWeight, RoundRobinBrokerSelector, AvgShedder.",
    )
    loadBalancerBrokerMaxTopics: int = key(
        INT, 50000, "Brokers with this many topics are avoided while others have fewer.", dynamic=True, ge=0
    )
    loadBalancerAverageResourceUsageDifferenceThresholdPercentage: int = key(
        INT,
        10,
        "LeastResourceUsageWithWeight: candidates are brokers at least this many points "
        "below the average usage.",
        dynamic=True,
        ge=0,
    )
    loadBalancerDistributeBundlesEvenlyEnabled: bool = key(
        BOOL, True, "Prefer brokers holding the fewest bundles of the bundle's namespace.", dynamic=True
    )
    preferLaterVersions: bool = key(
        BOOL, False, "Place bundles only on brokers running the newest broker version.", dynamic=True
    )
    failureDomainsEnabled: bool = key(
        BOOL, False, "Spread anti-affinity namespaces over failure domains first.", dynamic=True
    )


class BundleSplitKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "Bundle split"
    INTRO = "When hot bundles are split automatically, and with which algorithm."

    loadBalancerAutoBundleSplitEnabled: bool = key(
        BOOL, True, "Split bundles that pass a threshold below.", dynamic=True
    )
    loadBalancerAutoUnloadSplitBundlesEnabled: bool = key(
        BOOL, True, "Unload the children of an automatic split so they can move.", dynamic=True
    )
    loadBalancerNamespaceBundleMaxTopics: int = key(
        INT, 1000, "Split a bundle with more topics than this.", dynamic=True, ge=0
    )
    loadBalancerNamespaceBundleMaxSessions: int = key(
        INT,
        1000,
        "Split a bundle with more producers + consumers than this; <= 0 disables.",
        dynamic=True,
        ge=-1,
    )
    loadBalancerNamespaceBundleMaxMsgRate: int = key(
        INT, 30000, "Split a bundle with a higher message rate (in + out) than this.", dynamic=True, ge=0
    )
    loadBalancerNamespaceBundleMaxBandwidthMbytes: int = key(
        INT, 100, "Split a bundle with more throughput (in + out, MB/s) than this.", dynamic=True, ge=0
    )
    loadBalancerNamespaceMaximumBundles: int = key(
        INT, 128, "A namespace is never split beyond this many bundles.", dynamic=True, ge=1
    )
    supportedNamespaceBundleSplitAlgorithms: tuple[str, ...] = key(
        list_of(SUPPORTED_SPLIT_ALGORITHMS),
        SUPPORTED_SPLIT_ALGORITHMS,
        "Split algorithms an admin may request.",
        dynamic=True,
    )
    defaultNamespaceBundleSplitAlgorithm: str = key(
        choice(*SUPPORTED_SPLIT_ALGORITHMS),
        "range_equally_divide",
        "Algorithm of automatic splits and of admin splits that name none; must be supported "
        "and cannot be specified_positions_divide.",
        dynamic=True,
    )
    flowOrQpsDifferenceThresholdPercentage: int = key(
        INT,
        10,
        "flow_or_qps_equally_divide splits only bundles above the max rate/bandwidth "
        "by more than this percentage.",
        dynamic=True,
        ge=0,
    )
    loadBalancerSplitIntervalMinutes: float = key(
        MINUTES,
        1,
        "Extensible LM: how often each broker checks its bundles for splits.",
        min_seconds=0.5,
        deviation=_SUB_MINUTE,
    )
    loadBalancerMaxNumberOfBundlesToSplitPerCycle: int = key(
        INT, 10, "Extensible LM: most splits per cycle.", dynamic=True, ge=0
    )
    loadBalancerNamespaceBundleSplitConditionHitCountThreshold: int = key(
        INT,
        3,
        "Extensible LM: a bundle splits after passing a threshold more than this many checks in a row.",
        dynamic=True,
        ge=0,
    )
