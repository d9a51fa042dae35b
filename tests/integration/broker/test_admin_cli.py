"""``brokerlb admin`` verbs for tenants, namespaces, topics, clusters and failure domains, isolation
policies, broker version and dynamic configuration, against a live cluster (embedded store and ZooKeeper).

The CLI runs in a worker thread (typer's runner, blocking HTTP) while the cluster serves on the loop.
"""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from typer.testing import CliRunner

from brokerlb.cli.admin import app

from .helpers import new_namespace

pytestmark = pytest.mark.asyncio(loop_scope="package")


async def cli(url: str, *args: str, as_json: bool = True, code: int = 0) -> object:
    runner = CliRunner()
    argv = ["--url", url, "--json" if as_json else "--table", *args]
    result = await asyncio.to_thread(runner.invoke, app, argv, env={"COLUMNS": "200"})
    assert result.exit_code == code, f"{argv}: {result.exit_code}\n{result.output}"
    if as_json and code == 0:
        return json.loads(result.output) if result.output.strip() else None
    return result.output


async def test_tenant_namespace_and_topic_verbs(cluster) -> None:
    url = cluster.urls[0]
    tenant = f"cli-{uuid.uuid4().hex[:8]}"
    ns = f"{tenant}/app"
    topic = f"persistent://{ns}/t"
    await cli(url, "tenants", "create", tenant, "-c", "e2e", "-r", "ops,dev")
    assert await cli(url, "tenants", "get", tenant) == {
        "adminRoles": ["dev", "ops"],
        "allowedClusters": ["e2e"],
    }
    await cli(url, "tenants", "update", tenant, "--allowed-clusters", "e2e")
    assert tenant in await cli(url, "tenants", "list")
    await cli(url, "namespaces", "create", ns, "--bundles", "2")
    assert await cli(url, "namespaces", "list", tenant) == [ns]
    assert (await cli(url, "namespaces", "policies", ns))["bundles"]["numBundles"] == 2
    await cli(url, "topics", "create", topic)
    await cli(url, "topics", "create-partitioned-topic", f"persistent://{ns}/p", "-p", "2")
    assert await cli(url, "topics", "list-partitioned-topics", ns) == [f"persistent://{ns}/p"]
    assert topic in await cli(url, "topics", "list", ns)
    assert (await cli(url, "topics", "stats", topic))["publishers"] == []
    assert (await cli(url, "topics", "partitioned-stats", f"persistent://{ns}/p"))["metadata"] == {
        "partitions": 2
    }
    assert await cli(url, "topics", "subscriptions", topic) == []
    table = await cli(url, "topics", "stats", topic, as_json=False)
    assert "msgRateIn" in table and "publishers" in table
    error = await cli(url, "namespaces", "delete", ns, as_json=False, code=1)
    assert "Cannot delete non empty namespace" in error
    await cli(url, "topics", "delete-partitioned-topic", f"persistent://{ns}/p")
    await cli(url, "topics", "delete", topic)
    await cli(url, "namespaces", "delete", ns)
    await cli(url, "tenants", "delete", tenant)
    assert tenant not in await cli(url, "tenants", "list")


async def test_cluster_failure_domain_and_isolation_verbs(cluster) -> None:
    url, broker = cluster.urls[1], cluster.broker_ids[0]
    assert (await cli(url, "clusters", "get", "e2e"))["serviceUrl"] in cluster.urls
    assert "e2e" in await cli(url, "clusters", "list")
    await cli(
        url, "clusters", "create-failure-domain", "e2e", "--domain-name", "cli-rack", "--broker-list", broker
    )
    assert await cli(url, "clusters", "get-failure-domain", "e2e", "--domain-name", "cli-rack") == {
        "brokers": [broker]
    }
    await cli(
        url, "clusters", "update-failure-domain", "e2e", "--domain-name", "cli-rack", "--broker-list", broker
    )
    assert "cli-rack" in await cli(url, "clusters", "list-failure-domains", "e2e")
    await cli(url, "clusters", "delete-failure-domain", "e2e", "--domain-name", "cli-rack")
    assert "cli-rack" not in await cli(url, "clusters", "list-failure-domains", "e2e")

    primary = broker.replace(".", r"\.")
    await cli(url, "ns-isolation-policy", "set", "e2e", "cli-policy", "--namespaces", "public/cli-iso-.*",
              "--primary", primary, "--auto-failover-policy-params", "min_limit=1,usage_threshold=70")  # fmt: skip
    policy = await cli(url, "ns-isolation-policy", "get", "e2e", "cli-policy")
    assert policy["primary"] == [primary]
    assert policy["auto_failover_policy"]["parameters"] == {"min_limit": "1", "usage_threshold": "70"}
    assert "cli-policy" in await cli(url, "ns-isolation-policy", "list", "e2e")
    brokers = await cli(url, "ns-isolation-policy", "brokers", "e2e")
    assert {b["brokerName"]: b.get("policyName") for b in brokers}[broker] == "cli-policy"
    assert (await cli(url, "ns-isolation-policy", "broker", "e2e", "--broker", broker))["isPrimary"] is True
    assert "cli-policy" in await cli(url, "ns-isolation-policy", "list", "e2e", as_json=False)
    await cli(url, "ns-isolation-policy", "delete", "e2e", "cli-policy")
    assert "cli-policy" not in await cli(url, "ns-isolation-policy", "list", "e2e")
    bad = await cli(url, "ns-isolation-policy", "set", "e2e", "x", "--namespaces", "a", "--primary", "b",
                    "--auto-failover-policy-params", "nonsense", as_json=False, code=2)  # fmt: skip
    assert "key=value" in bad


async def test_broker_version_and_dynamic_configuration_verbs(cluster) -> None:
    url = cluster.urls[2]
    key = "loadBalancerSheddingGracePeriodMinutes"
    assert await cli(url, "brokers", "version")
    assert key in await cli(url, "brokers", "list-dynamic-config")
    await cli(url, "brokers", "update-dynamic-config", "--config", key, "--value", "7")
    try:
        assert (await cli(url, "brokers", "get-all-dynamic-config"))[key] == "7"
        for each in cluster.urls:
            for _ in range(200):  # the other brokers apply it from their watch
                if (await cli(each, "brokers", "get-runtime-config"))[key] == "7":
                    break
            else:
                raise AssertionError(f"{key}=7 not applied on {each}")
    finally:
        await cli(url, "brokers", "delete-dynamic-config", "--config", key)
    assert (await cli(url, "brokers", "get-internal-config"))["metadataStoreUrl"] == cluster.store_url
    refused = await cli(
        url, "brokers", "update-dynamic-config", "-c", "clusterName", "-v", "x", as_json=False, code=1
    )
    assert "non-dynamic" in refused
    ns = new_namespace("cliver")
    assert "does not exist" in await cli(url, "namespaces", "policies", ns, as_json=False, code=1)


async def test_balancer_status_verb(cluster) -> None:
    status = await cli(cluster.urls[0], "brokers", "balancer")
    assert status["state"] in ("ready", "in_progress") and status["leader"] in cluster.broker_ids
    table = await cli(cluster.urls[1], "brokers", "balancer", as_json=False)
    assert status["state"] in table and "balancedness" in table
