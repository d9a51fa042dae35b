"""The admin API's pieces on the embedded store: dynamic configuration, tenants and cluster metadata,
topic-stats sums, the brokers' isolation view."""

from __future__ import annotations

import json

import pytest

from brokerlb.broker.admin.dynamic_config import DynamicConfiguration
from brokerlb.broker.data.topic_stats import TopicView, partitioned_stats_json, topic_stats_json
from brokerlb.broker.data.topics import TopicStats
from brokerlb.broker.http.cluster_routes import broker_isolation_data
from brokerlb.config import ServiceConfig
from brokerlb.coordination import NamespaceIsolationPolicies
from brokerlb.coordination.paths import DYNAMIC_CONFIG_PATH, cluster_path, tenant_path
from brokerlb.coordination.records import ClusterData, TenantInfo
from brokerlb.coordination.tenants import Tenants, ensure_cluster_metadata
from brokerlb.errors import (
    ConflictError,
    ForbiddenError,
    InvalidConfigError,
    NotFoundError,
    PreconditionFailedError,
)
from brokerlb.testing.waiting import eventually

# --------------------------------------------------------------------------- dynamic configuration


async def test_dynamic_values_apply_in_place_and_removal_restores_the_file_value(store) -> None:
    conf = ServiceConfig(clusterName="c", loadBalancerBrokerOverloadedThresholdPercentage=80)
    held_by_a_component = conf
    dynamic = await DynamicConfiguration(conf, store).start()
    try:
        await dynamic.update("loadBalancerBrokerOverloadedThresholdPercentage", "70")
        await eventually(lambda: held_by_a_component.loadBalancerBrokerOverloadedThresholdPercentage == 70)
        assert await dynamic.stored_values() == {"loadBalancerBrokerOverloadedThresholdPercentage": "70"}
        assert dynamic.runtime_values()["loadBalancerBrokerOverloadedThresholdPercentage"] == "70"
        await dynamic.delete("loadBalancerBrokerOverloadedThresholdPercentage")
        await eventually(lambda: conf.loadBalancerBrokerOverloadedThresholdPercentage == 80)
    finally:
        dynamic.close()


async def test_dynamic_updates_are_checked_before_they_are_stored(store) -> None:
    dynamic = DynamicConfiguration(ServiceConfig(clusterName="c"), store)
    with pytest.raises(PreconditionFailedError, match="non-dynamic"):
        await dynamic.update("clusterName", "other")
    with pytest.raises(PreconditionFailedError, match="non-dynamic"):
        await dynamic.update("noSuchKey", "1")
    with pytest.raises(PreconditionFailedError, match="Invalid dynamic-config value"):
        await dynamic.update("loadBalancerBrokerOverloadedThresholdPercentage", "-3")
    with pytest.raises(PreconditionFailedError, match="non-dynamic"):
        await dynamic.delete("clusterName")
    assert await store.exists(DYNAMIC_CONFIG_PATH) is None


async def test_a_stored_value_this_broker_cannot_use_is_skipped_and_the_others_apply(store) -> None:
    await store.create(
        DYNAMIC_CONFIG_PATH,
        json.dumps(
            {"clusterName": "x", "loadBalancerSheddingEnabled": "maybe", "maxUnloadPercentage": "0.5"}
        ).encode(),
        make_parents=True,
    )
    conf = ServiceConfig(clusterName="c")
    dynamic = await DynamicConfiguration(conf, store).start()
    try:
        assert (conf.clusterName, conf.loadBalancerSheddingEnabled, conf.maxUnloadPercentage) == (
            "c",
            True,
            0.5,
        )
    finally:
        dynamic.close()


def test_adopting_values_refuses_a_non_dynamic_key() -> None:
    conf = ServiceConfig(clusterName="c")
    with pytest.raises(InvalidConfigError, match="not a dynamic configuration"):
        conf.adopt_dynamic_values(conf.with_overrides({"clusterName": "d"}))
    assert conf.clusterName == "c"
    changed = conf.adopt_dynamic_values(conf.with_overrides({"loadBalancerSheddingEnabled": "false"}))
    assert (
        changed == {"loadBalancerSheddingEnabled": (True, False)}
        and conf.loadBalancerSheddingEnabled is False
    )


# --------------------------------------------------------------------------- tenants and clusters


async def test_cluster_metadata_fills_what_is_missing_and_keeps_what_is_there(store) -> None:
    await store.create(cluster_path("c"), b"", make_parents=True)  # made as a parent of failure domains
    await store.create(tenant_path("public"), b"", make_parents=True)  # made as a parent of a namespace
    await store.create(tenant_path("pulsar"), TenantInfo(("root",), ("c", "d")).to_bytes(), make_parents=True)
    data = ClusterData(service_url="http://h:8080", broker_service_url="pulsar://h:6650")
    written = await ensure_cluster_metadata(store, "c", data)
    assert written == [cluster_path("c"), tenant_path("public")]
    tenants = Tenants(store)
    assert await tenants.get("public") == TenantInfo(allowed_clusters=("c",))
    assert await tenants.get("pulsar") == TenantInfo(("root",), ("c", "d"))
    assert ClusterData.from_bytes((await store.get(cluster_path("c"))).data) == data
    assert await ensure_cluster_metadata(store, "c", data) == []


async def test_tenant_rules(store) -> None:
    await ensure_cluster_metadata(store, "c", ClusterData())
    tenants = Tenants(store)
    with pytest.raises(PreconditionFailedError, match="Clusters can not be empty"):
        await tenants.create("t", TenantInfo(allowed_clusters=(" ",)))
    with pytest.raises(PreconditionFailedError, match="Clusters do not exist"):
        await tenants.create("t", TenantInfo(allowed_clusters=("zz",)))
    with pytest.raises(PreconditionFailedError, match="Tenant name is not valid"):
        await tenants.create("t/x", TenantInfo(allowed_clusters=("c",)))
    await tenants.create("t", TenantInfo(allowed_clusters=("global",)))
    with pytest.raises(ConflictError):
        await tenants.create("t", TenantInfo(allowed_clusters=("c",)))
    with pytest.raises(ForbiddenError, match=r"Cluster \[c\] is not in the list"):
        await tenants.check_namespace_allowed("t", "c")
    with pytest.raises(NotFoundError):
        await tenants.check_namespace_allowed("nobody", "c")
    await store.create(
        f"{tenant_path('t')}/ns", json.dumps({"replication_clusters": ["global"]}).encode(), make_parents=True
    )
    with pytest.raises(PreconditionFailedError, match="still used by namespace t/ns"):
        await tenants.update("t", TenantInfo(allowed_clusters=("c",)))
    with pytest.raises(ConflictError, match="active namespaces"):
        await tenants.delete("t")
    await store.delete(f"{tenant_path('t')}/ns")
    await tenants.update("t", TenantInfo(allowed_clusters=("c",)))
    await tenants.check_namespace_allowed("t", "c")
    await tenants.delete("t")
    assert await tenants.names() == ["public", "pulsar"]


# --------------------------------------------------------------------------- stats and isolation


def test_partitioned_stats_sum_rates_and_merge_subscriptions() -> None:
    parts = {
        f"persistent://t/ns/p-partition-{i}": topic_stats_json(
            TopicView(
                f"persistent://t/ns/p-partition-{i}",
                TopicStats(msg_rate_in=10.0 * (i + 1), msg_throughput_in=1000.0 * (i + 1)),
            )
        )
        for i in range(2)
    }
    for i, stats in enumerate(parts.values()):
        stats["subscriptions"] = {
            "s": {"msgBacklog": i + 1, "unackedMessages": 2, "consumers": [{"consumerName": f"c{i}"}]}
        }
    total = partitioned_stats_json(2, parts)
    assert total["msgRateIn"] == 30.0 and total["msgThroughputIn"] == 3000.0
    assert total["averageMsgSize"] == 100.0
    assert (
        total["subscriptions"]["s"]["msgBacklog"] == 3 and total["subscriptions"]["s"]["unackedMessages"] == 4
    )
    assert [c["consumerName"] for c in total["subscriptions"]["s"]["consumers"]] == ["c0", "c1"]
    assert total["metadata"] == {"partitions": 2} and sorted(total["partitions"]) == sorted(parts)
    assert "partitions" not in partitioned_stats_json(2, parts, include_partitions=False)


def test_broker_isolation_view_names_the_matching_policies() -> None:
    policy = {
        "namespaces": ["t/a.*"],
        "primary": [r"b1:8080"],
        "secondary": [r"b2"],
        "auto_failover_policy": {
            "policy_type": "min_available",
            "parameters": {"min_limit": "1", "usage_threshold": "80"},
        },
    }
    policies = NamespaceIsolationPolicies.from_json({"p1": policy})
    assert broker_isolation_data("b1:8080", policies) == {
        "brokerName": "b1:8080",
        "isPrimary": True,
        "policyName": "p1",
        "namespaceRegex": ["t/a.*"],
    }
    assert broker_isolation_data("b2:8080", policies)["isPrimary"] is False
    assert broker_isolation_data("b3:8080", policies) == {
        "brokerName": "b3:8080",
        "isPrimary": False,
        "namespaceRegex": [],
    }
