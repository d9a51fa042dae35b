"""Admin v2 tenants (Pulsar's ``TenantsBase``): ``/admin/v2/tenants[/{tenant}]``.

| request | answer |
|---|---|
| ``GET /admin/v2/tenants`` | sorted tenant names |
| ``GET /admin/v2/tenants/{t}`` | ``{"adminRoles", "allowedClusters"}``; 404 |
| ``PUT /admin/v2/tenants/{t}`` body TenantInfo | 204; 409 exists; 412 bad name, no clusters, unknown cluster |
| ``POST /admin/v2/tenants/{t}`` body TenantInfo | 204; 404; 412 as above or a removed cluster still in use |
| ``DELETE /admin/v2/tenants/{t}?force=`` | 204; 404; 409 has namespaces; 405 ``force`` not allowed |
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from brokerlb.broker.admin.namespace_admin import NamespaceAdmin
from brokerlb.broker.http.access import Access, access
from brokerlb.broker.http.common import json_body, json_response, no_content, request_limits
from brokerlb.broker.http.lookup_routes import parse_bool
from brokerlb.broker.http.openapi import STRINGS, TENANT_INFO, doc
from brokerlb.coordination.tenants import Tenants, parse_tenant_info
from brokerlb.errors import NotFoundError

__all__ = ["tenants_router"]

_T = "/admin/v2/tenants"


def tenants_router(tenants: Tenants, namespaces: NamespaceAdmin) -> APIRouter:
    router = APIRouter(tags=["tenants"])

    @router.get(_T, openapi_extra=access(Access.SUPER_USER) | doc(returns=STRINGS), summary="Tenants")
    async def list_tenants() -> Response:
        return json_response(await tenants.names())

    @router.get(
        f"{_T}/{{tenant}}",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=TENANT_INFO),
        summary="A tenant's TenantInfo",
    )
    async def get_tenant(tenant: str) -> Response:
        info = await tenants.get(tenant)
        if info is None:
            raise NotFoundError(f"Tenant {tenant} does not exist")
        return json_response(info.to_json())

    @router.put(
        f"{_T}/{{tenant}}",
        openapi_extra=access(Access.SUPER_USER) | doc(body=TENANT_INFO, errors=(409,)),
        status_code=204,
        summary="Create a tenant",
        description='Body: TenantInfo, e.g. {"adminRoles": ["admin"], "allowedClusters": ["standalone"]}.',
    )
    async def create_tenant(tenant: str, request: Request) -> Response:
        request_limits(request).check_name("tenant", tenant)
        await tenants.create(tenant, parse_tenant_info(await json_body(request)))
        return no_content()

    @router.post(
        f"{_T}/{{tenant}}",
        openapi_extra=access(Access.SUPER_USER) | doc(body=TENANT_INFO, errors=(409,)),
        status_code=204,
        summary="Update a tenant's roles and clusters",
    )
    async def update_tenant(tenant: str, request: Request) -> Response:
        await tenants.update(tenant, parse_tenant_info(await json_body(request)))
        return no_content()

    @router.delete(
        f"{_T}/{{tenant}}",
        openapi_extra=access(Access.SUPER_USER) | doc(errors=(405, 409)),
        status_code=204,
        summary="Delete a tenant (force: with its namespaces)",
    )
    async def delete_tenant(tenant: str, force: str | None = None) -> Response:
        await namespaces.delete_tenant(tenant, force=parse_bool(force, "force"))
        return no_content()

    return router
