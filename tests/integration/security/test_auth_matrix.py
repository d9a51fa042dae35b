"""The auth matrix: every operation of the broker's OpenAPI document (so every route, including routes
added later) × no token / garbage token / unsigned JWT / token of another key / a role without the
permission / the role the route's declaration asks for.

Without valid credentials: 401; a role without permission: 403; the right role: neither (and never a
5xx for anyone). Reproduces the finding that namespace unloads, splits, forced bundle deletes and
isolation policies succeeded with no token, a garbage token or a fake JWT.
"""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from typing import Any

import httpx
import pytest
import pytest_asyncio
import websockets
from websockets.exceptions import InvalidStatus

from brokerlb.admin import AsyncAdminClient
from brokerlb.coordination import open_store
from brokerlb.security.tokens import create_secret_key, create_token, secret_key
from brokerlb.testing.clusters import InProcessCluster

pytestmark = pytest.mark.asyncio(loop_scope="module")

TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
SECRET = create_secret_key()
OTHER_SECRET = create_secret_key()


def token(role: str, key: bytes = SECRET) -> str:
    return create_token(secret_key(key), role)


def unsigned(role: str) -> str:
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part({'sub': role})}."


OVERRIDES = {
    "authenticationEnabled": True,
    "authorizationEnabled": True,
    "authenticationProviders": TOKEN_PROVIDER,
    "tokenSecretKey": "data:;base64," + base64.b64encode(SECRET).decode(),
    "superUserRoles": "admin,broker",
    "brokerClientAuthenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
    "brokerClientAuthenticationParameters": "token:" + token("broker"),
}

#: The role that passes each declaration (x-brokerlb-access).
RIGHT_ROLE = {
    "authenticated": "stranger",
    "super-user": "admin",
    "tenant-admin": "tenant-admin",
    "namespace-use": "app",
    "topic-lookup": "app",
    "topic-consume": "app",
}
#: Roles that do not: an admin of another tenant, a role with only some of the actions, no grants at all.
WRONG_ROLES = {
    "super-user": ["tenant-admin"],
    "tenant-admin": ["app", "other-admin"],
    "namespace-use": ["stranger", "other-admin"],
    "topic-lookup": ["stranger", "other-admin"],
    "topic-consume": ["producer", "stranger"],
}


async def granted_namespace(cluster: InProcessCluster) -> str:
    """A new namespace of ``public`` with the grants the roles above rely on, and a topic ``t1``."""
    ns = f"public/authz-{uuid.uuid4().hex[:8]}"
    async with AsyncAdminClient(cluster.urls[0], token=token("admin")) as admin:
        await admin.create_namespace(ns, num_bundles=4)
        await admin.grant_permission(ns, "app", ["produce", "consume"])
        await admin.grant_permission(ns, "producer", ["produce"])
        await admin.create_topic(f"persistent://{ns}/t1")
    return ns


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def secured() -> Any:
    cluster = await InProcessCluster(2, {**OVERRIDES, "clusterName": "e2e"}).start()
    try:
        async with AsyncAdminClient(cluster.urls[0], token=token("admin")) as admin:
            # tenant admins through the tenants API (TenantInfo adminRoles), as pulsar-admin tenants update
            await admin.update_tenant("public", allowed_clusters=["e2e"], admin_roles=["tenant-admin"])
            await admin.create_tenant("other", allowed_clusters=["e2e"], admin_roles=["other-admin"])
        yield cluster, await granted_namespace(cluster)
    finally:
        await cluster.stop()


def _operations(spec: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """Every operation; the deleting ones last (they may remove what the others use)."""
    ops = []
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            ops.append((method.upper(), path, op.get("x-brokerlb-access")))
    return sorted(ops, key=lambda op: op[0] == "DELETE")


def _fill(path: str, ns: str, broker: str) -> str:
    tenant, local = ns.split("/")
    values = {
        "tenant": tenant,
        "namespace": local,
        "cluster": "e2e",
        "bundle": "0x00000000_0x40000000",
        "domain": "persistent",
        "topic": "t1",
        "broker": broker,
        "name": "e2e" if path.startswith("/admin/v2/clusters/{name}") else "n1",
        "group": "g1",
        "role": "someone",
        "key": "loadBalancerSheddingIntervalMinutes",
        "value": "1",
    }
    for key, value in values.items():
        path = path.replace("{" + key + "}", value)
    assert "{" not in path, f"no value for a path parameter of {path}"
    return path


async def test_every_route_declares_its_access_and_enforces_it(secured) -> None:
    cluster, _ = secured
    ns = await granted_namespace(cluster)  # its own: the matrix deletes and re-creates what it is given
    url = cluster.urls[0]
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        spec = (await client.get("/openapi.json")).json()  # public: the API description
        operations = _operations(spec)
        undeclared = [(m, p) for m, p, a in operations if a is None]
        assert not undeclared, f"routes without an access declaration: {undeclared}"
        assert len(operations) >= 76
        failures: list[str] = []
        checked = 0
        for method, template, needed in operations:
            path = _fill(template, ns, cluster.broker_ids[0])
            body = json.dumps({}) if method in ("POST", "PUT") else None
            headers = {"content-type": "application/json"} if body else {}
            cases: list[tuple[str, str | None, set[int] | None]] = [
                ("no token", None, {401}),
                ("garbage token", "not-a-token", {401}),
                ("unsigned JWT", unsigned("admin"), {401}),
                ("token of another key", token("admin", OTHER_SECRET), {401}),
            ]
            for wrong in WRONG_ROLES.get(str(needed), []):
                cases.append((f"role {wrong}", token(wrong), {403}))
            if needed in ("public", "metrics"):  # metrics: public unless authenticateMetricsEndpoint
                cases = [("no token", None, None)]
            else:
                cases.append((f"role {RIGHT_ROLE[str(needed)]}", token(RIGHT_ROLE[str(needed)]), None))
            for label, credential, expected in cases:
                h = dict(headers)
                if credential is not None:
                    h["authorization"] = f"Bearer {credential}"
                r = await client.request(method, path, content=body, headers=h)
                checked += 1
                ok = r.status_code in expected if expected else r.status_code not in (401, 403)
                if not ok or r.status_code >= 500:
                    failures.append(f"{method} {path} [{needed}] {label}: {r.status_code} {r.text[:200]}")
        print(f"auth matrix: {len(operations)} operations, {checked} requests")
        assert not failures, f"{len(failures)} of {checked}:\n" + "\n".join(failures)
        assert checked >= 400


async def test_tenant_admin_roles_follow_the_tenants_api(secured) -> None:
    """adminRoles written through the tenants API decide who administers the tenant, at once; an
    unknown tenant is Pulsar's 404 "Tenant does not exist" for a role that is not a super-user."""
    cluster, _ns = secured
    async with (
        AsyncAdminClient(cluster.urls[0], token=token("admin")) as admin,
        httpx.AsyncClient(base_url=cluster.urls[1], timeout=30) as client,
    ):
        newcomer = {"authorization": f"Bearer {token('newcomer')}"}
        assert (await client.get("/admin/v2/namespaces/other", headers=newcomer)).status_code == 403
        await admin.update_tenant("other", allowed_clusters=["e2e"], admin_roles=["other-admin", "newcomer"])
        r = await client.get("/admin/v2/namespaces/other", headers=newcomer)
        assert r.status_code == 200 and r.json() == [], r.text
        await admin.update_tenant("other", allowed_clusters=["e2e"], admin_roles=["other-admin"])
        assert (await client.get("/admin/v2/namespaces/other", headers=newcomer)).status_code == 403
        r = await client.get("/admin/v2/namespaces/no-such-tenant", headers=newcomer)
        assert r.status_code == 404 and "Tenant" in r.json()["reason"], r.text


async def test_permissions_endpoints_as_pulsar(secured) -> None:
    cluster, ns = secured
    admin_h = {"authorization": f"Bearer {token('tenant-admin')}"}
    async with httpx.AsyncClient(base_url=cluster.urls[1], timeout=30, headers=admin_h) as client:
        r = await client.post(f"/admin/v2/namespaces/{ns}/permissions/reader", json=["consume"])
        assert r.status_code == 204, r.text
        assert (await client.get(f"/admin/v2/namespaces/{ns}/permissions")).json() == {
            "app": ["consume", "produce"],
            "producer": ["produce"],
            "reader": ["consume"],
        }
        r = await client.post(f"/admin/v2/namespaces/{ns}/permissions/reader", json=["read"])
        assert r.status_code == 400 and "Invalid actions" in r.json()["reason"]
        lookup = f"/lookup/v2/topic/persistent/{ns}/t-read"
        reader = {"authorization": f"Bearer {token('reader')}"}
        async with AsyncAdminClient(cluster.urls[1], token=token("reader")) as as_reader:
            assert (await as_reader.lookup_topic(f"persistent://{ns}/t-read"))["httpUrl"] in cluster.urls
        assert (await client.delete(f"/admin/v2/namespaces/{ns}/permissions/reader")).status_code == 204
        assert (await client.get(lookup, headers=reader)).status_code == 403
        assert (await client.get("/admin/v2/namespaces/public/no-such/permissions")).status_code == 404
    store = open_store(cluster.store_url, session_timeout=10.0)
    await store.start()
    try:
        stored = json.loads((await store.get(f"/admin/policies/{ns}")).data)
        assert stored["auth_policies"]["namespace_auth"] == {
            "app": ["consume", "produce"],
            "producer": ["produce"],
        }
        assert "bundles" in stored  # the rest of the policies is kept
    finally:
        await store.close()


async def test_brokers_call_each_other_with_their_token(secured) -> None:
    """A transfer: the leader asks the destination broker to take the bundle (broker-to-broker, with
    brokerClientAuthenticationParameters); an unload sent to a non-owner is redirected with the token."""
    cluster, ns = secured
    async with AsyncAdminClient(cluster.urls[0], token=token("admin")) as admin:
        await admin.lookup_topic(f"persistent://{ns}/t-move")
        bundle = await admin.topic_bundle_range(f"persistent://{ns}/t-move")
        owner = (await admin.lookup_topic(f"persistent://{ns}/t-move"))["httpUrl"]
        destination = next(b for b, u in zip(cluster.broker_ids, cluster.urls, strict=True) if u != owner)
        await admin.unload_bundle(ns, bundle, destination_broker=destination)
        moved = await admin.lookup_topic(f"persistent://{ns}/t-move")
        assert moved["httpUrl"].endswith(destination.split(":")[1])


async def test_websocket_takes_the_token_query_parameter(secured) -> None:
    cluster, ns = secured
    ws_base = cluster.urls[0].replace("http://", "ws://")
    producer = f"{ws_base}/ws/v2/producer/persistent/{ns}/t-ws"
    for suffix, status in (("", 401), ("?token=garbage", 401), (f"?token={token('stranger')}", 403)):
        with pytest.raises(InvalidStatus) as info:
            async with websockets.connect(producer + suffix, open_timeout=10):
                pass
        assert info.value.response.status_code == status, suffix
    consumer = f"{ws_base}/ws/v2/consumer/persistent/{ns}/t-ws/sub?token={token('app')}"
    async with AsyncAdminClient(cluster.urls[0], token=token("admin")) as admin:
        owner = (await admin.lookup_topic(f"persistent://{ns}/t-ws"))["httpUrl"]
    ws_owner = owner.replace("http://", "ws://")
    async with websockets.connect(
        f"{ws_owner}/ws/v2/producer/persistent/{ns}/t-ws?token={token('app')}", open_timeout=10
    ) as ws:
        await ws.send(json.dumps({"payload": base64.b64encode(b"hi").decode(), "context": "1"}))
        assert json.loads(await ws.recv())["result"] == "ok"
    with pytest.raises(InvalidStatus) as info:
        async with websockets.connect(consumer.replace(token("app"), token("stranger")), open_timeout=10):
            pass
    assert info.value.response.status_code == 403
    async with websockets.connect(consumer.replace(ws_base, ws_owner), open_timeout=10):
        pass  # accepted: the app role may consume


async def test_cli_takes_credentials_as_pulsar_admin(secured, tmp_path) -> None:
    """``brokerlb admin --auth-plugin ... --auth-params token:...|file:///...`` (pulsar-admin's options):
    the permission verbs as a tenant admin; without credentials the CLI reports the 401."""
    from typer.testing import CliRunner

    from brokerlb.cli.admin import app

    cluster, ns = secured
    token_file = tmp_path / "tenant-admin.token"
    token_file.write_text(token("tenant-admin") + "\n")
    plugin = ["--auth-plugin", "org.apache.pulsar.client.impl.auth.AuthenticationToken"]

    async def cli(*args: str) -> Any:
        argv = ["--url", cluster.urls[1], "--json", *args]
        return await asyncio.to_thread(CliRunner().invoke, app, argv, env={"COLUMNS": "200"})

    by_file = [*plugin, "--auth-params", f"file://{token_file}"]
    result = await cli(
        *by_file, "namespaces", "grant-permission", ns, "--role", "cli-app", "--actions", "consume"
    )
    assert result.exit_code == 0, result.output
    result = await cli("--auth-params", f"token:{token('tenant-admin')}", "namespaces", "permissions", ns)
    assert result.exit_code == 0 and json.loads(result.output)["cli-app"] == ["consume"], result.output
    result = await cli(*by_file, "namespaces", "revoke-permission", ns, "--role", "cli-app")
    assert result.exit_code == 0, result.output
    result = await cli("namespaces", "permissions", ns)
    assert result.exit_code == 1 and "401" in result.output, result.output
