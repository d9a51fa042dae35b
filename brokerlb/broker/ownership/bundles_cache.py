"""Namespace bundles as memory reads: Pulsar's ``NamespaceBundleFactory`` cache.

The first use of a namespace reads its bundles (local policies, else global
policies -- :meth:`BundleMetadata.get_bundles`) and starts watching both policy
nodes; every change (a split, a merge, a new or deleted namespace) replaces the
cached entry (Pulsar invalidates the entry on a local-policies notification).
After that, :meth:`NamespaceBundlesCache.cached` answers without awaiting -- the
lookup hot path.

A namespace exists when its global policies exist. Heartbeat and SLA-monitor
namespaces never have policies; they are one full bundle (Pulsar's fallback).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from brokerlb.coordination import (
    BundleMetadata,
    CheckOp,
    DataWatch,
    LocalPolicies,
    MetadataStore,
    Node,
    Policies,
)
from brokerlb.coordination.ownership_table import Guard
from brokerlb.coordination.paths import local_policies_path, policies_path
from brokerlb.errors import CorruptMetadataError, NamespaceNotFoundError, StaleBundleError
from brokerlb.naming import NamespaceName, is_heartbeat_namespace, is_sla_namespace
from brokerlb.ring import NamespaceBundle, NamespaceBundles

__all__ = ["NamespaceBundlesCache"]

logger = logging.getLogger(__name__)


@dataclass
class _Entry:
    bundles: NamespaceBundles | None  # None: the namespace does not exist
    watches: tuple[DataWatch, DataWatch]
    local: Node | None = None
    glob: Node | None = None
    anti_affinity_group: str | None = None


class NamespaceBundlesCache:
    """Bundles of every namespace looked at, kept current by watches."""

    def __init__(
        self, store: MetadataStore, metadata: BundleMetadata, *, max_namespaces: int = 100_000
    ) -> None:
        self.store = store
        self.metadata = metadata
        self._entries: dict[str, _Entry] = {}
        self._loading: dict[str, asyncio.Future[_Entry]] = {}
        self._max = max_namespaces
        #: bumped whenever what placement reads changes: a cached namespace's bundles or
        #: anti-affinity group, or a namespace with a group loaded (see :class:`NamespacePoliciesView`)
        self.version = 0

    def cached(self, namespace: NamespaceName) -> NamespaceBundles | None:
        """The bundles from memory; ``None`` when not loaded yet or the namespace does not exist."""
        entry = self._entries.get(str(namespace))
        return None if entry is None else entry.bundles

    async def get(self, namespace: NamespaceName | str) -> NamespaceBundles:
        """The namespace's bundles; :class:`NamespaceNotFoundError` if it does not exist."""
        ns = NamespaceName.parse(namespace)
        entry = self._entries.get(str(ns)) or await self._load(ns)
        if entry.bundles is None:
            raise NamespaceNotFoundError(f"Namespace {ns} does not exist")
        return entry.bundles

    def namespaces(self) -> list[str]:
        """Every cached namespace that exists."""
        return [key for key, e in self._entries.items() if e.bundles is not None]

    def policy_of(self, namespace: str) -> tuple[NamespaceBundles, str | None] | None:
        """``(bundles, anti-affinity group)`` of a cached existing namespace, else ``None``."""
        entry = self._entries.get(namespace)
        if entry is None or entry.bundles is None:
            return None
        return entry.bundles, entry.anti_affinity_group

    def anti_affinity_group(self, namespace: NamespaceName | str) -> str | None:
        entry = self._entries.get(str(namespace))
        return None if entry is None else entry.anti_affinity_group

    async def ring_guard(self, bundle: NamespaceBundle) -> Guard | None:
        """The check an assignment of ``bundle`` is conditional on: the namespace's local policies at
        the version this cache found ``bundle`` in (a stale cache's assignment fails and writes
        nothing; the lookup reads the ring again). ``None`` for a namespace without policies (a
        heartbeat namespace: one bundle, never split)."""
        entry = self._entries.get(str(bundle.namespace)) or await self._load(bundle.namespace)
        local = entry.local
        if entry.bundles is None or bundle not in entry.bundles:
            raise StaleBundleError(f"Bundle {bundle} was split or merged meanwhile; look the topic up again")
        op: CheckOp | None
        if local is not None:
            op = CheckOp(local_policies_path(bundle.namespace), local.stat.version)
        else:
            op = await self.metadata.ring_guard(bundle)  # stores the local copy of global-only bundles
        if op is None:
            return None
        return Guard(
            op,
            lambda: StaleBundleError(f"The bundles of {bundle.namespace} changed; look the topic up again"),
        )

    async def current(self, namespace: NamespaceName | str) -> NamespaceBundles:
        """The bundles as the store has them now: the cached ones if the local-policies node has not
        changed since (one ``exists`` call), else a fresh read."""
        ns = NamespaceName.parse(namespace)
        entry = self._entries.get(str(ns))
        if entry is not None and entry.bundles is not None and entry.local is not None:
            stat = await self.store.exists(local_policies_path(ns))
            if stat is not None and stat.mzxid == entry.local.stat.mzxid:
                return entry.bundles
        return await self.refresh(ns)

    async def refresh(self, namespace: NamespaceName | str) -> NamespaceBundles:
        """Read the bundles from the store now (a lookup suspects the cache is behind)."""
        ns = NamespaceName.parse(namespace)
        bundles = await self.metadata.get_bundles(ns)
        entry = self._entries.get(str(ns))
        if entry is not None and entry.bundles is not None and entry.bundles != bundles:
            entry.bundles = bundles
            self.version += 1
        return bundles

    def close(self) -> None:
        for entry in self._entries.values():
            for watch in entry.watches:
                watch.cancel()
        self._entries.clear()

    # ------------------------------------------------------------------ internals
    async def _load(self, ns: NamespaceName) -> _Entry:
        key = str(ns)
        pending = self._loading.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[_Entry] = asyncio.get_running_loop().create_future()
        self._loading[key] = future
        try:
            entry = await self._start(ns)
            future.set_result(entry)
            return entry
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()
            raise
        finally:
            del self._loading[key]

    async def _start(self, ns: NamespaceName) -> _Entry:
        if len(self._entries) >= self._max:
            self._evict_one()
        entry = _Entry(None, ())  # type: ignore[arg-type]
        local_watch = self.store.watch_data(
            local_policies_path(ns), lambda node: self._on_local(ns, entry, node)
        )
        glob_watch = self.store.watch_data(policies_path(ns), lambda node: self._on_global(ns, entry, node))
        entry.watches = (local_watch, glob_watch)
        try:
            await local_watch.start()
            await glob_watch.start()
        except BaseException:
            local_watch.cancel()
            glob_watch.cancel()
            raise
        self._recompute(ns, entry)
        self._entries[str(ns)] = entry  # visible only once loaded
        return entry

    def _evict_one(self) -> None:
        key = next(iter(self._entries))
        for watch in self._entries.pop(key).watches:
            watch.cancel()

    def _on_local(self, ns: NamespaceName, entry: _Entry, node: Node | None) -> None:
        entry.local = node
        self._recompute(ns, entry)

    def _on_global(self, ns: NamespaceName, entry: _Entry, node: Node | None) -> None:
        entry.glob = node
        self._recompute(ns, entry)

    def _recompute(self, ns: NamespaceName, entry: _Entry) -> None:
        before = (entry.bundles, entry.anti_affinity_group)
        try:
            entry.bundles = _bundles_of(ns, entry.local, entry.glob, self.metadata.default_num_bundles)
            entry.anti_affinity_group = (
                LocalPolicies.from_bytes(
                    entry.local.data, local_policies_path(ns)
                ).namespace_anti_affinity_group
                if entry.local is not None
                else None
            )
        except CorruptMetadataError as exc:
            logger.error("Cannot read the bundles of %s: %s", ns, exc)
        visible = self._entries.get(str(ns)) is entry
        if (entry.bundles, entry.anti_affinity_group) != before and (visible or entry.anti_affinity_group):
            self.version += 1


def _bundles_of(
    ns: NamespaceName, local: Node | None, glob: Node | None, default_num_bundles: int
) -> NamespaceBundles | None:
    if glob is None and local is None:
        if is_heartbeat_namespace(ns) or is_sla_namespace(ns):
            return NamespaceBundles.create(ns, 1)
        return None
    if local is not None:
        policies = LocalPolicies.from_bytes(local.data, local_policies_path(ns))
        if policies.bundles is not None:
            return policies.namespace_bundles(ns)
    if glob is not None:
        return Policies.from_bytes(glob.data, policies_path(ns)).namespace_bundles(ns, default_num_bundles)
    return NamespaceBundles.create(ns, 1)
