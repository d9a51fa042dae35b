"""Deprecated key spellings and the Pulsar keys brokerlb knows but ignores.

Aliases are resolved the way Pulsar's ``ServiceConfiguration`` getters resolve them
(apache/pulsar commit 0023b9371b309b64aca6f47f03cd05aba78bb280):

=========================================  =======================================  =============================
old key                                    stands for                               rule
=========================================  =======================================  =============================
loadBalancerBandwithInResourceWeight       loadBalancerBandwidthInResourceWeight    a non-1.0 new value wins, else
loadBalancerBandwithOutResourceWeight      loadBalancerBandwidthOutResourceWeight   a non-1.0 old value, else 1.0
zookeeperServers                           metadataStoreUrl                         used (as ``zk:`` + value) when
                                                                                    metadataStoreUrl is not set
zooKeeperSessionTimeoutMillis              metadataStoreSessionTimeoutMillis        a value > 0 wins
zooKeeperOperationTimeoutSeconds           metadataStoreOperationTimeoutSeconds     a value > 0 wins
exposeBunlesMetricsInPrometheus            exposeBundlesMetricsInPrometheus         used when the new key is not set
=========================================  =======================================  =============================

(``exposeBunlesMetricsInPrometheus`` is the spelling of Pulsar 2.10-era releases.)
"""

from __future__ import annotations

from typing import Any

from brokerlb.config.kinds import BOOL, INT, LONG, OPTIONAL_STRING
from brokerlb.config.registry import Alias, ConfigKey

__all__ = [
    "ALIASES",
    "KNOWN_IGNORED_KEYS",
    "REFUSED_WHEN_SET",
    "non_default_new_wins",
    "positive_old_wins",
    "fallback",
]


def non_default_new_wins(old: Any, current: Any, explicit: bool, target: ConfigKey) -> Any:
    """Pulsar's ``getLoadBalancerBandwidthInResourceWeight``: new ≠ default, else old ≠ default."""
    if current != target.default:
        return current
    return old


def positive_old_wins(old: Any, current: Any, explicit: bool, target: ConfigKey) -> Any:
    """Pulsar's ``getMetadataStoreSessionTimeoutMillis``: the old ZooKeeper key wins when > 0."""
    return old if old is not None and old > 0 else current


def fallback(old: Any, current: Any, explicit: bool, target: ConfigKey) -> Any:
    """The old key is used only when the new key was not set."""
    if explicit or old is None:
        return current
    return old


def _zookeeper_servers(old: Any, current: Any, explicit: bool, target: ConfigKey) -> Any:
    """Pulsar's ``getMetadataStoreUrl``: metadataStoreUrl if set, else ``zk:`` + zookeeperServers."""
    if explicit or not old:
        return current
    return "zk:" + old


ALIASES: tuple[Alias, ...] = (
    Alias(
        "loadBalancerBandwithInResourceWeight",
        "loadBalancerBandwidthInResourceWeight",
        non_default_new_wins,
        explanation="misspelled old key; a non-1.0 new value wins, else a non-1.0 old value, else 1.0",
    ),
    Alias(
        "loadBalancerBandwithOutResourceWeight",
        "loadBalancerBandwidthOutResourceWeight",
        non_default_new_wins,
        explanation="misspelled old key; a non-1.0 new value wins, else a non-1.0 old value, else 1.0",
    ),
    Alias(
        "zookeeperServers",
        "metadataStoreUrl",
        _zookeeper_servers,
        kind=OPTIONAL_STRING,
        explanation="`zk:` + value, used when metadataStoreUrl is not set",
    ),
    Alias(
        "zooKeeperSessionTimeoutMillis",
        "metadataStoreSessionTimeoutMillis",
        positive_old_wins,
        kind=LONG,
        explanation="a value > 0 wins over metadataStoreSessionTimeoutMillis",
    ),
    Alias(
        "zooKeeperOperationTimeoutSeconds",
        "metadataStoreOperationTimeoutSeconds",
        positive_old_wins,
        kind=INT,
        explanation="a value > 0 wins over metadataStoreOperationTimeoutSeconds",
    ),
    Alias(
        "exposeBunlesMetricsInPrometheus",
        "exposeBundlesMetricsInPrometheus",
        fallback,
        kind=BOOL,
        explanation="old spelling (Pulsar 2.10 era); used when the new key is not set",
    ),
)

#: Keys of Pulsar's ServiceConfiguration that brokerlb does not model: a broker.conf
#: copied from Pulsar loads without a warning for each of them, a snapshot's ``config``
#: accepts them with a warning. (Anything else unknown warns, with the closest known names;
#: in a snapshot it is an error.) Together with the modelled keys and the aliases this is
#: every field of Pulsar 4.x ``ServiceConfiguration`` (read at apache/pulsar 0023b937).
KNOWN_IGNORED_KEYS: frozenset[str] = frozenset(
    """
    configurationMetadataStoreUrl configurationStoreServers globalZookeeperServers
    metadataStoreCacheExpirySeconds metadataStoreAllowReadOnlyOperations zooKeeperCacheExpirySeconds
    zooKeeperAllowReadOnlyOperations metadataStoreBatchingEnabled metadataStoreBatchingMaxDelayMillis
    metadataStoreBatchingMaxOperations metadataStoreBatchingMaxSizeKb metadataStoreConfigPath
    configurationStoreConfigPath metadataSyncEventTopic configurationMetadataSyncEventTopic
    zookeeperSessionExpiredPolicy bindAddresses haProxyProtocolEnabled webServiceHaProxyProtocolEnabled
    webServiceTrustXForwardedFor webServiceLogDetailedAddresses webServiceTlsProvider
    webServiceTlsProtocols webServiceTlsCiphers numAcceptorThreads numIOThreads numOrderedExecutorThreads
    numHttpServerThreads numExecutorThreadPoolSize numCacheExecutorThreadPoolSize enableBusyWait
    maxConcurrentHttpRequests httpServerThreadPoolQueueSize httpServerAcceptQueueSize
    maxHttpServerConnections httpServerGzipCompressionExcludedPaths
    isRunningStandalone maxTenants skipBrokerShutdownOnOOM topicLoadTimeoutSeconds topicFactoryClassName
    backlogQuotaCheckEnabled backlogQuotaCheckIntervalInSeconds backlogQuotaDefaultLimitGB
    backlogQuotaDefaultLimitSecond
    ttlDurationDefaultInSeconds brokerDeleteInactiveTopicsEnabled brokerDeleteInactiveTopicsFrequencySeconds
    brokerDeleteInactiveTopicsMode brokerDeleteInactiveTopicsMaxInactiveDurationSeconds
    brokerDeleteInactivePartitionedTopicMetadataEnabled
    maxPendingPublishRequestsPerConnection messageExpiryCheckIntervalInMinutes
    activeConsumerFailoverDelayTimeMillis subscriptionExpirationTimeMinutes
    subscriptionRedeliveryTrackerEnabled subscriptionExpiryCheckIntervalInMinutes subscriptionTypesEnabled
    subscriptionKeySharedEnable subscriptionKeySharedUseConsistentHashing
    subscriptionKeySharedConsistentHashingReplicaPoints brokerDeduplicationEnabled
    brokerDeduplicationMaxNumberOfProducers brokerDeduplicationSnapshotFrequencyInSeconds
    brokerDeduplicationSnapshotIntervalSeconds brokerDeduplicationEntriesInterval
    brokerDeduplicationProducerInactivityTimeoutMinutes maxNamespacesPerTenant maxTopicsPerNamespace
    isAllowAutoUpdateSchemaEnabled
    clientLibraryVersionCheckEnabled statusFilePath maxUnackedMessagesPerConsumer
    maxUnackedMessagesPerSubscription maxUnackedMessagesPerBroker
    maxUnackedMessagesPerSubscriptionOnBrokerBlocked maxConsumerMetadataSize unblockStuckSubscriptionEnabled
    topicPublisherThrottlingTickTimeMillis brokerPublisherThrottlingTickTimeMillis
    brokerPublisherThrottlingMaxMessageRate brokerPublisherThrottlingMaxByteRate
    dispatchThrottlingRateInMsg dispatchThrottlingRateInByte maxPublishRatePerTopicInMessages
    maxPublishRatePerTopicInBytes subscribeThrottlingRatePerConsumer subscribeRatePeriodPerConsumerInSecond
    dispatchThrottlingRatePerTopicInMsg dispatchThrottlingRatePerTopicInByte
    dispatchThrottlingOnBatchMessageEnabled dispatchThrottlingRatePerSubscriptionInMsg
    dispatchThrottlingRatePerSubscriptionInByte dispatchThrottlingRatePerReplicatorInMsg
    dispatchThrottlingRatePerReplicatorInByte dispatchThrottlingRateRelativeToPublishRate
    dispatchThrottlingOnNonBacklogConsumerEnabled resourceUsageTransportClassName
    resourceUsageTransportPublishIntervalInSecs dispatcherMaxReadBatchSize dispatcherMaxReadSizeBytes
    dispatcherMinReadBatchSize dispatcherMaxRoundRobinBatchSize preciseDispatcherFlowControl
    entryFilterNames entryFiltersDirectory allowOverrideEntryFilters
    maxConcurrentNonPersistentMessagePerConnection numWorkerThreadsForNonPersistentTopic
    topicOrderedExecutorThreadNum enableRunBookieTogether enableRunBookieAutoRecoveryTogether
    maxProducersPerTopic maxSameAddressProducersPerTopic encryptionRequireOnProducer maxConsumersPerTopic
    maxSameAddressConsumersPerTopic maxSubscriptionsPerTopic maxConsumersPerSubscription
    enableReplicatedSubscriptions replicatedSubscriptionsSnapshotFrequencyMillis
    replicatedSubscriptionsSnapshotTimeoutSeconds replicatedSubscriptionsSnapshotMaxCachedPerSubscription
    maxMessagePublishBufferSizeInMB lazyCursorRecovery retentionCheckIntervalInSeconds
    brokerInterceptorsDirectory brokerInterceptors
    topicFencingTimeoutSeconds protocolHandlerDirectory messagingProtocols systemTopicEnabled
    strictTopicNameEnabled topicLevelPoliciesEnabled topicPoliciesServiceClassName
    brokerEntryMetadataInterceptors exposingBrokerEntryMetadataToClientEnabled
    enableNamespaceIsolationUpdateOnTime strictBookieAffinityEnabled tlsEnabled
    tlsCertRefreshCheckDurationSec
    tlsAllowInsecureConnection tlsHostnameVerificationEnabled tlsProtocols tlsCiphers

    httpRequestsLimitEnabled httpRequestsMaxPerSecond httpRequestsFailOnUnknownPropertiesEnabled
    bookkeeperMetadataServiceUri bookkeeperClientAuthenticationPlugin
    bookkeeperClientAuthenticationParametersName bookkeeperClientAuthenticationParameters
    bookkeeperClientTimeoutInSeconds bookkeeperClientSpeculativeReadTimeoutInMillis
    bookkeeperNumberOfChannelsPerBookie bookkeeperUseV2WireProtocol bookkeeperClientHealthCheckEnabled
    bookkeeperClientHealthCheckIntervalSeconds bookkeeperClientHealthCheckErrorThresholdPerInterval
    bookkeeperClientHealthCheckQuarantineTimeInSeconds bookkeeperClientRackawarePolicyEnabled
    bookkeeperClientRegionawarePolicyEnabled bookkeeperClientMinNumRacksPerWriteQuorum
    bookkeeperClientEnforceMinNumRacksPerWriteQuorum bookkeeperClientReorderReadSequenceEnabled
    bookkeeperClientIsolationGroups bookkeeperClientSecondaryIsolationGroups bookkeeperEnableStickyReads
    bookkeeperClientExposeStatsToPrometheus managedLedgerDefaultEnsembleSize managedLedgerDefaultWriteQuorum
    managedLedgerDefaultAckQuorum managedLedgerDigestType managedLedgerPassword managedLedgerMaxEnsembleSize
    managedLedgerMaxWriteQuorum managedLedgerMaxAckQuorum
    managedLedgerCacheCopyEntries managedLedgerCacheEvictionFrequency
    managedLedgerCacheEvictionIntervalMs managedLedgerCacheEvictionTimeThresholdMillis
    managedLedgerCursorBackloggedThreshold
    allowAutoTopicCreationWithLegacyNamingScheme allowAutoSubscriptionCreation
    managedLedgerStorageClassName managedLedgerNumSchedulerThreads
    managedLedgerOffloadDeletionLagMs
    managedLedgerOffloadAutoTriggerSizeThresholdBytes managedLedgerCursorMaxEntriesPerLedger
    managedLedgerCursorRolloverTimeInSeconds
    managedLedgerMaxUnackedRangesToPersistInZooKeeper managedLedgerMaxUnackedRangesToPersistInMetadataStore
    managedLedgerUnackedRangesOpenCacheSetEnabled autoSkipNonRecoverableData
    managedLedgerMetadataOperationsTimeoutSeconds managedLedgerReadEntryTimeoutSeconds
    managedLedgerAddEntryTimeoutSeconds managedLedgerPrometheusStatsLatencyRolloverSeconds
    managedLedgerTraceTaskExecution managedLedgerNewEntriesCheckDelayInMillis managedLedgerDataReadPriority
    managedLedgerInfoCompressionType managedCursorInfoCompressionType
    managedLedgerMinimumBacklogCursorsForCaching managedLedgerMinimumBacklogEntriesForCaching
    managedLedgerMaxBacklogBetweenCursorsForCaching replicationMetricsEnabled replicationConnectionsPerBroker
    replicatorPrefix replicationProducerQueueSize replicationPolicyCheckDurationSeconds
    replicationTlsEnabled
    brokerServicePurgeInactiveFrequencyInSeconds bootstrapNamespaces lookupPropertyPrefix
    brokerServiceCompactionMonitorIntervalInSeconds brokerServiceCompactionThresholdInBytes
    isSchemaValidationEnforced schemaRegistryStorageClassName schemaRegistryCompatibilityCheckers
    schemaCompatibilityStrategy systemTopicSchemaCompatibilityStrategy webSocketNumIoThreads
    webSocketConnectionsPerBroker webSocketSessionIdleTimeoutMillis webSocketMaxTextFrameSize
    exposeConsumerLevelMetricsInPrometheus
    exposeProducerLevelMetricsInPrometheus exposeManagedLedgerMetricsInPrometheus
    exposeManagedCursorMetricsInPrometheus jvmGCMetricsLoggerClassName exposePreciseBacklogInPrometheus
    metricsServletTimeoutMs exposeSubscriptionBacklogSizeInPrometheus splitTopicAndPartitionLabelInPrometheus
    functionsWorkerEnabled exposePublisherStats statsUpdateInitialDelayInSecs
    healthCheckMetricsUpdateTimeInSeconds aggregatePublisherStatsByProducerName offloadersDirectory
    managedLedgerOffloadDriver managedLedgerOffloadMaxThreads narExtractionDirectory
    transactionCoordinatorEnabled transactionMetadataStoreProviderClassName
    transactionBufferProviderClassName transactionPendingAckStoreProviderClassName
    tlsEnabledWithKeyStore tlsProvider tlsKeyStoreType tlsKeyStore tlsKeyStorePassword tlsTrustStoreType
    tlsTrustStore tlsTrustStorePassword
    brokerClientTlsEnabled brokerClientTlsEnabledWithKeyStore brokerClientTrustCertsFilePath
    brokerClientKeyFilePath brokerClientCertificateFilePath enablePackagesManagement
    additionalServletDirectory additionalServlets delayedDeliveryEnabled delayedDeliveryTickTimeMillis
    acknowledgmentAtBatchIndexLevelEnabled saslJaasClientAllowedIds saslJaasServerSectionName kinitCommand
    activeConsumerFailoverConsistentHashing additionalSystemCursorNames
    allowAclChangesOnNonExistentTopics bookkeeperClientGetBookieInfoIntervalSeconds
    bookkeeperClientGetBookieInfoRetryIntervalSeconds bookkeeperClientLimitStatsLogging
    bookkeeperClientNumIoThreads bookkeeperClientNumWorkerThreads bookkeeperClientQuarantineRatio
    bookkeeperClientSeparatedIoThreadsEnabled bookkeeperClientThrottleValue
    bookkeeperDiskWeightBasedPlacementEnabled bookkeeperExplicitLacIntervalInMills
    bookkeeperTLSCertificateFilePath bookkeeperTLSClientAuthentication bookkeeperTLSKeyFilePath
    bookkeeperTLSKeyFileType bookkeeperTLSKeyStorePasswordPath bookkeeperTLSProviderFactoryClass
    bookkeeperTLSTrustCertTypes bookkeeperTLSTrustCertsFilePath bookkeeperTLSTrustStorePasswordPath
    bookkeeperTlsCertFilesRefreshDurationSeconds brokerClientSslFactoryPlugin
    brokerClientSslFactoryPluginParams brokerClientSslProvider brokerClientTlsCiphers
    brokerClientTlsKeyStore brokerClientTlsKeyStorePassword brokerClientTlsKeyStoreType
    brokerClientTlsProtocols brokerClientTlsTrustStore brokerClientTlsTrustStorePassword
    brokerClientTlsTrustStoreType brokerEntryPayloadProcessors
    brokerServiceCompactionPhaseOneLoopTimeInSeconds cacheEvictionByMarkDeletedPosition
    clusterMigrationAutoResourceCreation clusterMigrationCheckDurationSeconds
    compactionServiceFactoryClassName connectionLivenessCheckTimeoutMillis
    createTopicToRemoteClusterForReplication delayedDeliveryFixedDelayDetectionLookahead
    delayedDeliveryMaxDelayInMillis delayedDeliveryMaxIndexesPerBucketSnapshotSegment
    delayedDeliveryMaxNumBuckets delayedDeliveryMaxTimeStepPerBucketSnapshotSegmentSeconds
    delayedDeliveryMinIndexCountPerBucket delayedDeliveryTrackerFactoryClassName disableHttpDebugMethods
    dispatchRateLimiterFactoryClassName dispatchThrottlingForFilteredEntriesEnabled
    dispatcherDispatchMessagesInSubscriptionThread dispatcherEntryFilterRescheduledMessageDelay
    dispatcherPauseOnAckStatePersistentEnabled dispatcherReadFailureBackoffInitialTimeInMs
    dispatcherReadFailureBackoffMandatoryStopTimeInMs dispatcherReadFailureBackoffMaxTimeInMs
    dispatcherRetryBackoffInitialTimeInMs dispatcherRetryBackoffMaxTimeInMs
    enableBrokerSideSubscriptionPatternEvaluation functionsWorkerEnablePackageManagement
    functionsWorkerServiceNarPackage httpMaxRequestHeaderSize inflightSaslContextExpiryMs
    isDelayedDeliveryDeliverAtTimeStrict keySharedLookAheadMsgInReplayThresholdPerConsumer
    keySharedLookAheadMsgInReplayThresholdPerSubscription keySharedUnblockingIntervalMs
    managedCursorInfoCompressionThresholdInBytes
    managedLedgerCursorResetLedgerCloseTimestampMaxClockSkewMillis managedLedgerForceRecovery
    managedLedgerInactiveLedgerRolloverTimeSeconds managedLedgerInfoCompressionThresholdInBytes
    managedLedgerMaxReadsInFlightPermitsAcquireQueueSize
    managedLedgerMaxReadsInFlightPermitsAcquireTimeoutMillis managedLedgerMaxReadsInFlightSizeInMB
    managedLedgerOffloadPrefetchRounds managedLedgerOffloadReadThreads
    managedLedgerOffloadThresholdInSeconds managedLedgerPersistIndividualAckAsLongArray
    managedLedgerStatsPeriodSeconds maxActiveTransactionsPerCoordinator maxInflightSaslContext
    maxSecondsToClearTopicNameCache metricsBufferResponse numTransactionReplayThreadPoolSize
    packagesManagementLedgerRootPath packagesManagementStorageProvider packagesReplicas
    persistentUnackedRangesWithMultipleEntriesEnabled preciseTimeBasedBacklogQuotaCheck
    replicationStartAt saslJaasServerRoleTokenSignerSecretPath schemaLedgerForceRecovery
    sslFactoryPlugin sslFactoryPluginParams subscriptionBacklogScanMaxEntries
    subscriptionBacklogScanMaxTimeMs subscriptionKeySharedUseClassicPersistentImplementation
    subscriptionPatternMaxLength subscriptionSharedUseClassicPersistentImplementation
    topicCompactionRetainNullKey topicNameCacheMaxCapacity transactionBufferClientMaxConcurrentRequests
    transactionBufferClientOperationTimeoutInMills transactionBufferSegmentedSnapshotEnabled
    transactionBufferSnapshotMaxTransactionCount transactionBufferSnapshotMinTimeInMillis
    transactionBufferSnapshotSegmentSize transactionLogBatchedWriteEnabled
    transactionLogBatchedWriteMaxDelayInMillis transactionLogBatchedWriteMaxRecords
    transactionLogBatchedWriteMaxSize transactionPendingAckBatchedWriteEnabled
    transactionPendingAckBatchedWriteMaxDelayInMillis transactionPendingAckBatchedWriteMaxRecords
    transactionPendingAckBatchedWriteMaxSize transactionPendingAckLogIndexMinLag
    triggerOffloadOnTopicLoad useSeparateThreadPoolForProtocolHandlers webSocketNumServiceThreads
    webSocketPingDurationSeconds webSocketPulsarClientMemoryLimitInMB
""".split()
)

#: Security-relevant Pulsar keys brokerlb does not implement: a broker.conf that turns one on is
#: refused at load time (``InvalidConfigError`` naming the key) instead of running without it.
#: key -> (the values that mean "off", why).
_NO_TLS_CLIENT = "brokerlb brokers call each other over plain HTTP (set webServicePort); broker-client TLS is not implemented"
_KEYSTORE = "brokerlb reads PEM files only (tlsCertificateFilePath, tlsKeyFilePath, tlsTrustCertsFilePath)"
REFUSED_WHEN_SET: dict[str, tuple[frozenset[str], str]] = {
    "tlsEnabled": (
        frozenset({"", "false"}),
        "deprecated in Pulsar and without effect; set webServicePortTls",
    ),
    "tlsAllowInsecureConnection": (frozenset({"", "false"}), "brokerlb always verifies client certificates"),
    "tlsEnabledWithKeyStore": (frozenset({"", "false"}), _KEYSTORE),
    "tlsKeyStore": (frozenset({""}), _KEYSTORE),
    "tlsTrustStore": (frozenset({""}), _KEYSTORE),
    "tlsProtocols": (frozenset({""}), "brokerlb uses the TLS versions of its Python/OpenSSL (1.2 and 1.3)"),
    "tlsCiphers": (frozenset({""}), "brokerlb uses OpenSSL's default cipher suites"),
    "webServiceTlsProtocols": (
        frozenset({""}),
        "brokerlb uses the TLS versions of its Python/OpenSSL (1.2 and 1.3)",
    ),
    "webServiceTlsCiphers": (frozenset({""}), "brokerlb uses OpenSSL's default cipher suites"),
    "tlsHostnameVerificationEnabled": (frozenset({"", "false"}), _NO_TLS_CLIENT),
    "brokerClientTlsEnabled": (frozenset({"", "false"}), _NO_TLS_CLIENT),
    "brokerClientTlsEnabledWithKeyStore": (frozenset({"", "false"}), _NO_TLS_CLIENT),
    "httpRequestsLimitEnabled": (frozenset({"", "false"}), "brokerlb has no HTTP request rate limit"),
}
