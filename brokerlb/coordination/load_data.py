"""Leader-written load data: ``/loadbalance/bundle-data/...`` and ``/loadbalance/broker-time-average/...``.

The modular load manager's leader persists each bundle's BundleData and each
broker's TimeAverageBrokerData (every ``loadBalancerResourceQuotaUpdateIntervalMinutes``)
so that a new leader starts with history. The records themselves belong to
``brokerlb.model``; this store is data-agnostic (JSON-able values or objects with
``to_json()`` in, decoded JSON out).

The leader is the single writer. A write or delete given ``leader_epoch`` (the leadership's
:attr:`~brokerlb.coordination.LeaderLease.fencing_token`) is conditional on it: one transaction
with a check of the leader-epoch node (:func:`~brokerlb.coordination.fenced_ops`), so a leader
superseded meanwhile -- a process that lost its session and resumed mid-write -- changes nothing
and gets :class:`~brokerlb.errors.ConflictError`. Pulsar writes unconditionally.
"""

from __future__ import annotations

from typing import Any

from brokerlb.coordination.election import fenced_ops
from brokerlb.coordination.paths import (
    BROKER_TIME_AVERAGE_ROOT,
    broker_time_average_path,
    bundle_data_path,
    namespace_bundle_data_path,
    resource_quota_path,
)
from brokerlb.coordination.records import decode_json, encode_json
from brokerlb.coordination.store import CreateOp, DeleteOp, MetadataStore, Op, SetOp, parent_path
from brokerlb.errors import BadVersionError, ConflictError, NodeExistsError, NoNodeError
from brokerlb.naming import NamespaceName
from brokerlb.ring.bundles import NamespaceBundle

__all__ = ["LoadDataStore"]


class LoadDataStore:
    """Read and write BundleData / TimeAverageBrokerData JSON at Pulsar's paths."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    # ------------------------------------------------------------------ bundle data
    async def write_bundle_data(
        self, bundle: NamespaceBundle | str, data: Any, *, leader_epoch: int | None = None
    ) -> None:
        await self._put(bundle_data_path(bundle), encode_json(data), leader_epoch)

    async def read_bundle_data(self, bundle: NamespaceBundle | str) -> Any | None:
        return await self._read(bundle_data_path(bundle))

    async def delete_bundle_data(
        self, bundle: NamespaceBundle | str, *, leader_epoch: int | None = None
    ) -> None:
        path = bundle_data_path(bundle)
        try:
            if leader_epoch is None:
                await self.store.delete(path)
            else:
                await self._fenced(leader_epoch, DeleteOp(path))
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
    async def write_broker_time_average(
        self, broker_id: str, data: Any, *, leader_epoch: int | None = None
    ) -> None:
        await self._put(broker_time_average_path(broker_id), encode_json(data), leader_epoch)

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

    async def _put(self, path: str, data: bytes, leader_epoch: int | None = None) -> None:
        for _attempt in range(3):
            try:
                await self._apply(SetOp(path, data), leader_epoch)
                return
            except NoNodeError:
                pass
            await self.store.ensure_path(parent_path(path))
            try:
                await self._apply(CreateOp(path, data), leader_epoch)
                return
            except NodeExistsError:
                continue
        await self._apply(SetOp(path, data), leader_epoch)

    async def _apply(self, op: SetOp | CreateOp, leader_epoch: int | None) -> None:
        if leader_epoch is not None:
            await self._fenced(leader_epoch, op)
        elif isinstance(op, SetOp):
            await self.store.set(op.path, op.data)
        else:
            await self.store.create(op.path, op.data)

    async def _fenced(self, leader_epoch: int, op: Op) -> None:
        """``op`` in one transaction with the check that ``leader_epoch`` is still the current one."""
        try:
            await self.store.multi(fenced_ops(leader_epoch, [op]))
        except (BadVersionError, NoNodeError) as exc:
            if getattr(exc, "op_index", None) == 0:
                raise ConflictError(
                    f"Refused a write of a superseded leader (epoch {leader_epoch}): {op.path} left unchanged"
                ) from exc
            raise
