"""Leader-written load data: ``/loadbalance/bundle-data/...`` and ``/loadbalance/broker-time-average/...``.

The modular load manager's leader persists each bundle's BundleData and each
broker's TimeAverageBrokerData (every ``loadBalancerResourceQuotaUpdateIntervalMinutes``)
so that a new leader starts with history. The records themselves belong to
``brokerlb.model``; this store is data-agnostic (JSON-able values or objects with
``to_json()`` in, decoded JSON out). Writes are unconditional (the leader is the
single writer).
"""

from __future__ import annotations

from typing import Any

from brokerlb.coordination.paths import (
    BROKER_TIME_AVERAGE_ROOT,
    broker_time_average_path,
    bundle_data_path,
    namespace_bundle_data_path,
    resource_quota_path,
)
from brokerlb.coordination.records import decode_json, encode_json
from brokerlb.coordination.store import MetadataStore
from brokerlb.errors import NodeExistsError, NoNodeError
from brokerlb.naming import NamespaceName
from brokerlb.ring.bundles import NamespaceBundle

__all__ = ["LoadDataStore"]


class LoadDataStore:
    """Read and write BundleData / TimeAverageBrokerData JSON at Pulsar's paths."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    # ------------------------------------------------------------------ bundle data
    async def write_bundle_data(self, bundle: NamespaceBundle | str, data: Any) -> None:
        await self._put(bundle_data_path(bundle), encode_json(data))

    async def read_bundle_data(self, bundle: NamespaceBundle | str) -> Any | None:
        return await self._read(bundle_data_path(bundle))

    async def delete_bundle_data(self, bundle: NamespaceBundle | str) -> None:
        try:
            await self.store.delete(bundle_data_path(bundle))
        except NoNodeError:
            pass

    async def namespace_bundle_data(self, namespace: NamespaceName | str) -> dict[str, Any]:
        """Range → BundleData JSON for every bundle of the namespace that has some."""
        root = namespace_bundle_data_path(namespace)
        try:
            ranges = await self.store.children(root)
        except NoNodeError:
            return {}
        out: dict[str, Any] = {}
        for rng in ranges:
            value = await self._read(f"{root}/{rng}")
            if value is not None:
                out[rng] = value
        return out

    async def read_resource_quota(self, bundle: NamespaceBundle | str) -> Any | None:
        """A bundle's legacy ``ResourceQuota`` (Pulsar's ``/loadbalance/resource-quota/namespace/...``),
        the leader's starting point for a bundle without stored bundle data."""
        return await self._read(resource_quota_path(bundle))

    # ------------------------------------------------------------------ broker time averages
    async def write_broker_time_average(self, broker_id: str, data: Any) -> None:
        await self._put(broker_time_average_path(broker_id), encode_json(data))

    async def read_broker_time_average(self, broker_id: str) -> Any | None:
        return await self._read(broker_time_average_path(broker_id))

    async def brokers_with_time_average(self) -> list[str]:
        try:
            return await self.store.children(BROKER_TIME_AVERAGE_ROOT)
        except NoNodeError:
            return []

    # ------------------------------------------------------------------ internals
    async def _read(self, path: str) -> Any | None:
        node = await self.store.get_or_none(path)
        return None if node is None else decode_json(node.data, path)

    async def _put(self, path: str, data: bytes) -> None:
        for _attempt in range(3):
            try:
                await self.store.set(path, data)
                return
            except NoNodeError:
                pass
            try:
                await self.store.create(path, data, make_parents=True)
                return
            except NodeExistsError:
                continue
        await self.store.set(path, data)
