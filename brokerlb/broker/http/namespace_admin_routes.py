"""Admin v2 namespace policies and deletion: ``GET`` / ``DELETE /admin/v2/namespaces/{tenant}/{namespace}``.

(``PUT`` on the same path, the creation, is in :mod:`.namespaces_routes`.) Rules:
:mod:`brokerlb.broker.admin.namespace_admin`.

| request | answer |
|---|---|
| ``GET /admin/v2/namespaces/{t}/{ns}`` | Pulsar's Policies JSON; 404 |
| ``DELETE /admin/v2/namespaces/{t}/{ns}?force=`` | 204; 404; 409 not empty; 405 ``force`` not allowed |
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from brokerlb.broker.admin.namespace_admin import NamespaceAdmin
from brokerlb.broker.http.access import Access, access
from brokerlb.broker.http.common import json_response, no_content
from brokerlb.broker.http.lookup_routes import parse_bool
from brokerlb.broker.http.openapi import OBJECT, doc
from brokerlb.naming import NamespaceName

__all__ = ["namespace_admin_router"]

_P = "/admin/v2/namespaces"


def namespace_admin_router(namespaces: NamespaceAdmin) -> APIRouter:
    router = APIRouter(tags=["namespaces"])

    @router.get(
        f"{_P}/{{tenant}}/{{namespace}}",
        openapi_extra=access(Access.TENANT_ADMIN) | doc(returns=OBJECT),
        summary="A namespace's policies",
    )
    async def get_policies(tenant: str, namespace: str) -> Response:
        return json_response(await namespaces.policies(str(NamespaceName.parse(f"{tenant}/{namespace}"))))

    @router.delete(
        f"{_P}/{{tenant}}/{{namespace}}",
        openapi_extra=access(Access.TENANT_ADMIN) | doc(errors=(405, 409)),
        status_code=204,
        summary="Delete a namespace (force: with its topics)",
    )
    async def delete_namespace(tenant: str, namespace: str, force: str | None = None) -> Response:
        name = str(NamespaceName.parse(f"{tenant}/{namespace}"))
        await namespaces.delete_namespace(name, force=parse_bool(force, "force"))
        return no_content()

    return router
