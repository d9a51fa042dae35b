"""The admin API a pulsar-admin user reaches for, end to end: tenants, namespace policies and deletion,
topics, cluster data, broker version and dynamic configuration, the brokers' isolation view.

Runs on the embedded store and on real ZooKeeper (broker processes); bad input gets Pulsar's 4xx with a
reason naming what is wrong, and the store is read before and after to show nothing was changed.
"""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from brokerlb import __version__
from brokerlb.admin import AsyncAdminClient
from brokerlb.coordination.paths import managed_ledger_path, partitioned_topic_path, policies_path
from brokerlb.errors import RemoteBrokerError
from brokerlb.testing.waiting import eventually

from .helpers import lookup_data, new_namespace, store_tree, topics_of

pytestmark = pytest.mark.asyncio(loop_scope="package")

STORED = (
    "/admin/policies",
    "/admin/configuration",
    "/admin/clusters",
    "/admin/partitioned-topics",
    "/managed-ledgers",
)


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def _snapshot(store) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for root in STORED:
        out.update(await store_tree(store, root))
    return out


async def test_default_tenants_and_cluster_data(cluster) -> None:
    async with AsyncAdminClient(cluster.urls[1]) as admin:
        assert {"public", "pulsar"} <= set(await admin.get_tenants())
        assert await admin.get_tenant("public") == {"adminRoles": [], "allowedClusters": ["e2e"]}
        data = await admin.get_cluster("e2e")
        assert data["serviceUrl"] in cluster.urls and data["brokerServiceUrl"].startswith("pulsar://")
        assert "e2e" in await admin.get_clusters()


async def test_tenant_life_cycle(cluster, store) -> None:
    tenant = _name("acme")
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_tenant(tenant, allowed_clusters=["e2e"], admin_roles=["ops"])
        assert await admin.get_tenant(tenant) == {"adminRoles": ["ops"], "allowedClusters": ["e2e"]}
        await admin.update_tenant(tenant, allowed_clusters=["e2e"], admin_roles=["ops", "dev"])
        assert (await admin.get_tenant(tenant))["adminRoles"] == ["dev", "ops"]
        assert tenant in await admin.get_tenants()
        await admin.create_namespace(f"{tenant}/ns", num_bundles=2)
        assert await admin.get_namespaces(tenant) == [f"{tenant}/ns"]
        with pytest.raises(RemoteBrokerError) as busy:
            await admin.delete_tenant(tenant)
        assert busy.value.status == 409 and "active namespaces" in busy.value.reason
        await admin.delete_namespace(f"{tenant}/ns")
        await admin.delete_tenant(tenant)
        with pytest.raises(RemoteBrokerError) as gone:
            await admin.get_tenant(tenant)
        assert gone.value.status == 404
    assert await store.exists(f"/admin/policies/{tenant}") is None


async def test_bad_admin_input_gets_pulsars_4xx_and_changes_nothing(cluster, store) -> None:
    ns = new_namespace("bad")
    restricted = _name("restricted")
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_tenant(restricted, allowed_clusters=["global"])
        await admin.create_namespace(ns, num_bundles=2)
        await admin.create_topic(f"persistent://{ns}/existing")
        await admin.create_partitioned_topic(f"persistent://{ns}/p", 2)
    bad = [
        # (method, path, body, status, text in the reason)
        ("PUT", "/admin/v2/tenants/t-{u}", {"allowedClusters": []}, 412, "Clusters can not be empty"),
        ("PUT", "/admin/v2/tenants/t-{u}", {"allowedClusters": ["nowhere"]}, 412, "Clusters do not exist"),
        ("PUT", "/admin/v2/tenants/bad$name", {"allowedClusters": ["e2e"]}, 412, "Tenant name is not valid"),
        ("PUT", "/admin/v2/tenants/public", {"allowedClusters": ["e2e"]}, 409, "already exists"),
        ("PUT", "/admin/v2/tenants/t-{u}", "{not json", 400, "not valid JSON"),
        ("PUT", "/admin/v2/tenants/t-{u}", {"allowedClusters": "e2e"}, 400, "must be a list"),
        ("PUT", "/admin/v2/tenants/t-{u}", None, 400, "TenantInfo body is required"),
        ("POST", "/admin/v2/tenants/t-{u}", {"allowedClusters": ["e2e"]}, 404, "not found"),
        ("DELETE", "/admin/v2/tenants/t-{u}", None, 404, "doesn't exist"),
        ("DELETE", "/admin/v2/tenants/public", None, 409, "active namespaces"),
        ("DELETE", "/admin/v2/tenants/public?force=true", None, 405, "forced deletion of tenants"),
        ("GET", "/admin/v2/tenants/t-{u}", None, 404, "does not exist"),
        ("PUT", "/admin/v2/namespaces/t-{u}/ns", None, 404, "Tenant t-{u} does not exist"),
        ("PUT", f"/admin/v2/namespaces/{restricted}/ns", None, 403, "not in the list of allowed clusters"),
        ("GET", "/admin/v2/namespaces/t-{u}", None, 404, "does not exist"),
        ("GET", "/admin/v2/namespaces/public/no-such-ns", None, 404, "does not exist"),
        ("DELETE", "/admin/v2/namespaces/public/no-such-ns", None, 404, "does not exist"),
        ("DELETE", f"/admin/v2/namespaces/{ns}", None, 409, "Cannot delete non empty namespace"),
        ("DELETE", f"/admin/v2/namespaces/{ns}?force=true", None, 405, "forced deletion of namespaces"),
        ("GET", "/admin/v2/persistent/public/no-such-ns", None, 404, "does not exist"),
        ("PUT", "/admin/v2/persistent/public/no-such-ns/t", None, 404, "does not exist"),
        ("PUT", f"/admin/v2/persistent/{ns}/existing", None, 409, "This topic already exists"),
        ("PUT", f"/admin/v2/persistent/{ns}/p", None, 409, "This topic already exists"),
        ("PUT", f"/admin/v2/persistent/{ns}/p-partition-7", None, 412, "-partition-"),
        ("PUT", f"/admin/v2/persistent/{ns}/t", [1], 400, "properties"),
        ("PUT", f"/admin/v2/persistent/{ns}/existing/partitions", 2, 409, "already exists"),
        ("PUT", f"/admin/v2/persistent/{ns}/p/partitions", 2, 409, "already exists"),
        ("GET", f"/admin/v2/persistent/{ns}/nothing/stats", None, 404, "not found"),
        ("GET", f"/admin/v2/persistent/{ns}/nothing/subscriptions", None, 404, "not found"),
        (
            "GET",
            f"/admin/v2/persistent/{ns}/nothing/partitioned-stats",
            None,
            404,
            "Partitioned Topic not found",
        ),
        ("DELETE", f"/admin/v2/persistent/{ns}/nothing", None, 404, "not found"),
        ("DELETE", f"/admin/v2/persistent/{ns}/p", None, 409, "delete-partitioned-topic"),
        ("DELETE", f"/admin/v2/persistent/{ns}/nothing/partitions", None, 404, "not a partitioned topic"),
        ("GET", "/admin/v2/durable/public/default", None, 404, "Route not found"),
        ("POST", "/admin/v2/brokers/configuration/clusterName/x", None, 412, "non-dynamic"),
        ("POST", "/admin/v2/brokers/configuration/noSuchKey/1", None, 412, "non-dynamic"),
        (
            "POST",
            "/admin/v2/brokers/configuration/loadBalancerBrokerOverloadedThresholdPercentage/abc",
            None,
            412,
            "Invalid dynamic-config value",
        ),
        ("DELETE", "/admin/v2/brokers/configuration/clusterName", None, 412, "non-dynamic"),
        ("GET", "/admin/v2/clusters/nope", None, 404, "does not exist"),
        ("GET", "/admin/v2/clusters/nope/namespaceIsolationPolicies/brokers", None, 412, "does not exist"),
    ]
    before = await _snapshot(store)
    unique = uuid.uuid4().hex[:8]
    failures = []
    async with httpx.AsyncClient(base_url=cluster.urls[2], follow_redirects=True, timeout=30) as client:
        for method, path, body, status, reason in bad:
            path, reason = path.replace("{u}", unique), reason.replace("{u}", unique)
            content = None if body is None else (body if isinstance(body, str) else json.dumps(body))
            response = await client.request(
                method, path, content=content, headers={"Content-Type": "application/json"}
            )
            try:
                got = response.json().get("reason", "")
            except (ValueError, AttributeError):
                got = response.text
            if response.status_code != status or reason not in got:
                failures.append(
                    f"{method} {path}: {response.status_code} {got!r} (want {status}, {reason!r})"
                )
    assert not failures, "\n".join(failures)
    after = await _snapshot(store)
    assert after == before, f"changed: {sorted(set(after.items()) ^ set(before.items()))[:5]}"
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.delete_partitioned_topic(f"persistent://{ns}/p")
        await admin.delete_topic(f"persistent://{ns}/existing")
        await admin.delete_namespace(ns)
        await admin.delete_tenant(restricted)


async def test_namespace_policies_and_deletion(cluster, store) -> None:
    ns = new_namespace("nsdel")
    async with AsyncAdminClient(cluster.urls[1]) as admin:
        await admin.create_namespace(ns, num_bundles=2)
        policies = await admin.get_namespace_policies(ns)
        assert policies["bundles"] == await admin.get_bundles(ns)
        assert policies["replication_clusters"] == ["e2e"] and policies["deleted"] is False
        topic = f"persistent://{ns}/t0"
        await admin.create_topic(topic)
        await lookup_data(cluster.urls[0], topics_of(ns, 8))
        with pytest.raises(RemoteBrokerError) as busy:
            await admin.delete_namespace(ns)
        assert busy.value.status == 409
        await admin.delete_topic(topic)
        await admin.delete_namespace(ns)
        with pytest.raises(RemoteBrokerError) as gone:
            await admin.get_namespace_policies(ns)
        assert gone.value.status == 404
        assert ns not in await admin.get_namespaces("public")
    for path in (policies_path(ns), f"/admin/local-policies/{ns}", managed_ledger_path(topic)):
        assert await store.exists(path) is None, path

    async def no_owned_bundles() -> bool:
        try:
            return not await store.children(f"/namespace/{ns}")
        except Exception:
            return True

    await eventually(no_owned_bundles, timeout=30, message=f"the bundles of {ns} released")


async def test_topic_life_cycle_from_any_broker(cluster, store) -> None:
    ns = new_namespace("topics")
    topic, parted = f"persistent://{ns}/t", f"persistent://{ns}/p"
    async with (
        AsyncAdminClient(cluster.urls[0]) as a0,
        AsyncAdminClient(cluster.urls[1]) as a1,
        AsyncAdminClient(cluster.urls[2]) as a2,
    ):
        await a0.create_namespace(ns, num_bundles=4)
        await a1.create_topic(topic, {"team": "core"})
        assert await a2.get_topics(ns) == [topic]
        stats = await a0.get_topic_stats(topic)
        assert (stats["msgRateIn"], stats["publishers"], stats["subscriptions"]) == (0.0, [], {})
        assert await a2.get_subscriptions(topic) == []
        await a2.create_partitioned_topic(parted, 3)
        assert await a0.get_partitioned_topics(ns) == [parted]
        assert await a1.get_topics(ns) == sorted([topic] + [f"{parted}-partition-{i}" for i in range(3)])
        pstats = await a1.get_partitioned_stats(parted)
        assert pstats["metadata"] == {"partitions": 3}
        assert sorted(pstats["partitions"]) == [f"{parted}-partition-{i}" for i in range(3)]
        assert "partitions" not in await a1.get_partitioned_stats(parted, per_partition=False)
        assert await store.exists(managed_ledger_path(f"{parted}-partition-2")) is not None
        await a0.delete_partitioned_topic(parted)
        assert await a2.get_partitioned_topics(ns) == []
        assert await a2.get_topics(ns) == [topic]
        assert await store.exists(partitioned_topic_path(parted)) is None
        assert await store.exists(managed_ledger_path(f"{parted}-partition-0")) is None
        await a2.delete_topic(topic)
        assert await a0.get_topics(ns) == []
        with pytest.raises(RemoteBrokerError) as gone:
            await a1.get_topic_stats(topic)
        assert gone.value.status == 404


async def test_non_persistent_topics_are_listed_while_served(cluster) -> None:
    ns = new_namespace("np")
    topic = f"non-persistent://{ns}/live"
    async with AsyncAdminClient(cluster.urls[2]) as admin:
        await admin.create_namespace(ns, num_bundles=2)
        await admin.create_topic(topic)
        assert await admin.get_topics(ns, "non-persistent") == [topic]
        assert await admin.get_topics(ns, "persistent") == []
        assert (await admin.get_topic_stats(topic))["msgRateIn"] == 0.0
        await admin.delete_topic(topic)
        assert await admin.get_topics(ns, "non-persistent") == []


async def test_dynamic_configuration_reaches_every_broker(cluster) -> None:
    key = "loadBalancerBrokerOverloadedThresholdPercentage"
    async with AsyncAdminClient(cluster.urls[1]) as admin:
        assert key in await admin.get_dynamic_config_names()
        assert "clusterName" not in await admin.get_dynamic_config_names()
        try:
            await admin.update_dynamic_config(key, "91")
            assert (await admin.get_dynamic_config())[key] == "91"
            for url in cluster.urls:
                async with AsyncAdminClient(url) as each:

                    async def applied(each: AsyncAdminClient = each) -> bool:
                        return (await each.get_runtime_config())[key] == "91"

                    await eventually(applied, timeout=20, message=f"{key}=91 applied on {url}")
        finally:
            await admin.delete_dynamic_config(key)
        assert key not in await admin.get_dynamic_config()
        for url in cluster.urls:
            async with AsyncAdminClient(url) as each:

                async def restored(each: AsyncAdminClient = each) -> bool:
                    return (await each.get_runtime_config())[key] == "85"

                await eventually(restored, timeout=20, message=f"{key} back to 85 on {url}")


async def test_broker_fixed_paths_are_not_read_as_cluster_names(cluster) -> None:
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        assert await admin.get_version() == __version__
        assert "loadBalancerSheddingEnabled" in await admin.get_dynamic_config_names()
        internal = await admin.get_internal_config()
        assert internal["metadataStoreUrl"] == cluster.store_url
        assert isinstance(await admin.get_dynamic_config(), dict)


async def test_isolation_view_of_the_brokers(cluster) -> None:
    primary, other = cluster.broker_ids[0], cluster.broker_ids[1]
    policy = {
        "namespaces": ["public/isolated-.*"],
        "primary": [primary.replace(".", r"\.")],
        "secondary": [],
        "auto_failover_policy": {
            "policy_type": "min_available",
            "parameters": {"min_limit": "1", "usage_threshold": "80"},
        },
    }
    async with AsyncAdminClient(cluster.urls[2]) as admin:
        await admin.set_isolation_policy("e2e", "brokers-view", policy)
        try:
            view = {d["brokerName"]: d for d in await admin.get_brokers_with_isolation_policies("e2e")}
            assert sorted(view) == sorted(cluster.broker_ids)
            assert view[primary] == {
                "brokerName": primary,
                "policyName": "brokers-view",
                "isPrimary": True,
                "namespaceRegex": ["public/isolated-.*"],
            }
            assert await admin.get_broker_with_isolation_policies("e2e", other) == {
                "brokerName": other,
                "isPrimary": False,
                "namespaceRegex": [],
            }
        finally:
            await admin.delete_isolation_policy("e2e", "brokers-view")
