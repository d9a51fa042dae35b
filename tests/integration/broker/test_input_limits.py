"""Admin input is bounded: each bound answers a 4xx naming the bound (and its config key), and nothing
stored changes. Each case reproduces a finding: before the bounds these answered 500 (RecursionError,
MemoryError), stalled every broker (10,000,000 bundles, a backtracking regex) or were stored (a 100 MB
group name, 10 KB tenant names, 2^63 partitions, numBundles 0 silently replaced by the default,
boundaries silently sorted).
"""

from __future__ import annotations

import json
import logging
import socket
import uuid

import httpx
import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.errors import RemoteBrokerError
from brokerlb.testing import eventually
from brokerlb.testing.clusters import InProcessCluster

from .helpers import lookup_data, new_namespace, owners_snapshot, topics_of

pytestmark = pytest.mark.asyncio(loop_scope="package")

DEEP = "[" * 100_000
JSON = {"content-type": "application/json"}

LIMITS = [
    # (method, path, body, status, text in the reason)
    ("PUT", "/admin/v2/namespaces/public/deep-{u}", DEEP, 400, "brokerlbMaxJsonDepth"),
    ("PUT", "/admin/v2/namespaces/public/deep-{u}", "[" * 65 + "]" * 65, 400, "brokerlbMaxJsonDepth"),
    ("POST", "/admin/v2/clusters/e2e/namespaceIsolationPolicies/deep", DEEP, 400, "brokerlbMaxJsonDepth"),
    ("POST", "/admin/v2/namespaces/public/{ns}/antiAffinity", DEEP, 400, "brokerlbMaxJsonDepth"),
    ("PUT", "/admin/v2/persistent/public/{ns}/p/partitions", DEEP, 400, "brokerlbMaxJsonDepth"),
    (
        "PUT",
        "/admin/v2/namespaces/public/many-{u}",
        {"bundles": {"numBundles": 10_000_000}},
        400,
        "1..128 (loadBalancerNamespaceMaximumBundles)",
    ),
    (
        "PUT",
        "/admin/v2/namespaces/public/many-{u}",
        {"bundles": {"numBundles": 2**31}},
        400,
        "loadBalancerNamespaceMaximumBundles",
    ),
    (
        "PUT",
        "/admin/v2/namespaces/public/many-{u}",
        {"bundles": {"boundaries": [f"0x{i:08x}" for i in range(0, 2**32 - 1, 2**22)] + ["0xffffffff"]}},
        400,
        "loadBalancerNamespaceMaximumBundles",
    ),
    ("PUT", "/admin/v2/namespaces/public/zero-{u}", {"bundles": {"numBundles": 0}}, 400, "1..128"),
    ("PUT", "/admin/v2/namespaces/public/neg-{u}", {"bundles": {"numBundles": -1}}, 400, "1..128"),
    (
        "PUT",
        "/admin/v2/namespaces/public/order-{u}",
        {"bundles": {"boundaries": ["0x00000000", "0xc0000000", "0x40000000", "0xffffffff"]}},
        400,
        "strictly increasing",
    ),
    (
        "PUT",
        "/admin/v2/namespaces/public/dup-{u}",
        {"bundles": {"boundaries": ["0x00000000", "0x40000000", "0x40000000", "0xffffffff"]}},
        400,
        "strictly increasing",
    ),
    ("PUT", "/admin/v2/namespaces/" + "t" * 10_000 + "/x", None, 412, "brokerlbMaxNameLength"),
    ("PUT", "/admin/v2/namespaces/public/" + "n" * 256, None, 412, "brokerlbMaxNameLength"),
    ("PUT", "/admin/v2/persistent/public/{ns}/" + "p" * 256 + "/partitions", 2, 412, "brokerlbMaxNameLength"),
    ("PUT", "/admin/v2/persistent/public/{ns}/big/partitions", 2**63, 406, "less than or equal to"),
    ("PUT", "/admin/v2/persistent/public/{ns}/big/partitions", 2**31, 406, "less than or equal to"),
    ("POST", "/admin/v2/namespaces/public/{ns}/antiAffinity", "g" * 300, 400, "brokerlbMaxNameLength"),
    ("POST", "/admin/v2/namespaces/public/{ns}/antiAffinity", "g" * 2_000_000, 413, "httpMaxRequestSize"),
    (
        "POST",
        "/admin/v2/clusters/e2e/namespaceIsolationPolicies/" + "p" * 300,
        {"namespaces": ["x"], "primary": ["y"], "auto_failover_policy": {"policy_type": "min_available"}},
        400,
        "brokerlbMaxNameLength",
    ),
    (
        "POST",
        "/admin/v2/clusters/e2e/namespaceIsolationPolicies/backref",
        {
            "namespaces": ["public/(a)\\1"],
            "primary": [".*"],
            "auto_failover_policy": {
                "policy_type": "min_available",
                "parameters": {"min_limit": "1", "usage_threshold": "100"},
            },
        },
        400,
        "RE2",
    ),
]


@pytest.fixture
def ns() -> str:
    return new_namespace("limits")


async def test_bounded_input_answers_4xx_naming_the_bound(cluster, store, ns) -> None:
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=2)
        namespaces_before = await admin.get_namespaces("public")
        policies_before = await admin.get_isolation_policies("e2e")
    await lookup_data(cluster.urls[0], topics_of(ns, 10))
    before = await owners_snapshot(store, ns, require_all_owned=True)
    failures = []
    async with httpx.AsyncClient(base_url=cluster.urls[1], timeout=60) as client:
        for method, path, body, status, reason in LIMITS:
            path = path.replace("{ns}", ns.split("/")[1]).replace("{u}", ns.split("-")[-1])
            content = None if body is None else (body if isinstance(body, str) else json.dumps(body))
            response = await client.request(method, path, content=content, headers=JSON if content else {})
            got = response.json().get("reason", "") if response.content else ""
            if response.status_code != status or reason not in got:
                failures.append(
                    f"{method} {path[:90]}: {response.status_code} {got[:300]!r} (want {status}, {reason!r})"
                )
    assert not failures, "\n".join(failures)
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        assert await admin.get_namespaces("public") == namespaces_before
        assert await admin.get_isolation_policies("e2e") == policies_before
        assert await admin.get_anti_affinity_group(ns) is None
        assert (await admin.get_partitioned_topic_metadata(f"persistent://{ns}/big"))["partitions"] == 0
    after = await owners_snapshot(store, ns, require_all_owned=True)
    assert after.bundles[ns].to_json() == before.bundles[ns].to_json()


async def test_pulsars_lenient_bundles_are_an_option(request) -> None:
    """brokerlbStrictNamespaceBundles=false: numBundles 0 means the default, boundaries are sorted (Pulsar)."""
    from .conftest import make_cluster

    cluster = await make_cluster(
        "memory", request, brokers=1, overrides={"brokerlbStrictNamespaceBundles": False}
    )
    try:
        ns1, ns2 = new_namespace("lenient"), new_namespace("lenient")
        async with httpx.AsyncClient(base_url=cluster.urls[0], timeout=30) as client:
            for ns, bundles in (
                (ns1, {"numBundles": 0}),
                (ns2, {"boundaries": ["0x00000000", "0xc0000000", "0x40000000", "0xffffffff"]}),
            ):
                r = await client.put(f"/admin/v2/namespaces/{ns}", json={"bundles": bundles})
                assert r.status_code == 204, r.text
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            assert (await admin.get_bundles(ns1))["numBundles"] == 4
            assert (await admin.get_bundles(ns2))["boundaries"] == [
                "0x00000000",
                "0x40000000",
                "0xc0000000",
                "0xffffffff",
            ]
    finally:
        await cluster.stop()


async def test_state_changing_requests_need_a_json_body(cluster, ns) -> None:
    """A page on another origin can POST text/plain, forms or multipart without a preflight: all refused."""
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns + "-ct", num_bundles=1)
    async with httpx.AsyncClient(base_url=cluster.urls[0], timeout=30) as client:
        for content_type in (
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
        ):
            for method, path, body in (
                ("POST", f"/admin/v2/namespaces/{ns}-ct/antiAffinity", "g1"),
                ("POST", "/admin/v2/clusters/e2e/failureDomains/csrf", '{"brokers": []}'),
                ("PUT", "/admin/v2/namespaces/public/csrf-ns", "{}"),
            ):
                r = await client.request(method, path, content=body, headers={"content-type": content_type})
                assert r.status_code == 415, (method, path, content_type, r.status_code, r.text)
                assert "application/json" in r.json()["reason"]
        r = await client.post(f"/admin/v2/namespaces/{ns}-ct/antiAffinity")  # no body, no content type
        assert r.status_code == 415
        r = await client.post(f"/admin/v2/namespaces/{ns}-ct/antiAffinity", content="g1", headers=JSON)
        assert r.status_code == 204  # pulsar-admin's unquoted string body
        r = await client.put(f"/admin/v2/namespaces/{ns}-ct/unload")  # no body: no content type needed
        assert r.status_code == 204
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        assert await admin.get_anti_affinity_group(ns + "-ct") == "g1"
        assert await admin.get_failure_domains("e2e") == {}
        assert "public/csrf-ns" not in await admin.get_namespaces("public")


async def test_a_backtracking_regex_in_an_isolation_policy_does_not_stall_placement(cluster) -> None:
    """``public/(a+)+`` against ``public/aaa...ab`` is exponential for a backtracking engine (Python's
    ``re``, Java's); with RE2 the lookups below answer at once (pytest's timeout guards a hang)."""
    ns = "public/" + "a" * 60 + "b-" + uuid.uuid4().hex[:8]
    policy = {
        "namespaces": ["public/(a+)+"],
        "primary": ["no-such-broker"],  # every broker stays shared: only the namespace regex is evaluated
        "secondary": [],
        "auto_failover_policy": {
            "policy_type": "min_available",
            "parameters": {"min_limit": "1", "usage_threshold": "100"},
        },
    }
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.set_isolation_policy("e2e", "backtracking", policy)
        try:
            await admin.create_namespace(ns, num_bundles=4)
            answers = await lookup_data(cluster.urls[1], topics_of(ns, 20))
            assert len(answers) == 20
            owned = await admin.get_owned_namespaces("e2e", cluster.broker_ids[0])
            assert all(not v["is_controlled"] for k, v in owned.items() if k.startswith("public/aaa"))
        finally:
            await admin.delete_isolation_policy("e2e", "backtracking")


async def test_a_client_leaving_mid_body_is_not_an_error(
    cluster, ns, caplog: pytest.LogCaptureFixture
) -> None:
    if not isinstance(cluster, InProcessCluster):
        pytest.skip("reads the brokers' log records in this process")
    caplog.set_level(logging.DEBUG)
    host, port = cluster.urls[0].removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            f"PUT /admin/v2/namespaces/public/halfway HTTP/1.1\r\nHost: {host}\r\n"
            'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"bundles":'.encode()
        )
    await eventually(
        lambda: any("disconnected while sending" in r.getMessage() for r in caplog.records),
        message="the broker noticed the client left",
    )
    async with AsyncAdminClient(cluster.urls[0]) as admin:  # the broker goes on serving
        assert await admin.get_active_brokers()
        with pytest.raises(RemoteBrokerError) as info:
            await admin.get_bundles("public/halfway")
        assert info.value.status == 404
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]
