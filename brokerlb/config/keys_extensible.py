"""Keys of Pulsar's extensible load manager (PIP-192, ``ExtensibleLoadManagerImpl``).

Names, types and defaults are Pulsar 4.x ``ServiceConfiguration`` (read at apache/pulsar
commit 0023b9371b309b64aca6f47f03cd05aba78bb280); doc lines are our own wording. The
split keys of the extensible manager are in :mod:`brokerlb.config.keys_load_balancer`.
"""

from __future__ import annotations

from brokerlb.config.kinds import BOOL, CLASSNAME, DOUBLE, INT, LONG, SECONDS, STRING_SET, choice
from brokerlb.config.registry import KeyGroup, key

__all__ = ["ExtensibleLoadManagerKeys", "TABLE_VIEW_SYNCERS"]

#: Pulsar's ``ServiceUnitTableViewSyncerType`` constants.
TABLE_VIEW_SYNCERS = ("None", "MetadataStoreToSystemTopicSyncer", "SystemTopicToMetadataStoreSyncer")

_SUB_SECOND = (
    "Pulsar reads whole seconds only; brokerlb also accepts fractions so that demos can compress time."
)


class ExtensibleLoadManagerKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "Extensible load manager (PIP-192)"
    INTRO = (
        "Used when loadManagerClassName is ExtensibleLoadManagerImpl: TransferShedder, "
        "the service-unit state channel and its leader monitor."
    )

    loadBalancerDebugModeEnabled: bool = key(
        BOOL, False, "Log every load-balancing state and decision.", dynamic=True
    )
    loadBalancerBrokerLoadTargetStd: float = key(
        DOUBLE,
        0.25,
        "TransferShedder: target standard deviation of broker load (1.0 = 100 %).",
        dynamic=True,
        ge=0,
    )
    loadBalancerSheddingConditionHitCountThreshold: int = key(
        INT,
        3,
        "TransferShedder: shed after the condition held more than this many cycles in a row.",
        dynamic=True,
        ge=0,
    )
    loadBalancerTransferEnabled: bool = key(
        BOOL,
        True,
        "TransferShedder moves bundles to a chosen broker (transfer); false = plain "
        "unload, the next lookup places them.",
        dynamic=True,
    )
    loadBalancerMaxNumberOfBrokerSheddingPerCycle: int = key(
        INT, 3, "TransferShedder: most brokers shed per cycle.", dynamic=True, ge=0
    )
    loadBalanceSheddingDelayInSeconds: float = key(
        SECONDS,
        180,
        "TransferShedder: pause after an unload so that brokers report new load.",
        dynamic=True,
        ge=0,
        deviation=_SUB_SECOND,
    )
    loadBalancerBrokerLoadDataTTLInSeconds: float = key(
        SECONDS,
        1800,
        "TransferShedder ignores brokers whose load data is older than this.",
        dynamic=True,
        gt=0,
        deviation=_SUB_SECOND,
    )
    loadBalancerSheddingBundlesWithPoliciesEnabled: bool = key(
        BOOL,
        False,
        "TransferShedder may unload bundles with isolation or anti-affinity policies.",
        dynamic=True,
    )
    loadBalancerSheddingExcludedNamespaces: frozenset[str] = key(
        STRING_SET,
        frozenset(),
        "Namespaces never shed: a broker leaves their bundles out of its top-K bundles report, "
        "so TransferShedder never sees them (Pulsar 4.1+, PIP-380; tenant/namespace names).",
        dynamic=True,
    )
    loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds: float = key(
        SECONDS,
        3600,
        "Delay before the channel tombstones bundles in semi-terminal states "
        "(e.g. a split parent in Deleted); must cover the in-flight waiting time.",
        ge=0,
        deviation=_SUB_SECOND,
    )
    loadBalancerInFlightServiceUnitStateWaitingTimeInMillis: int = key(
        LONG,
        30000,
        "Lookups wait this long for an in-flight bundle; the leader monitor fixes states stuck longer.",
        gt=0,
        unit="millis",
    )
    loadBalancerServiceUnitStateMonitorIntervalInSeconds: float = key(
        SECONDS,
        60,
        "How often the leader checks the channel for orphan owners and stuck states.",
        min_seconds=0.5,
        deviation=_SUB_SECOND,
    )
    loadBalancerMultiPhaseBundleUnload: bool = key(
        BOOL, True, "During a transfer, tell clients the destination so they reconnect without a lookup."
    )
    loadManagerServiceUnitStateTableViewClassName: str = key(
        CLASSNAME,
        "org.apache.pulsar.broker.loadbalance.extensions.channel.ServiceUnitStateTableViewImpl",
        "Store of the service-unit states (system-topic or metadata-store table view).",
    )
    loadBalancerServiceUnitTableViewSyncer: str = key(
        choice(*TABLE_VIEW_SYNCERS),
        "None",
        "Copy service-unit states between the two table views during a migration.",
        dynamic=True,
    )
    loadBalancerServiceUnitStateMaxConcurrentOverrides: int = key(
        INT, 64, "Most orphan-ownership overrides the leader runs at once.", dynamic=True, ge=1
    )
