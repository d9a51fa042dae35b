"""What the API fuzzing found, kept as explicit cases (``test_api_fuzzing.py`` finds them again if they return).

1. The document said 422 for every operation with parameters; brokerlb never answers 422
   (validation errors are 400, Pulsar-style ``{"reason"}``).
2. It listed only the success status: 404, 409, 412, 400, 415, 406 ... were answered undocumented
   (63 of 76 operations in the first run).
3. It described no request body at all, and a POST must declare JSON: a client following the
   document could not call ``POST /admin/v2/brokers/configuration/{key}/{value}`` (always 415).
4. ``/admin/v2/brokers/health`` and ``/ready`` documented their 503 without the body they send.
5. An encoded ``/`` in a path segment was routed as two segments: ``GET
   /admin/v2/namespaces/public/public%2Fdefault`` reached the bundle route and answered 405.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import pytest_asyncio

from brokerlb.testing.clusters import InProcessCluster

pytestmark = pytest.mark.asyncio(loop_scope="module")

JSON = {"content-type": "application/json"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api() -> Any:
    cluster = await InProcessCluster(1).start()
    try:
        async with httpx.AsyncClient(base_url=cluster.urls[0], timeout=30) as client:
            spec = (await client.get("/openapi.json")).json()
            yield client, spec
    finally:
        await cluster.stop()


def documented(spec: dict[str, Any], method: str, template: str) -> set[int]:
    return {int(code) for code in spec["paths"][template][method.lower()]["responses"] if code.isdigit()}


async def test_the_document_says_how_errors_look(api) -> None:
    _client, spec = api
    assert spec["components"]["schemas"]["ErrorData"]["required"] == ["reason"]
    for template, methods in spec["paths"].items():
        for method, operation in methods.items():
            responses = operation["responses"]
            assert "422" not in responses, f"{method} {template}"
            assert "400" in responses, f"{method} {template}"
            if operation["x-brokerlb-access"] not in ("public", "metrics"):
                assert {"401", "403", "503"} <= responses.keys(), f"{method} {template}"
            if method == "post":
                assert "application/json" in operation["requestBody"]["content"], f"{method} {template}"
            for code, answer in responses.items():
                if code.isdigit() and int(code) >= 400:
                    schema = answer["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorData"}, f"{method} {template} {code}"


@pytest.mark.parametrize(
    ("method", "template", "path", "body", "headers", "status"),
    [
        ("GET", "/admin/v2/tenants/{tenant}", "/admin/v2/tenants/no-such", None, {}, 404),
        ("PUT", "/admin/v2/tenants/{tenant}", "/admin/v2/tenants/t-x", None, {}, 400),
        ("PUT", "/admin/v2/tenants/{tenant}", "/admin/v2/tenants/t-x", "{}", JSON, 412),
        (
            "PUT",
            "/admin/v2/tenants/{tenant}",
            "/admin/v2/tenants/public",
            '{"allowedClusters": ["e2e"]}',
            JSON,
            409,
        ),
        (
            "DELETE",
            "/admin/v2/namespaces/{tenant}/{namespace}",
            "/admin/v2/namespaces/public/none",
            None,
            {},
            404,
        ),
        (
            "GET",
            "/admin/v2/namespaces/{tenant}/{namespace}",
            "/admin/v2/namespaces/public/a%20b",
            None,
            {},
            412,
        ),
        (
            "PUT",
            "/admin/v2/persistent/{tenant}/{namespace}/{topic}/partitions",
            "/admin/v2/persistent/public/default/p/partitions",
            "0",
            JSON,
            406,
        ),
        (
            "POST",
            "/admin/v2/brokers/configuration/{key}/{value}",
            "/admin/v2/brokers/configuration/loadBalancerSheddingEnabled/true",
            None,
            {},
            415,
        ),
        (
            "POST",
            "/admin/v2/brokers/configuration/{key}/{value}",
            "/admin/v2/brokers/configuration/loadBalancerSheddingEnabled/true",
            None,
            JSON,
            204,
        ),
        (
            "POST",
            "/admin/v2/brokers/configuration/{key}/{value}",
            "/admin/v2/brokers/configuration/clusterName/x",
            None,
            JSON,
            412,
        ),
    ],
)
async def test_answers_are_documented(api, method, template, path, body, headers, status) -> None:
    client, spec = api
    r = await client.request(method, path, content=body, headers=headers)
    assert r.status_code == status, r.text
    assert status in documented(spec, method, template), f"{status} not documented for {method} {template}"
    if status >= 400:
        assert isinstance(json.loads(r.content)["reason"], str)


async def test_health_and_ready_document_their_503_body(api) -> None:
    _client, spec = api
    for path in ("/admin/v2/brokers/health", "/admin/v2/brokers/ready"):
        answer = spec["paths"][path]["get"]["responses"]["503"]
        assert answer["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorData")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/admin/v2/namespaces/public/public%2Fdefault"),
        ("PUT", "/admin/v2/namespaces/public/public%2fdefault"),
        ("GET", "/admin/v2/persistent/public/default/a%2Fb/stats"),
        ("DELETE", "/admin/v2/namespaces/public/x%2F0x00000000_0x40000000"),
    ],
)
async def test_an_encoded_slash_is_not_a_path_separator(api, method, path) -> None:
    client, _spec = api
    r = await client.request(method, path, headers=JSON if method != "GET" else {})
    assert r.status_code == 400, r.text
    assert "%2F" in r.json()["reason"]
