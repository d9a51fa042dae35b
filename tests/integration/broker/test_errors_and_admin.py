"""Malformed requests get Pulsar's 4xx codes with a reason (never a 5xx); the admin read endpoints."""

from __future__ import annotations

import json

import httpx
import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.errors import RemoteConflictError, RemoteNotFoundError
from brokerlb.testing.waiting import eventually

from .helpers import lookup_data, new_namespace, owners_snapshot, topics_of

pytestmark = pytest.mark.asyncio(loop_scope="package")


@pytest.fixture(scope="module")
def ns() -> str:
    return new_namespace("errors")


BAD_REQUESTS = [
    # (method, path, body, status, text in the reason)
    ("GET", "/lookup/v2/topic/durable/public/default/t", None, 412, "unknown domain"),
    ("GET", "/lookup/v2/topic/persistent/pub$lic/default/t", None, 412, "Invalid topic name"),
    ("GET", "/lookup/v2/topic/persistent/public/t", None, 412, "expected /lookup/v2/topic"),
    ("GET", "/lookup/v2/topic/persistent/public/no-such-ns/t", None, 404, "does not exist"),
    ("GET", "/lookup/v2/topic/persistent/public/{ns}/t?authoritative=maybe", None, 400, "authoritative"),
    ("GET", "/lookup/v2/topic/persistent/public/no-such-ns/t/bundle", None, 404, "does not exist"),
    ("PUT", "/admin/v2/namespaces/public/{ns}", None, 409, "already exists"),
    ("PUT", "/admin/v2/namespaces/pub$lic/x", None, 412, "Invalid namespace name"),
    (
        "PUT",
        "/admin/v2/namespaces/public/bad-bundles",
        {"bundles": {"boundaries": ["0x00000010", "0xffffffff"]}},
        400,
        "do not cover the whole hash range",
    ),
    ("PUT", "/admin/v2/namespaces/public/bad-json", "{not json", 400, "not valid JSON"),
    ("GET", "/admin/v2/namespaces/public/no-such-ns/bundles", None, 404, "does not exist"),
    ("PUT", "/admin/v2/namespaces/public/{ns}/0x00000000/unload", None, 412, "Invalid bundle range"),
    ("PUT", "/admin/v2/namespaces/public/{ns}/0x00000000_0x00000001/unload", None, 404, "not found"),
    (
        "PUT",
        "/admin/v2/namespaces/public/{ns}/0x00000000_0x80000000/unload?destinationBroker=nowhere:1",
        None,
        412,
        "inactive destination broker",
    ),
    (
        "PUT",
        "/admin/v2/namespaces/public/{ns}/0x00000000_0x80000000/split?splitAlgorithmName=magic",
        None,
        412,
        "Unsupported namespace bundle split algorithm",
    ),
    (
        "PUT",
        "/admin/v2/namespaces/public/{ns}/0x00000000_0x80000000/split?splitAlgorithmName="
        "specified_positions_divide",
        None,
        412,
        "splitBoundaries must not be empty",
    ),
    (
        "PUT",
        "/admin/v2/namespaces/public/{ns}/0x80000000_0x00000000/split",
        None,
        412,
        "lower bound is not below upper bound",
    ),
    ("PUT", "/admin/v2/namespaces/public/{ns}/0x00000000_0x80000000/split", ["zz"], 412, "invalid request"),
    (
        "PUT",
        "/admin/v2/namespaces/public/{ns}/0x00000000_0x80000000/split?unload=perhaps",
        None,
        400,
        "unload",
    ),
    ("PUT", "/admin/v2/namespaces/public/{ns}/LARGEST/split", None, 404, "Bundle range LARGEST not found"),
    ("PUT", "/admin/v2/namespaces/public/{ns}/merge", ["0x00000000_0x80000000"], 412, "at least two"),
    ("PUT", "/admin/v2/namespaces/public/{ns}/merge", {"x": 1}, 400, "JSON list of bundle ranges"),
    ("POST", "/admin/v2/namespaces/public/{ns}/antiAffinity", "", 412, "Invalid antiAffinityGroup"),
    ("GET", "/admin/v2/namespaces/public/no-such-ns/antiAffinity", None, 404, "does not exist"),
    ("GET", "/admin/v2/brokers/e2e/nowhere:1/ownedNamespaces", None, 404, "not an active broker"),
    ("GET", "/admin/v2/brokers/other-cluster", None, 404, "does not exist"),
    ("PUT", "/admin/v2/persistent/public/{ns}/p/partitions", 0, 406, "more than 0"),
    ("PUT", "/admin/v2/persistent/public/{ns}/p/partitions", "three", 400, "not valid JSON"),
    ("PUT", "/admin/v2/persistent/public/{ns}/p/partitions", '"three"', 400, "JSON integer"),
    ("PUT", "/admin/v2/persistent/public/no-such-ns/p/partitions", 3, 404, "does not exist"),
    ("PUT", "/admin/v2/persistent/public/{ns}/p-partition-1/partitions", 3, 412, "-partition-"),
    (
        "POST",
        "/admin/v2/clusters/e2e/namespaceIsolationPolicies/p1",
        {"namespaces": []},
        400,
        "Invalid namespace isolation policy",
    ),
    ("POST", "/admin/v2/clusters/nope/failureDomains/d1", {"brokers": []}, 412, "does not exist"),
    ("GET", "/admin/v2/clusters/e2e/failureDomains/none", None, 404, "does not exist"),
    ("GET", "/admin/v2/no/such/route", None, 404, "Route not found"),
    ("DELETE", "/admin/v2/brokers", None, 405, "not allowed"),
]


async def test_malformed_requests_get_pulsars_4xx_with_a_reason(cluster, store, ns) -> None:
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=2)
    await lookup_data(cluster.urls[0], topics_of(ns, 20))
    before = await owners_snapshot(store, ns, require_all_owned=True)
    failures = []
    async with httpx.AsyncClient(base_url=cluster.urls[1], follow_redirects=True, timeout=30) as client:
        for method, path, body, status, reason in BAD_REQUESTS:
            path = path.replace("{ns}", ns.split("/")[1])
            content = None if body is None else (body if isinstance(body, str) else json.dumps(body))
            headers = {} if content is None else {"content-type": "application/json"}
            response = await client.request(method, path, content=content, headers=headers)
            try:
                got = response.json().get("reason", "")
            except ValueError:
                got = response.text
            if response.status_code != status or reason not in got:
                failures.append(
                    f"{method} {path}: {response.status_code} {got!r} (want {status}, {reason!r})"
                )
    assert not failures, "\n".join(failures)
    # nothing stored was changed by them: same bundles, same owners, no namespace half-created
    after = await owners_snapshot(store, ns, require_all_owned=True)
    assert after.bundles[ns].to_json() == before.bundles[ns].to_json()
    assert after.owner_ids() == before.owner_ids()
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        names = await admin.get_namespaces("public")
    assert not {"public/bad-bundles", "public/bad-json", "pub$lic/x"} & set(names)


async def test_failure_domains_refuse_a_broker_in_two_domains(cluster) -> None:
    broker = cluster.broker_ids[0]
    async with AsyncAdminClient(cluster.urls[2]) as admin:
        await admin.set_failure_domain("e2e", "rack-a", [broker])
        with pytest.raises(RemoteConflictError) as conflict:  # also a ConflictError
            await admin.set_failure_domain("e2e", "rack-b", [broker])
        assert conflict.value.status == 409
        assert await admin.get_failure_domains("e2e") == {"rack-a": {"brokers": [broker]}}
        await admin.delete_failure_domain("e2e", "rack-a")
        assert await admin.get_failure_domains("e2e") == {}


async def test_isolation_policies_round_trip(cluster) -> None:
    policy = {
        "namespaces": ["public/iso-.*"],
        "primary": [r"127\.0\.0\.1:.*"],
        "secondary": [],
        "auto_failover_policy": {
            "policy_type": "min_available",
            "parameters": {"min_limit": "1", "usage_threshold": "80"},
        },
    }
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.set_isolation_policy("e2e", "iso", policy)
        assert (await admin.get_isolation_policy("e2e", "iso"))["primary"] == policy["primary"]
        assert list(await admin.get_isolation_policies("e2e")) == ["iso"]
        ns = new_namespace("iso")
        await admin.create_namespace(ns, num_bundles=2)
        await lookup_data(cluster.urls[0], topics_of(ns, 10))
        owned = {}
        for broker in cluster.broker_ids:
            owned.update(
                {
                    b: s
                    for b, s in (await admin.get_owned_namespaces("e2e", broker)).items()
                    if b.startswith(ns)
                }
            )
        assert owned and all(
            s["is_controlled"] and s["broker_assignment"] == "primary" for s in owned.values()
        )
        await admin.delete_isolation_policy("e2e", "iso")
        with pytest.raises(RemoteNotFoundError) as missing:  # also a NotFoundError
            await admin.get_isolation_policy("e2e", "iso")
        assert missing.value.status == 404


async def test_anti_affinity_group(cluster) -> None:
    ns1, ns2 = new_namespace("aa"), new_namespace("aa")
    async with AsyncAdminClient(cluster.urls[1]) as admin:
        for ns in (ns1, ns2):
            await admin.create_namespace(ns, num_bundles=1)
            await admin.set_anti_affinity_group(ns, "group-e2e")
        assert await admin.get_anti_affinity_group(ns1) == "group-e2e"
        assert sorted(await admin.get_anti_affinity_namespaces("e2e", "group-e2e")) == sorted([ns1, ns2])
        answers = await lookup_data(cluster.urls[1], [f"persistent://{ns1}/x", f"persistent://{ns2}/y"])
        assert len({a["httpUrl"] for a in answers.values()}) == 2, "anti-affinity: the two land apart"
        await admin.delete_anti_affinity_group(ns1)
        assert await admin.get_anti_affinity_group(ns1) is None


async def test_broker_views_and_reports(cluster, store) -> None:
    ns = new_namespace("views")
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        assert sorted(await admin.get_active_brokers()) == sorted(cluster.broker_ids)
        assert sorted(await admin.get_active_brokers("e2e")) == sorted(cluster.broker_ids)
        leader = await admin.get_leader_broker()
        assert (
            leader["brokerId"] in cluster.broker_ids
            and leader["serviceUrl"] == f"http://{leader['brokerId']}"
        )
        await admin.create_namespace(ns, num_bundles=4)
        topics = topics_of(ns, 40)
        await lookup_data(cluster.urls[0], topics)
        snap = await owners_snapshot(store, ns, require_all_owned=True)
        for broker, url in zip(cluster.broker_ids, cluster.urls, strict=True):

            async def heartbeats_owned(broker: str = broker) -> dict[str, object] | None:
                owned = await admin.get_owned_namespaces("e2e", broker)  # redirected to that broker
                return owned if any(b.startswith("pulsar/") for b in owned) else None

            # a broker takes its heartbeat namespaces as it starts; its table sees the take soon after
            owned = await eventually(
                heartbeats_owned, 60, interval=0.2, message="each broker owns its heartbeat namespaces"
            )
            mine = {b for b, owner in snap.owners.items() if owner == broker}
            assert mine == {b for b in owned if b.startswith(ns)}
            async with AsyncAdminClient(url) as direct:
                report = await direct.get_load_report()
                assert report["webServiceUrl"] == url and report["loadReportType"] == "LocalBrokerData"
                assert set(mine) <= set(report["bundles"])  # idle owned bundles are reported too
                assert await direct.get_topics_stats() == {}
                assert await direct.health_check() == "ok"
        bundle = snap.bundles[ns].bundles[0]
        positions = await admin.topic_hash_positions(
            ns, bundle.range, [t for t in topics if bundle.includes(t)][:3]
        )
        assert positions["bundle"] == bundle.range and len(positions["topicHashPositions"]) == 3
