"""Defaults and dynamic flags equal Pulsar's ServiceConfiguration.

Transcribed by hand from apache/pulsar pulsar-broker-common/.../ServiceConfiguration.java
at commit 0023b9371b309b64aca6f47f03cd05aba78bb280 (4.x), independently of the key
declarations, so a typo in either shows up here.
"""

from __future__ import annotations

import pytest

from brokerlb.config import REGISTRY, ServiceConfig

IMPL = "org.apache.pulsar.broker.loadbalance.impl"
SPLIT_ALGORITHMS = (
    "range_equally_divide",
    "topic_count_equally_divide",
    "specified_positions_divide",
    "flow_or_qps_equally_divide",
)

# key: (Pulsar default, dynamic)
PULSAR_DEFAULTS: dict[str, tuple[object, bool]] = {
    # server
    "clusterName": (None, False),
    "advertisedAddress": (None, False),
    "bindAddress": ("0.0.0.0", False),
    "advertisedListeners": (None, False),
    "internalListenerName": (None, False),
    "brokerServicePort": (6650, False),
    "brokerServicePortTls": (None, False),
    "webServicePort": (8080, False),
    "webServicePortTls": (None, False),
    "enablePersistentTopics": (True, False),
    "enableNonPersistentTopics": (True, False),
    "brokerShutdownTimeoutMs": (60000, True),
    "maxConcurrentLookupRequest": (50000, True),
    "maxConcurrentTopicLoadRequest": (5000, True),
    "webSocketServiceEnabled": (False, False),
    "statsUpdateFrequencyInSecs": (60, False),
    # messaging
    "maxMessageSize": (5242880, False),
    "keepAliveIntervalSeconds": (30, False),
    "brokerMaxConnections": (0, False),
    "brokerMaxConnectionsPerIp": (0, False),
    "pulsarChannelWriteBufferHighWaterMark": (65536, False),
    "pulsarChannelWriteBufferLowWaterMark": (32768, False),
    "defaultRetentionTimeInMinutes": (0, False),
    "defaultRetentionSizeInMB": (0, False),
    "backlogQuotaDefaultLimitBytes": (-1, False),
    "backlogQuotaDefaultRetentionPolicy": ("producer_request_hold", False),
    # storage (managed ledgers)
    "managedLedgerMaxEntriesPerLedger": (50000, False),
    "managedLedgerMaxSizePerLedgerMbytes": (2048, False),
    "managedLedgerMinLedgerRolloverTimeMinutes": (10, False),
    "managedLedgerMaxLedgerRolloverTimeMinutes": (240, False),
    "managedLedgerCursorPositionFlushSeconds": (60, False),
    "managedLedgerDefaultMarkDeleteRateLimit": (1.0, False),
    "managedLedgerMaxUnackedRangesToPersist": (10000, False),
    "exposeBundlesMetricsInPrometheus": (False, True),
    "exposeTopicLevelMetricsInPrometheus": (True, False),
    "metadataStoreSessionTimeoutMillis": (30000, False),
    "metadataStoreOperationTimeoutSeconds": (30, False),
    # authentication, authorization, TLS
    "authenticationEnabled": (False, False),
    "authenticationRefreshCheckSeconds": (60, False),
    "authenticationProviders": (frozenset(), False),
    "authorizationEnabled": (False, False),
    "authorizationProvider": ("org.apache.pulsar.broker.authorization.PulsarAuthorizationProvider", False),
    "superUserRoles": (frozenset(), False),
    "anonymousUserRole": (None, False),
    "authorizationAllowWildcardsMatching": (False, False),
    "authenticateOriginalAuthData": (False, False),
    "proxyRoles": (frozenset(), False),
    "tokenSecretKey": (None, False),  # AuthenticationProviderToken's properties
    "tokenPublicKey": (None, False),
    "tokenPublicAlg": (None, False),
    "tokenAuthClaim": (None, False),
    "tokenAudienceClaim": (None, False),
    "tokenAudience": (None, False),
    "tokenSettingPrefix": (None, False),
    "brokerClientAuthenticationPlugin": ("org.apache.pulsar.client.impl.auth.AuthenticationDisabled", False),
    "brokerClientAuthenticationParameters": ("", False),
    "authenticateMetricsEndpoint": (False, False),
    "tlsCertificateFilePath": (None, False),
    "tlsKeyFilePath": (None, False),
    "tlsTrustCertsFilePath": (None, False),
    "tlsRequireTrustedClientCertOnConnect": (False, False),
    # policies
    "defaultNumberOfNamespaceBundles": (4, True),
    "allowAutoTopicCreation": (True, True),
    "allowAutoTopicCreationType": ("non-partitioned", True),
    "defaultNumPartitions": (1, True),
    "forceDeleteTenantAllowed": (False, True),
    "forceDeleteNamespaceAllowed": (False, True),
    # load manager
    "loadBalancerEnabled": (True, False),
    "loadManagerClassName": (f"{IMPL}.ModularLoadManagerImpl", True),
    "topicBundleAssignmentStrategy": (
        "org.apache.pulsar.common.naming.ConsistentHashingTopicBundleAssigner",
        False,
    ),
    "namespaceBundleUnloadingTimeoutMs": (60000, True),
    "loadBalancerPlacementStrategy": ("leastLoadedServer", False),
    "loadBalancerBrokerUnderloadedThresholdPercentage": (50, False),
    "loadBalancerBrokerComfortLoadLevelPercentage": (65, False),
    # load report
    "loadBalancerReportUpdateThresholdPercentage": (10, True),
    "loadBalancerReportUpdateMinIntervalMillis": (5000, True),
    "loadBalancerReportUpdateMaxIntervalMinutes": (15, True),
    "loadBalancerHostUsageCheckIntervalMinutes": (1, True),
    "loadBalancerResourceQuotaUpdateIntervalMinutes": (15, False),
    "loadBalancerMaxNumberOfBundlesInBundleLoadReport": (10, True),
    "loadBalancerOverrideBrokerNicSpeedGbps": (None, False),
    # weights
    "loadBalancerCPUResourceWeight": (1.0, True),
    "loadBalancerMemoryResourceWeight": (0.0, True),
    "loadBalancerDirectMemoryResourceWeight": (0.0, True),
    "loadBalancerBandwidthInResourceWeight": (1.0, True),
    "loadBalancerBandwidthOutResourceWeight": (1.0, True),
    "loadBalancerHistoryResourcePercentage": (0.9, True),
    # shedding
    "loadBalancerSheddingEnabled": (True, True),
    "loadBalancerSheddingIntervalMinutes": (1, True),
    "loadBalancerSheddingGracePeriodMinutes": (30, True),
    "loadBalancerLoadSheddingStrategy": (f"{IMPL}.ThresholdShedder", True),
    "loadBalancerBrokerOverloadedThresholdPercentage": (85, True),
    "loadBalancerBrokerThresholdShedderPercentage": (10, True),
    "loadBalancerBundleUnloadMinThroughputThreshold": (10.0, True),
    "lowerBoundarySheddingEnabled": (False, False),
    "atLeastOneBundleSelected": (True, True),
    "loadBalancerMsgRateDifferenceShedderThreshold": (50.0, True),
    "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold": (4.0, True),
    "minUnloadMessage": (1000, True),
    "minUnloadMessageThroughput": (1048576, True),
    "maxUnloadPercentage": (0.2, True),
    "maxUnloadBundleNumPerShedding": (-1, True),
    "loadBalancerAvgShedderLowThreshold": (15, True),
    "loadBalancerAvgShedderHighThreshold": (40, True),
    "loadBalancerAvgShedderHitCountLowThreshold": (8, True),
    "loadBalancerAvgShedderHitCountHighThreshold": (2, True),
    # placement
    "loadBalancerLoadPlacementStrategy": (f"{IMPL}.LeastLongTermMessageRate", False),
    "loadBalancerBrokerMaxTopics": (50000, True),
    "loadBalancerAverageResourceUsageDifferenceThresholdPercentage": (10, True),
    "loadBalancerDistributeBundlesEvenlyEnabled": (True, True),
    "preferLaterVersions": (False, True),
    "failureDomainsEnabled": (False, True),
    # split
    "loadBalancerAutoBundleSplitEnabled": (True, True),
    "loadBalancerAutoUnloadSplitBundlesEnabled": (True, True),
    "loadBalancerNamespaceBundleMaxTopics": (1000, True),
    "loadBalancerNamespaceBundleMaxSessions": (1000, True),
    "loadBalancerNamespaceBundleMaxMsgRate": (30000, True),
    "loadBalancerNamespaceBundleMaxBandwidthMbytes": (100, True),
    "loadBalancerNamespaceMaximumBundles": (128, True),
    "supportedNamespaceBundleSplitAlgorithms": (SPLIT_ALGORITHMS, True),
    "defaultNamespaceBundleSplitAlgorithm": ("range_equally_divide", True),
    "flowOrQpsDifferenceThresholdPercentage": (10, True),
    "loadBalancerSplitIntervalMinutes": (1, False),
    "loadBalancerMaxNumberOfBundlesToSplitPerCycle": (10, True),
    "loadBalancerNamespaceBundleSplitConditionHitCountThreshold": (3, True),
    # extensible load manager
    "loadBalancerDebugModeEnabled": (False, True),
    "loadBalancerBrokerLoadTargetStd": (0.25, True),
    "loadBalancerSheddingConditionHitCountThreshold": (3, True),
    "loadBalancerTransferEnabled": (True, True),
    "loadBalancerMaxNumberOfBrokerSheddingPerCycle": (3, True),
    "loadBalanceSheddingDelayInSeconds": (180, True),
    "loadBalancerBrokerLoadDataTTLInSeconds": (1800, True),
    "loadBalancerSheddingBundlesWithPoliciesEnabled": (False, True),
    "loadBalancerSheddingExcludedNamespaces": (frozenset(), True),  # Pulsar 4.1+ (PIP-380): new TreeSet<>()
    "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds": (3600, False),
    "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis": (30000, False),
    "loadBalancerServiceUnitStateMonitorIntervalInSeconds": (60, False),
    "loadBalancerMultiPhaseBundleUnload": (True, False),
    "loadManagerServiceUnitStateTableViewClassName": (
        "org.apache.pulsar.broker.loadbalance.extensions.channel.ServiceUnitStateTableViewImpl",
        False,
    ),
    "loadBalancerServiceUnitTableViewSyncer": ("None", True),
    "loadBalancerServiceUnitStateMaxConcurrentOverrides": (64, True),
}

# Where brokerlb's default deliberately differs from Pulsar's (documented as a deviation).
BROKERLB_DEFAULTS: dict[str, object] = {
    "brokerlbStorageUrl": "memory:",
    "managedLedgerCacheSizeMB": 256,  # Pulsar: a fifth of the JVM's direct memory (a deviation)
    "managedLedgerCacheEvictionWatermark": 0.9,  # dynamic in Pulsar, read at start here (a deviation)
    "metadataStoreUrl": "memory:",  # Pulsar: unset (must be configured)
    "httpMaxRequestSize": 1048576,  # Pulsar: -1 (no limit)
    "pulsarChannelPauseReceivingRequestsIfUnwritable": True,  # Pulsar: false
    "maxNumPartitionsPerPartitionedTopic": 4096,  # Pulsar: 0 (no limit)
    "brokerlbFrameCompletionTimeoutSeconds": 30.0,
    "brokerlbMaxJsonDepth": 64,  # brokerlb's own keys (input bounds)
    "brokerlbMaxNameLength": 255,
    "brokerlbStrictNamespaceBundles": True,
    "brokerlbLoadHistoryDir": None,  # brokerlb's own keys (load history)
    "brokerlbLoadHistoryPublishIntervalSeconds": 60.0,
    "brokerlbLoadHistoryDepartureHoldSeconds": 60.0,
    "brokerlbOwnershipHistoryFile": None,  # testing aids of the fault campaign
    "brokerlbClockOffsetFile": None,
    "brokerlbThresholdShedderSingleHistoryUpdate": False,  # brokerlb's own key (Pulsar behaviour by default)
    "brokerlbTransferShedderCountSwapGain": False,  # brokerlb's own key (Pulsar behaviour by default)
    "brokerlbTransferShedderCheckSwapCandidates": False,  # brokerlb's own key (Pulsar behaviour by default)
    "brokerlbReportOwnedIdleBundles": True,  # brokerlb's own keys (broker service)
    "brokerlbModularTransferEnabled": True,
    "brokerlbKeepPreallocationsUntilReported": True,
    "brokerlbHostUsage": "measured",
    "brokerlbModelCores": 4.0,
    "brokerlbModelMsgRatePerCore": 50000.0,
    # brokerlb's own balancer (docs/balancer.md)
    "brokerlbBalancerTargetTolerance": 0.05,
    "brokerlbBalancerUnderloadTolerance": 0.10,
    "brokerlbBalancerMinImprovement": 0.005,
    "brokerlbBalancerMaxMovesPerCycle": 100,
    "brokerlbBalancerMaxMovesPerBrokerPerCycle": 20,
    "brokerlbBalancerMaxMovedMbytesPerCycle": 2048.0,
    "brokerlbBalancerMaxMovedMbytesPerBrokerPerCycle": 512.0,
    "brokerlbBalancerSwapBackBlockMinutes": 120,
    "brokerlbBalancerIdleThresholdPercentage": 10.0,
    "brokerlbBalancerNoMergeAfterSplitMinutes": 30,
    "brokerlbBalancerNoSplitAfterMergeMinutes": 10,
    "brokerlbBalancerSplitHotBundles": True,
    "brokerlbBalancerMergeColdBundles": True,
    "brokerlbBalancerMergeMaxFill": 0.1,
    "brokerlbBalancerMaxMergesPerCycle": 2,
}


@pytest.mark.parametrize(("name", "expected"), sorted(PULSAR_DEFAULTS.items()))
def test_default_and_dynamic_flag_equal_pulsar(name: str, expected: tuple[object, bool]) -> None:
    default, dynamic = expected
    conf = ServiceConfig()
    assert conf.get(name) == default
    assert getattr(conf, name) == default
    assert type(getattr(conf, name)) is type(default)
    assert REGISTRY.get(name).dynamic is dynamic


def test_every_key_is_in_one_of_the_tables() -> None:
    assert set(REGISTRY.keys) == set(PULSAR_DEFAULTS) | set(BROKERLB_DEFAULTS)


@pytest.mark.parametrize(("name", "expected"), sorted(BROKERLB_DEFAULTS.items()))
def test_brokerlb_defaults(name: str, expected: object) -> None:
    assert ServiceConfig().get(name) == expected
    config_key = REGISTRY.get(name)
    assert config_key.deviation or config_key.is_brokerlb_extension


def test_headline_pulsar_4x_defaults() -> None:
    conf = ServiceConfig()
    assert conf.defaultNumberOfNamespaceBundles == 4
    assert conf.loadBalancerLoadSheddingStrategy.endswith("impl.ThresholdShedder")
    assert conf.loadBalancerLoadPlacementStrategy.endswith("impl.LeastLongTermMessageRate")
    assert conf.loadManagerClassName.endswith("impl.ModularLoadManagerImpl")
    # with default weights the weighted max is max(cpu, bandwidthIn, bandwidthOut)
    assert (conf.loadBalancerMemoryResourceWeight, conf.loadBalancerDirectMemoryResourceWeight) == (0.0, 0.0)
