"""What the OpenAPI document (``/openapi.json``) says about bodies and answers, kept true.

A route states what FastAPI cannot see (its handlers read raw bodies and return raw
responses) next to its access declaration::

    @router.put(path, openapi_extra=access(Access.TENANT_ADMIN) | doc(body=TENANT_INFO, errors=(404, 409)))

* ``body`` -- the JSON request body's schema (``required`` by default);
* ``returns`` -- the JSON schema of the success answer;
* ``errors`` -- the statuses the route answers besides the ones every route may give;
* ``redirects`` -- the route may answer 307 (another broker must answer: Pulsar's redirect).

:func:`complete_responses` adds what holds for every operation, from the rules of
:mod:`brokerlb.broker.http.guard`, :mod:`brokerlb.broker.http.access` and the error handlers:
400 (bad input; the document's usual 422 is never answered -- validation errors are 400), 401
and 403 unless the route is public, 413 and 415 for operations with a body and every POST, 503
(the metadata store or the broker cannot serve it now; retriable), 404 and 412 for operations
with path parameters (what the path names does not exist, or is not a valid name -- Pulsar
answers 412 for invalid names). Every error answer is
Pulsar's ``{"reason": "..."}`` (``ErrorData``). The API fuzzing test holds the document to this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import FastAPI

__all__ = [
    "doc",
    "complete_responses",
    "ERROR_DATA",
    "STRINGS",
    "STRING_MAP",
    "ROLE_ACTIONS",
    "OBJECT",
    "TENANT_INFO",
    "LOOKUP_DATA",
    "BUNDLES_DATA",
    "PARTITIONED_METADATA",
    "POLICIES",
    "PARTITIONS",
    "ACTIONS",
    "TOPIC_PROPERTIES",
    "BUNDLE_RANGES",
    "SPLIT_POSITIONS",
    "ISOLATION_DATA",
    "FAILURE_DOMAIN",
    "ANTI_AFFINITY_GROUP",
    "ISOLATION_POLICIES",
    "FAILURE_DOMAINS",
    "MERGE_RESULT",
    "TOPIC_HASH_POSITIONS",
    "BROKER_INFO",
    "OWNED_NAMESPACES",
    "CLUSTER_DATA",
    "BROKER_ISOLATION_DATA",
    "BROKER_ISOLATION_LIST",
]

_REF = "#/components/schemas/ErrorData"
#: Pulsar's ``ErrorData``: every error answer.
ERROR_DATA: dict[str, Any] = {
    "type": "object",
    "properties": {"reason": {"type": "string"}},
    "required": ["reason"],
}

STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
STRING_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
OBJECT: dict[str, Any] = {"type": "object"}
ROLE_ACTIONS: dict[str, Any] = {"type": "object", "additionalProperties": STRINGS}
TENANT_INFO: dict[str, Any] = {
    "type": "object",
    "properties": {"adminRoles": STRINGS, "allowedClusters": STRINGS},
}
LOOKUP_DATA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "brokerUrl": {"type": "string"},
        "brokerUrlTls": {"type": "string"},
        "httpUrl": {"type": "string"},
        "httpUrlTls": {"type": "string"},
        "nativeUrl": {"type": "string"},
        "brokerUrlSsl": {"type": "string"},
    },
}
BUNDLES_DATA: dict[str, Any] = {
    "type": "object",
    "properties": {"boundaries": STRINGS, "numBundles": {"type": "integer"}},
    "required": ["boundaries", "numBundles"],
}
PARTITIONED_METADATA: dict[str, Any] = {
    "type": "object",
    "properties": {"partitions": {"type": "integer"}},
    "required": ["partitions"],
}
#: Policies at namespace creation (``bundles`` is what brokerlb reads; the rest is kept).
POLICIES: dict[str, Any] = {
    "type": "object",
    "properties": {
        "bundles": {
            "type": "object",
            "properties": {"numBundles": {"type": "integer"}, "boundaries": STRINGS},
        }
    },
}
PARTITIONS: dict[str, Any] = {"type": "integer"}
ACTIONS: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "enum": ["produce", "consume", "functions", "sources", "sinks", "packages"]},
}
TOPIC_PROPERTIES = STRING_MAP
BUNDLE_RANGES = STRINGS
SPLIT_POSITIONS: dict[str, Any] = {"type": "array", "items": {"type": "integer"}}
ISOLATION_DATA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "namespaces": STRINGS,
        "primary": STRINGS,
        "secondary": STRINGS,
        "auto_failover_policy": {
            "type": "object",
            "properties": {"policy_type": {"type": "string"}, "parameters": STRING_MAP},
        },
    },
}
FAILURE_DOMAIN: dict[str, Any] = {"type": "object", "properties": {"brokers": STRINGS}}
ANTI_AFFINITY_GROUP: dict[str, Any] = {"type": "string"}
ISOLATION_POLICIES: dict[str, Any] = {"type": "object", "additionalProperties": ISOLATION_DATA}
FAILURE_DOMAINS: dict[str, Any] = {"type": "object", "additionalProperties": FAILURE_DOMAIN}
MERGE_RESULT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "namespace": {"type": "string"},
        "bundle": {"type": "string"},
        "broker": {"type": "string"},
    },
    "required": ["namespace", "bundle", "broker"],
}
BUNDLE_STORY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "bundle": {"type": "string"},
        "owner": {"type": ["string", "null"]},
        "transitions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ["transition", "decision"]},
                    "decision": {"type": "string"},
                    "detail": {"type": "string"},
                    "executed": {"type": "boolean"},
                    "bundle": {"type": "string"},
                    "from": {"type": "string"},
                    "to": {"type": "string"},
                    "atMs": {"type": "integer"},
                    "by": {"type": "string"},
                    "reason": {"type": "string"},
                    "forced": {"type": "boolean"},
                    "version": {"type": "integer"},
                    "recordedBy": {"type": "string"},
                    "source": {"type": ["string", "null"]},
                    "destination": {"type": ["string", "null"]},
                },
                "required": ["kind", "atMs", "reason", "recordedBy"],
            },
        },
        "unreachable": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["bundle", "owner", "transitions", "unreachable"],
}
TOPIC_HASH_POSITIONS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "namespace": {"type": "string"},
        "bundle": {"type": "string"},
        "topicHashPositions": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
    "required": ["namespace", "bundle", "topicHashPositions"],
}
#: Pulsar's BrokerInfo (``serviceUrl``), with brokerlb's ``brokerId``.
BROKER_INFO: dict[str, Any] = {
    "type": "object",
    "properties": {"serviceUrl": {"type": ["string", "null"]}, "brokerId": {"type": "string"}},
}
#: bundle -> Pulsar's NamespaceOwnershipStatus.
OWNED_NAMESPACES: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "properties": {
            "broker_assignment": {"type": "string", "enum": ["primary", "secondary", "shared"]},
            "is_controlled": {"type": "boolean"},
            "is_active": {"type": "boolean"},
        },
        "required": ["broker_assignment", "is_controlled", "is_active"],
    },
}
CLUSTER_DATA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "serviceUrl": {"type": "string"},
        "serviceUrlTls": {"type": "string"},
        "brokerServiceUrl": {"type": "string"},
        "brokerServiceUrlTls": {"type": "string"},
    },
}
BROKER_ISOLATION_DATA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "brokerName": {"type": "string"},
        "policyName": {"type": "string"},
        "isPrimary": {"type": "boolean"},
        "namespaceRegex": STRINGS,
    },
    "required": ["brokerName", "isPrimary", "namespaceRegex"],
}
BROKER_ISOLATION_LIST: dict[str, Any] = {"type": "array", "items": BROKER_ISOLATION_DATA}

#: A POST without a body of its own: it must still declare JSON (the guard's rule), as Pulsar's
#: admin client does (an empty JSON entity).
_IGNORED_BODY: dict[str, Any] = {
    "required": False,
    "description": "Ignored; the request must declare Content-Type: application/json",
    "content": {"application/json": {"schema": {}}},
}

#: Pulsar's ``NamedEntity`` rule for tenant, namespace and cluster names (412 otherwise).
_NAMED_ENTITY = "^[-=:.\\w]+$"
_NAMED_ENTITIES = frozenset({"tenant", "namespace", "cluster"})

#: Examples of path parameters (they name what a fresh ``brokerlb standalone`` has), and the
#: domain's two values; the document shows them and a fuzzer starts from them.
_PATH_EXAMPLES = {
    "tenant": "public",
    "namespace": "default",
    "topic": "my-topic",
    "bundle": "0x00000000_0x40000000",
    "cluster": "standalone",
    "broker": "127.0.0.1:8080",
    "role": "app-1",
    "group": "group-1",
    "key": "loadBalancerSheddingEnabled",
    "value": "true",
}

_DESCRIPTIONS = {
    307: "Another broker answers: the same request at Location (Pulsar's redirect)",
    400: "Bad input: the reason names what is wrong",
    401: "No credentials, or credentials that do not verify (authenticationEnabled)",
    403: "The role may not do this (authorizationEnabled), or what it names is refused",
    404: "What the path names does not exist",
    405: "Not allowed by this broker's configuration",
    406: "A value out of range",
    409: "Conflict: exists already, not empty, or changed concurrently",
    412: "Precondition failed: an invalid name, or a state that does not allow it",
    413: "The body is larger than httpMaxRequestSize",
    415: "The body is not JSON (Content-Type: application/json)",
    503: "Cannot be served now (metadata store, starting or stopping broker, unloading bundle); retriable",
}


def _error(status: int) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "description": _DESCRIPTIONS[status],
        "content": {"application/json": {"schema": {"$ref": _REF}}},
    }
    if status == 307:
        answer = {
            "description": _DESCRIPTIONS[307],
            "headers": {"Location": {"schema": {"type": "string"}}},
        }
    return answer


def doc(
    *,
    body: Mapping[str, Any] | None = None,
    body_required: bool = True,
    returns: Mapping[str, Any] | None = None,
    status: int = 200,
    no_content: bool = False,
    errors: Iterable[int] = (),
    redirects: bool = False,
) -> dict[str, Any]:
    """The ``openapi_extra`` part describing a route's body and answers (module docstring)."""
    out: dict[str, Any] = {}
    if body is not None:
        out["requestBody"] = {
            "required": body_required,
            "content": {"application/json": {"schema": dict(body)}},
        }
    responses: dict[str, Any] = {}
    if returns is not None:
        responses[str(status)] = {
            "description": "Successful Response",
            "content": {"application/json": {"schema": dict(returns)}},
        }
    if no_content:
        responses["204"] = {"description": "Nothing set"}
    for code in sorted({*errors, *((307,) if redirects else ())}):
        responses[str(code)] = _error(code)
    if responses:
        out["responses"] = responses
    return out


def complete_responses(app: FastAPI) -> None:
    """Make ``app.openapi()`` add the answers every operation may give (module docstring)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        spec = build()
        spec.setdefault("components", {}).setdefault("schemas", {})["ErrorData"] = ERROR_DATA
        spec["components"]["schemas"].pop("HTTPValidationError", None)
        spec["components"]["schemas"].pop("ValidationError", None)
        if not spec["components"]["schemas"]:
            spec["components"].pop("schemas")
        for methods in spec.get("paths", {}).values():
            for method, operation in methods.items():
                _complete(method.upper(), operation)
        app.openapi_schema = spec
        return spec

    app.openapi = openapi  # type: ignore[method-assign]


def _complete(method: str, operation: dict[str, Any]) -> None:
    from brokerlb.broker.http.access import ACCESS_KEY

    if method == "POST" and "requestBody" not in operation:
        operation["requestBody"] = _IGNORED_BODY
    responses = operation.setdefault("responses", {})
    responses.pop("422", None)
    needed = operation.get(ACCESS_KEY)
    common = {400}
    if needed not in ("public", "metrics"):
        common |= {401, 403, 503}
    elif needed == "metrics":
        common |= {401}
    if any(p.get("in") == "path" for p in operation.get("parameters", ())):
        common |= {404, 412}  # what the path names: missing, or not a valid name (Pulsar's 412)
    if "requestBody" in operation or method in ("POST", "PUT", "DELETE", "PATCH"):
        common |= {413, 415}  # the guard's rules, even for a body the route ignores
    for code in sorted(common):
        responses.setdefault(str(code), _error(code))
    for code, answer in responses.items():  # an error a route described in words: its body too
        if code.isdigit() and int(code) >= 400 and "content" not in answer:
            answer["content"] = _error(int(code))["content"]
    for parameter in operation.get("parameters", ()):
        name = parameter.get("name")
        if parameter.get("in") != "path":
            continue
        if name in _PATH_EXAMPLES:
            parameter.setdefault("example", _PATH_EXAMPLES[name])
        if name in _NAMED_ENTITIES:
            parameter.setdefault("schema", {}).setdefault("pattern", _NAMED_ENTITY)
        if name == "domain":
            parameter.setdefault("schema", {})["enum"] = ["persistent", "non-persistent"]
            parameter.setdefault("example", "persistent")
