"""Namespace permissions, Pulsar's endpoints (``pulsar-admin namespaces permissions | grant-permission |
revoke-permission``), stored in the namespace policies' ``auth_policies``
(:mod:`brokerlb.coordination.permissions`).

* ``GET /admin/v2/namespaces/{tenant}/{namespace}/permissions`` → ``{"role": ["consume", "produce"]}``
* ``POST /admin/v2/namespaces/{tenant}/{namespace}/permissions/{role}`` body ``["produce", "consume"]`` → 204
* ``DELETE /admin/v2/namespaces/{tenant}/{namespace}/permissions/{role}`` → 204

All three need a tenant admin (or a super-user); 404 when the namespace does not exist, 400 for an
action that is not one of Pulsar's (produce, consume, functions, sources, sinks, packages).
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from brokerlb.broker.http.access import Access, access
from brokerlb.broker.http.common import json_body, json_response, no_content, request_limits
from brokerlb.broker.http.openapi import ACTIONS, ROLE_ACTIONS, doc
from brokerlb.coordination.permissions import NamespacePermissions, parse_actions
from brokerlb.naming import NamespaceName

__all__ = ["permissions_router"]

_P = "/admin/v2/namespaces/{tenant}/{namespace}/permissions"


def permissions_router(permissions: NamespacePermissions) -> APIRouter:
    """The three endpoints above over the stored ``permissions`` (those authorization reads)."""
    router = APIRouter(tags=["namespaces"])

    @router.get(
        _P,
        openapi_extra=access(Access.TENANT_ADMIN) | doc(returns=ROLE_ACTIONS),
        summary="Permissions of a namespace (role -> actions)",
    )
    async def get_permissions(tenant: str, namespace: str) -> Response:
        return json_response(await permissions.permissions(NamespaceName.parse(f"{tenant}/{namespace}")))

    @router.post(
        f"{_P}/{{role}}",
        status_code=204,
        openapi_extra=access(Access.TENANT_ADMIN) | doc(body=ACTIONS, errors=(409,)),
        summary="Grant actions on a namespace to a role",
        description='Body: JSON list of actions, e.g. ["produce", "consume"].',
    )
    async def grant_permission(tenant: str, namespace: str, role: str, request: Request) -> Response:
        ns = NamespaceName.parse(f"{tenant}/{namespace}")
        request_limits(request).check_name("role", role)
        await permissions.grant(ns, role, parse_actions(await json_body(request)))
        return no_content()

    @router.delete(
        f"{_P}/{{role}}",
        status_code=204,
        openapi_extra=access(Access.TENANT_ADMIN) | doc(errors=(409,)),
        summary="Revoke a role's permissions on a namespace",
    )
    async def revoke_permission(tenant: str, namespace: str, role: str) -> Response:
        await permissions.revoke(NamespaceName.parse(f"{tenant}/{namespace}"), role)
        return no_content()

    return router
