"""Admin v2 broker version and configuration (Pulsar's ``BrokersBase``).

These fixed paths are registered before ``/admin/v2/brokers/{cluster}`` (which would otherwise
read ``version`` or ``configuration`` as a cluster name).

| request | answer |
|---|---|
| ``GET /admin/v2/brokers/version`` | the broker's version (text) |
| ``GET /admin/v2/brokers/configuration`` | names of the keys that can change at run time |
| ``GET /admin/v2/brokers/configuration/values`` | the stored dynamic configuration (key → value) |
| ``GET /admin/v2/brokers/configuration/runtime`` | every key's value on this broker now |
| ``POST /admin/v2/brokers/configuration/{key}/{value}`` | 204; 412 not dynamic / invalid value |
| ``DELETE /admin/v2/brokers/configuration/{key}`` | 204; 412 not dynamic |
| ``GET /admin/v2/brokers/internal-configuration`` | InternalConfigurationData (metadata store URLs) |
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from brokerlb import __version__
from brokerlb.broker.admin.dynamic_config import DynamicConfiguration, dynamic_config_names
from brokerlb.broker.http.access import Access, access
from brokerlb.broker.http.common import json_response, no_content
from brokerlb.broker.http.openapi import STRING_MAP, STRINGS, doc
from brokerlb.config import ServiceConfig

__all__ = ["broker_config_router"]

_B = "/admin/v2/brokers"


def broker_config_router(dynamic: DynamicConfiguration, conf: ServiceConfig) -> APIRouter:
    router = APIRouter(tags=["brokers"])

    @router.get(
        f"{_B}/version",
        openapi_extra=access(Access.AUTHENTICATED),
        summary="The broker's version",
        response_class=Response,
    )
    async def version() -> Response:
        return Response(__version__, media_type="text/plain")

    @router.get(
        f"{_B}/configuration",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=STRINGS),
        summary="Keys that can be changed at run time",
    )
    async def dynamic_names() -> Response:
        return json_response(dynamic_config_names())

    @router.get(
        f"{_B}/configuration/values",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=STRING_MAP),
        summary="The stored dynamic configuration",
    )
    async def dynamic_values() -> Response:
        return json_response(await dynamic.stored_values())

    @router.get(
        f"{_B}/configuration/runtime",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=STRING_MAP),
        summary="Every key's value on this broker now",
    )
    async def runtime_values() -> Response:
        return json_response(dynamic.runtime_values())

    @router.post(
        f"{_B}/configuration/{{key}}/{{value}}",
        openapi_extra=access(Access.SUPER_USER) | doc(errors=(409,)),
        status_code=204,
        summary="Set a dynamic configuration key for every broker",
        description="The leader uses the new value from its next cycle; every broker applies it.",
    )
    async def update_dynamic(key: str, value: str) -> Response:
        await dynamic.update(key, value)
        return no_content()

    @router.delete(
        f"{_B}/configuration/{{key}}",
        openapi_extra=access(Access.SUPER_USER) | doc(errors=(409,)),
        status_code=204,
        summary="Remove a dynamic configuration key",
    )
    async def delete_dynamic(key: str) -> Response:
        await dynamic.delete(key)
        return no_content()

    @router.get(
        f"{_B}/internal-configuration",
        openapi_extra=access(Access.SUPER_USER) | doc(returns=STRING_MAP),
        summary="Metadata store URLs (InternalConfigurationData)",
    )
    async def internal_configuration() -> Response:
        url = conf.metadataStoreUrl
        return json_response(
            {
                "zookeeperServers": url,
                "configurationStoreServers": url,
                "metadataStoreUrl": url,
                "configurationMetadataStoreUrl": url,
            }
        )

    return router
