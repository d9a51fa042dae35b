"""Pulsar's metadata paths, in one place.

=================================================  ===========================================
path                                               content
=================================================  ===========================================
``/loadbalance/brokers/{brokerId}``                ephemeral LocalBrokerData; children = live brokers
``/loadbalance/leader``                            ephemeral ``{"brokerId", "serviceUrl"}``
``/loadbalance/extension/leader``                  extensible load manager's leader
``/loadbalance/bundle-data/{tenant}/{ns}/{range}`` BundleData
``/loadbalance/broker-time-average/{brokerId}``    TimeAverageBrokerData
``/loadbalance/resource-quota/namespace/{bundle}`` legacy ResourceQuota
``/service_unit_state/{tenant}/{ns}/{range}``      the bundle's ownership record (ServiceUnitStateData)
``/admin/policies/{tenant}``                       TenantInfo (``adminRoles``, ``allowedClusters``)
``/admin/policies/{tenant}/{ns}``                  global Policies (``bundles``, ...)
``/admin/local-policies/{tenant}/{ns}``            LocalPolicies (``bundles``, anti-affinity group)
``/admin/clusters/{cluster}``                      ClusterData (``serviceUrl``, ``brokerServiceUrl``, ...)
``/admin/clusters/{cluster}/namespaceIsolationPolicies``  map name → NamespaceIsolationData
``/admin/clusters/{cluster}/failureDomain/{domain}``      FailureDomain ``{"brokers": [...]}``
``/admin/partitioned-topics/{tenant}/{ns}/{domain}/{topic}``  PartitionedTopicMetadata
``/admin/configuration``                           dynamic configuration: key → value (strings)
``/managed-ledgers/{tenant}/{ns}/persistent/{topic}``  a created persistent topic
=================================================  ===========================================

v1 namespaces (``tenant/cluster/ns``) simply have one more segment.
"""

from __future__ import annotations

import re

from brokerlb.coordination.store import join_path
from brokerlb.errors import InvalidInputError
from brokerlb.naming import NamespaceName, TopicName
from brokerlb.ring.bundles import NamespaceBundle

__all__ = [
    "LOADBALANCE_ROOT",
    "BROKERS_ROOT",
    "LEADER_PATH",
    "EXTENSIBLE_LEADER_PATH",
    "BUNDLE_DATA_ROOT",
    "BROKER_TIME_AVERAGE_ROOT",
    "RESOURCE_QUOTA_ROOT",
    "OWNERSHIP_ROOT",
    "SERVICE_UNIT_STATE_ROOT",
    "service_unit_state_path",
    "bundle_of_service_unit_path",
    "POLICIES_ROOT",
    "LOCAL_POLICIES_ROOT",
    "CLUSTERS_ROOT",
    "PARTITIONED_TOPICS_ROOT",
    "broker_path",
    "broker_id_of_path",
    "validate_broker_id",
    "ownership_path",
    "namespace_ownership_path",
    "bundle_of_ownership_path",
    "is_range_segment",
    "policies_path",
    "local_policies_path",
    "bundle_data_path",
    "namespace_bundle_data_path",
    "broker_time_average_path",
    "resource_quota_path",
    "cluster_path",
    "isolation_policies_path",
    "failure_domains_root",
    "failure_domain_path",
    "partitioned_topic_path",
    "partitioned_topics_path",
    "DYNAMIC_CONFIG_PATH",
    "MANAGED_LEDGERS_ROOT",
    "tenant_path",
    "managed_ledger_path",
    "managed_ledgers_path",
]

LOADBALANCE_ROOT = "/loadbalance"
BROKERS_ROOT = "/loadbalance/brokers"
LEADER_PATH = "/loadbalance/leader"
EXTENSIBLE_LEADER_PATH = "/loadbalance/extension/leader"
BUNDLE_DATA_ROOT = "/loadbalance/bundle-data"
BROKER_TIME_AVERAGE_ROOT = "/loadbalance/broker-time-average"
RESOURCE_QUOTA_ROOT = "/loadbalance/resource-quota/namespace"
OWNERSHIP_ROOT = "/namespace"
#: Pulsar's ``ServiceUnitStateMetadataStoreTableViewImpl.PATH_PREFIX``
SERVICE_UNIT_STATE_ROOT = "/service_unit_state"
POLICIES_ROOT = "/admin/policies"
LOCAL_POLICIES_ROOT = "/admin/local-policies"
CLUSTERS_ROOT = "/admin/clusters"
PARTITIONED_TOPICS_ROOT = "/admin/partitioned-topics"
#: Pulsar's ``BROKER_SERVICE_CONFIGURATION_PATH``: the dynamic configuration, one JSON map.
DYNAMIC_CONFIG_PATH = "/admin/configuration"
MANAGED_LEDGERS_ROOT = "/managed-ledgers"

_ISOLATION_POLICIES = "namespaceIsolationPolicies"
_FAILURE_DOMAIN = "failureDomain"
_RANGE = re.compile(r"0x[0-9a-fA-F]{8}_0x[0-9a-fA-F]{8}")
_SEGMENT = re.compile(r"[^/\x00]+")


def validate_broker_id(broker_id: str) -> str:
    """A broker id (``host:port``) usable as one path segment."""
    if not isinstance(broker_id, str) or not _SEGMENT.fullmatch(broker_id) or broker_id in (".", ".."):
        raise InvalidInputError(
            f"Invalid broker id {broker_id!r}: expected a non-empty name without '/', e.g. broker-1:8080"
        )
    return broker_id


def _segment(value: str, what: str) -> str:
    if not isinstance(value, str) or not _SEGMENT.fullmatch(value) or value in (".", ".."):
        raise InvalidInputError(f"Invalid {what} {value!r}: expected a non-empty name without '/'")
    return value


def broker_path(broker_id: str) -> str:
    return f"{BROKERS_ROOT}/{validate_broker_id(broker_id)}"


def broker_id_of_path(path: str) -> str:
    prefix = BROKERS_ROOT + "/"
    if not path.startswith(prefix) or "/" in path[len(prefix) :]:
        raise InvalidInputError(f"{path!r} is not a broker registration path ({prefix}<brokerId>)")
    return path[len(prefix) :]


def _bundle(bundle: NamespaceBundle | str) -> NamespaceBundle:
    return bundle if isinstance(bundle, NamespaceBundle) else NamespaceBundle.parse(bundle)


def ownership_path(bundle: NamespaceBundle | str) -> str:
    """``/namespace/{tenant}/{ns}/{range}`` -- Pulsar's ``ServiceUnitUtils.path``."""
    b = _bundle(bundle)
    return f"{OWNERSHIP_ROOT}/{b.namespace}/{b.range}"


def namespace_ownership_path(namespace: NamespaceName | str) -> str:
    return f"{OWNERSHIP_ROOT}/{NamespaceName.parse(namespace)}"


def is_range_segment(name: str) -> bool:
    """``name`` looks like a bundle range (``0x00000000_0x40000000``)."""
    return bool(_RANGE.fullmatch(name))


def bundle_of_ownership_path(path: str) -> NamespaceBundle:
    """The bundle an ownership node stands for (``/namespace/t/ns/0x.._0x..`` → ``t/ns/0x.._0x..``)."""
    prefix = OWNERSHIP_ROOT + "/"
    if not path.startswith(prefix):
        raise InvalidInputError(f"{path!r} is not an ownership path ({prefix}<namespace>/<range>)")
    return NamespaceBundle.parse(path[len(prefix) :])


def service_unit_state_path(bundle: NamespaceBundle | str) -> str:
    """``/service_unit_state/{tenant}/{ns}/{range}``: the bundle's ownership record (Pulsar's
    metadata-store table view keys records by the bundle's full name under this prefix)."""
    b = _bundle(bundle)
    return f"{SERVICE_UNIT_STATE_ROOT}/{b.namespace}/{b.range}"


def bundle_of_service_unit_path(path: str) -> NamespaceBundle:
    """The bundle an ownership record stands for (``/service_unit_state/t/ns/0x.._0x..`` → ``t/ns/0x.._0x..``)."""
    prefix = SERVICE_UNIT_STATE_ROOT + "/"
    if not path.startswith(prefix):
        raise InvalidInputError(f"{path!r} is not an ownership record path ({prefix}<namespace>/<range>)")
    return NamespaceBundle.parse(path[len(prefix) :])


def tenant_path(tenant: str) -> str:
    """``/admin/policies/{tenant}``: the tenant's TenantInfo; its children are its namespaces."""
    return f"{POLICIES_ROOT}/{_segment(tenant, 'tenant name')}"


def policies_path(namespace: NamespaceName | str) -> str:
    return f"{POLICIES_ROOT}/{NamespaceName.parse(namespace)}"


def local_policies_path(namespace: NamespaceName | str) -> str:
    return f"{LOCAL_POLICIES_ROOT}/{NamespaceName.parse(namespace)}"


def bundle_data_path(bundle: NamespaceBundle | str) -> str:
    """``/loadbalance/bundle-data/{tenant}/{ns}/{range}``."""
    b = _bundle(bundle)
    return f"{BUNDLE_DATA_ROOT}/{b.namespace}/{b.range}"


def namespace_bundle_data_path(namespace: NamespaceName | str) -> str:
    return f"{BUNDLE_DATA_ROOT}/{NamespaceName.parse(namespace)}"


def broker_time_average_path(broker_id: str) -> str:
    return f"{BROKER_TIME_AVERAGE_ROOT}/{validate_broker_id(broker_id)}"


def resource_quota_path(bundle: NamespaceBundle | str) -> str:
    b = _bundle(bundle)
    return f"{RESOURCE_QUOTA_ROOT}/{b.namespace}/{b.range}"


def cluster_path(cluster: str) -> str:
    return join_path(CLUSTERS_ROOT, _segment(cluster, "cluster name"))


def isolation_policies_path(cluster: str) -> str:
    """``/admin/clusters/{cluster}/namespaceIsolationPolicies`` (one node: map name → policy)."""
    return f"{cluster_path(cluster)}/{_ISOLATION_POLICIES}"


def failure_domains_root(cluster: str) -> str:
    return f"{cluster_path(cluster)}/{_FAILURE_DOMAIN}"


def failure_domain_path(cluster: str, domain: str) -> str:
    return f"{failure_domains_root(cluster)}/{_segment(domain, 'failure domain name')}"


def partitioned_topic_path(topic: TopicName | str) -> str:
    """``/admin/partitioned-topics/{tenant}/{ns}/{domain}/{encodedLocalName}``."""
    t = TopicName.parse(topic)
    return f"{PARTITIONED_TOPICS_ROOT}/{t.namespace}/{t.domain}/{t.encoded_local_name}"


def partitioned_topics_path(namespace: NamespaceName | str, domain: str) -> str:
    """``/admin/partitioned-topics/{tenant}/{ns}/{domain}``: children are the encoded local names."""
    return f"{PARTITIONED_TOPICS_ROOT}/{NamespaceName.parse(namespace)}/{domain}"


def managed_ledger_path(topic: TopicName | str) -> str:
    """``/managed-ledgers/{tenant}/{ns}/persistent/{encodedLocalName}`` -- where Pulsar keeps a persistent
    topic's managed-ledger metadata; brokerlb's node marks a created persistent topic."""
    t = TopicName.parse(topic)
    return f"{MANAGED_LEDGERS_ROOT}/{t.namespace}/{t.domain}/{t.encoded_local_name}"


def managed_ledgers_path(namespace: NamespaceName | str, domain: str = "persistent") -> str:
    return f"{MANAGED_LEDGERS_ROOT}/{NamespaceName.parse(namespace)}/{domain}"
