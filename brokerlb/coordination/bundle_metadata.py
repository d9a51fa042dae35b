"""Namespace bundles in the metadata store, changed only by compare-and-set.

A namespace's bundles live in two places, as in Pulsar:

* ``/admin/local-policies/{ns}`` (LocalPolicies ``bundles``) -- the authoritative
  copy brokers read (Pulsar's ``NamespaceBundleFactory`` loads it; when it is
  missing it is created from the global policies' bundles);
* ``/admin/policies/{ns}`` (global Policies ``bundles``) -- what the admin API shows.

A change (split, merge) is a read-modify-write of the local policies with the
version read (compare-and-set). When another broker changed them first the write
fails with ``BadVersion``; the change is then **recomputed from a fresh read** and
written again, up to 7 retries 100 ms apart (Pulsar's
``BUNDLE_SPLIT_RETRY_LIMIT``). So concurrent splits of different bundles of one
namespace never lose an update; two splits of the *same* bundle end with one
winner and a :class:`~brokerlb.errors.BundleNotFoundError` for the other.

The global copy is then brought in line with a second compare-and-set that copies
the local bundles read *after* the global version: a slow writer can never put
back an older ring (Pulsar writes the bundles it computed itself, which can).

A split or merge of the ownership table commits the ring in the same transaction as the
ownership records (:meth:`BundleMetadata.ring_change`); :meth:`BundleMetadata.split_bundle` and
:meth:`BundleMetadata.merge_bundles` change the ring alone (tools, tests, namespaces without
owners).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from brokerlb.coordination.paths import local_policies_path, policies_path
from brokerlb.coordination.records import LocalPolicies, Policies
from brokerlb.coordination.retry import BUNDLE_UPDATE_RETRY, RetryPolicy, Sleep, retry_async
from brokerlb.coordination.store import CheckOp, CreateOp, MetadataStore, Node, Op, SetOp, parent_path
from brokerlb.errors import (
    BadVersionError,
    ConflictError,
    NamespaceNotFoundError,
    NodeExistsError,
    StaleBundleError,
)
from brokerlb.naming import NamespaceName
from brokerlb.ring.bundles import NamespaceBundle, NamespaceBundles

__all__ = ["BundleMetadata", "bundle_name"]

logger = logging.getLogger(__name__)

_CAS_LOST = (BadVersionError, NodeExistsError)


def bundle_name(bundle: NamespaceBundle | str) -> str:
    """The canonical bundle name ``tenant/ns/0x…_0x…`` (validated)."""
    return str(bundle if isinstance(bundle, NamespaceBundle) else NamespaceBundle.parse(bundle))


class BundleMetadata:
    """Read and change namespace bundles (local and global policies) on ``store``."""

    def __init__(
        self,
        store: MetadataStore,
        *,
        default_num_bundles: int = 4,
        retry: RetryPolicy = BUNDLE_UPDATE_RETRY,
        sleep: Sleep | None = None,
    ) -> None:
        self.store = store
        #: ``defaultNumberOfNamespaceBundles``: bundles of a namespace created without a count.
        self.default_num_bundles = default_num_bundles
        self.retry = retry
        #: Waits between retries: the store's clock unless given.
        self._sleep = sleep if sleep is not None else store.clock.sleep
        self._layout_listeners: list[Callable[[NamespaceBundles], None]] = []

    def add_layout_listener(self, listener: Callable[[NamespaceBundles], None]) -> Callable[[], None]:
        """``listener(bundles)`` after every layout written here (namespace created, split, merge,
        update), e.g. the load history's record; returns a remover. A failing listener is logged."""
        self._layout_listeners.append(listener)
        return lambda: self._layout_listeners.remove(listener) if listener in self._layout_listeners else None

    def committed(self, bundles: NamespaceBundles) -> None:
        """A layout of :meth:`ring_change` was committed (in the caller's transaction): its listeners
        hear of it as of every layout written here."""
        self._written(bundles)

    def _written(self, bundles: NamespaceBundles) -> None:
        for listener in list(self._layout_listeners):
            try:
                listener(bundles)
            except Exception:
                logger.exception("Layout listener failed for %s", bundles.namespace)

    # ------------------------------------------------------------------ namespaces
    async def create_namespace(
        self,
        namespace: NamespaceName | str,
        *,
        num_bundles: int | None = None,
        boundaries: Sequence[int | str] | None = None,
        anti_affinity_group: str | None = None,
        policies: dict[str, Any] | None = None,
    ) -> NamespaceBundles:
        """Write the global and local policies of a new namespace (409 if it exists).

        Bundles: ``boundaries`` if given, else ``num_bundles`` equal bundles, else
        ``default_num_bundles`` -- Pulsar's rules (and its 400 errors) via
        :class:`~brokerlb.ring.NamespaceBundles`. ``policies`` holds any other global
        Policies fields, stored verbatim.
        """
        ns = NamespaceName.parse(namespace)
        if boundaries is not None:
            bundles = NamespaceBundles.from_boundaries(ns, boundaries)
        else:
            bundles = NamespaceBundles.create(
                ns, num_bundles if num_bundles is not None else self.default_num_bundles
            )
        extra = {k: v for k, v in (policies or {}).items() if k != "bundles"}
        try:
            await self.store.create(
                policies_path(ns), Policies(bundles.to_json(), extra).to_bytes(), make_parents=True
            )
        except NodeExistsError as exc:
            raise ConflictError(f"Namespace {ns} already exists") from exc
        local = LocalPolicies(bundles=bundles.to_json(), namespace_anti_affinity_group=anti_affinity_group)
        await self._put(local_policies_path(ns), local.to_bytes())
        logger.info("Created namespace %s with %d bundles", ns, len(bundles))
        self._written(bundles)
        return bundles

    async def namespace_exists(self, namespace: NamespaceName | str) -> bool:
        return await self.store.exists(policies_path(NamespaceName.parse(namespace))) is not None

    async def read_policies(self, namespace: NamespaceName | str) -> tuple[Policies, int] | None:
        path = policies_path(NamespaceName.parse(namespace))
        node = await self.store.get_or_none(path)
        return None if node is None else (Policies.from_bytes(node.data, path), node.stat.version)

    async def read_local_policies(self, namespace: NamespaceName | str) -> tuple[LocalPolicies, int] | None:
        path = local_policies_path(NamespaceName.parse(namespace))
        node = await self.store.get_or_none(path)
        return None if node is None else (LocalPolicies.from_bytes(node.data, path), node.stat.version)

    # ------------------------------------------------------------------ bundles
    async def get_bundles(self, namespace: NamespaceName | str) -> NamespaceBundles:
        """The namespace's bundles: local policies, else global policies, else one full bundle.

        (Pulsar's factory falls back to the single full bundle when no policies exist.)
        """
        ns = NamespaceName.parse(namespace)
        local = await self.read_local_policies(ns)
        if local is not None and local[0].bundles is not None:
            return local[0].namespace_bundles(ns)
        glob = await self.read_policies(ns)
        if glob is not None:
            return glob[0].namespace_bundles(ns, self.default_num_bundles)
        return NamespaceBundles.create(ns, 1)

    async def ring_guard(self, bundle: NamespaceBundle | str) -> CheckOp | None:
        """A store check that the namespace's bundles are still those ``bundle`` is one of.

        Taking a bundle on a lookup is conditional on it (:class:`~brokerlb.coordination.OwnershipManager`'s
        ``ring_guard``): the ownership node is created in one transaction with a version check of
        the namespace's local policies, so a broker whose check of the ring raced a split or merge
        cannot end up owning the parent of children another broker already serves. Raises
        :class:`~brokerlb.errors.StaleBundleError` when the bundle is not in the ring now; ``None``
        for a namespace without stored policies (its one bundle cannot be split).
        """
        parent = NamespaceBundle.parse(bundle_name(bundle))
        ns = parent.namespace
        path = local_policies_path(ns)
        for _attempt in range(4):
            node = await self.store.get_or_none(path)
            try:
                local, version = await self._local_or_from_global(ns, node)
            except NamespaceNotFoundError:
                return None
            if version is None:  # bundles only in the global policies: store the local copy first
                with contextlib.suppress(NodeExistsError):
                    await self._write_local(ns, local, None)
                continue
            if parent not in local.namespace_bundles(ns):
                raise StaleBundleError(
                    f"Bundle {parent} was split or merged meanwhile; look the topic up again"
                )
            return CheckOp(path, version)
        raise StaleBundleError(f"The bundles of {ns} keep changing; look the topic up again")

    async def update_bundles(
        self,
        namespace: NamespaceName | str,
        change: Callable[[NamespaceBundles], NamespaceBundles],
        *,
        what: str = "bundle update",
    ) -> NamespaceBundles:
        """Apply ``change`` to the current bundles by compare-and-set, retrying on a lost race.

        ``change`` is called again on fresh data after each lost race, so it must be
        a pure function of the bundles it is given. Errors it raises (invalid split,
        unknown bundle) end the update at once. Returns the bundles written.
        """
        ns = NamespaceName.parse(namespace)
        written = await retry_async(
            lambda: self._update_local(ns, change),
            policy=self.retry,
            retry_on=_CAS_LOST,
            sleep=self._sleep,
            what=f"{what} of {ns}",
        )
        self._written(written)
        await self._sync_global(ns)
        return written

    async def split_bundle(
        self, bundle: NamespaceBundle | str, boundaries: Sequence[int | str]
    ) -> list[NamespaceBundle]:
        """Split ``bundle`` at ``boundaries``; returns the children (in ring order)."""
        target = NamespaceBundle.parse(bundle_name(bundle))
        children: list[NamespaceBundle] = []

        def split(current: NamespaceBundles) -> NamespaceBundles:
            updated = current.split(target, boundaries)
            children[:] = [b for b in updated if target.lower <= b.lower and b.upper <= target.upper]
            return updated

        await self.update_bundles(target.namespace, split, what=f"split of {target.range}")
        logger.info("Split bundle %s into %s", target, ", ".join(c.range for c in children))
        return children

    async def merge_bundles(
        self, namespace: NamespaceName | str, bundles: Sequence[NamespaceBundle | str]
    ) -> NamespaceBundle:
        """Merge adjacent bundles into one (beyond Pulsar); returns the merged bundle."""
        ns = NamespaceName.parse(namespace)
        merged: list[NamespaceBundle] = []

        def merge(current: NamespaceBundles) -> NamespaceBundles:
            merged[:] = [current.merged_bundle(bundles)]
            return current.merge(bundles)

        await self.update_bundles(ns, merge, what="merge")
        return merged[0]

    async def ring_change(
        self, namespace: NamespaceName | str, change: Callable[[NamespaceBundles], NamespaceBundles]
    ) -> tuple[Op, NamespaceBundles]:
        """The compare-and-set of the namespace's bundles that ``change`` makes (for one transaction
        with the ownership records of a split or merge) and the bundles it writes. The operation
        fails with :class:`~brokerlb.errors.BadVersionError` when the bundles changed meanwhile: read
        again. Call :meth:`sync_global` after the transaction."""
        ns = NamespaceName.parse(namespace)
        path = local_policies_path(ns)
        node = await self.store.get_or_none(path)
        local, version = await self._local_or_from_global(ns, node)
        updated = change(local.namespace_bundles(ns))
        data = local.with_bundles(updated).to_bytes()
        if version is None:
            await self.store.ensure_path(parent_path(path))
            return CreateOp(path, data), updated
        return SetOp(path, data, version), updated

    async def sync_global(self, namespace: NamespaceName | str) -> None:
        """Bring the global policies' bundles in line with the local ones (after a ring change)."""
        await self._sync_global(NamespaceName.parse(namespace))

    # ------------------------------------------------------------------ anti-affinity
    async def get_anti_affinity_group(self, namespace: NamespaceName | str) -> str | None:
        local = await self.read_local_policies(namespace)
        return None if local is None else local[0].namespace_anti_affinity_group

    async def set_anti_affinity_group(self, namespace: NamespaceName | str, group: str | None) -> None:
        """Set (or clear with ``None``) the namespace's anti-affinity group, by compare-and-set."""
        ns = NamespaceName.parse(namespace)
        if not await self.namespace_exists(ns):
            raise NamespaceNotFoundError(f"Namespace {ns} does not exist")

        async def attempt() -> None:
            node = await self.store.get_or_none(local_policies_path(ns))
            local, version = await self._local_or_from_global(ns, node)
            updated = LocalPolicies(local.bundles, local.bookie_affinity_group, group or None, local.extra)
            await self._write_local(ns, updated, version)

        await retry_async(
            attempt,
            policy=self.retry,
            retry_on=_CAS_LOST,
            sleep=self._sleep,
            what=f"anti-affinity update of {ns}",
        )

    # ------------------------------------------------------------------ internals
    async def _update_local(
        self, ns: NamespaceName, change: Callable[[NamespaceBundles], NamespaceBundles]
    ) -> NamespaceBundles:
        node = await self.store.get_or_none(local_policies_path(ns))
        local, version = await self._local_or_from_global(ns, node)
        current = local.namespace_bundles(ns)
        updated = change(current)
        await self._write_local(ns, local.with_bundles(updated), version)
        return updated

    async def _local_or_from_global(
        self, ns: NamespaceName, node: Node | None
    ) -> tuple[LocalPolicies, int | None]:
        """The local policies and their version; ``None`` version = not stored yet (bundles from global)."""
        if node is not None:
            local = LocalPolicies.from_bytes(node.data, local_policies_path(ns))
            if local.bundles is None:
                local = local.with_bundles(await self._global_bundles(ns))
            return local, node.stat.version
        return LocalPolicies(bundles=(await self._global_bundles(ns)).to_json()), None

    async def _global_bundles(self, ns: NamespaceName) -> NamespaceBundles:
        glob = await self.read_policies(ns)
        if glob is None:
            raise NamespaceNotFoundError(
                f"Namespace {ns} does not exist (no policies at {policies_path(ns)})"
            )
        return glob[0].namespace_bundles(ns, self.default_num_bundles)

    async def _write_local(self, ns: NamespaceName, local: LocalPolicies, version: int | None) -> None:
        path = local_policies_path(ns)
        if version is None:
            await self.store.create(path, local.to_bytes(), make_parents=True)
        else:
            await self.store.set(path, local.to_bytes(), version=version)

    async def _sync_global(self, ns: NamespaceName) -> None:
        """Copy the local bundles into the global policies (CAS; read global first, then local)."""

        async def attempt() -> None:
            path = policies_path(ns)
            glob = await self.store.get_or_none(path)
            local = await self.read_local_policies(ns)
            if local is None or local[0].bundles is None:
                return
            bundles = dict(local[0].bundles)
            if glob is None:
                await self.store.create(path, Policies(bundles).to_bytes(), make_parents=True)
                return
            policies = Policies.from_bytes(glob.data, path)
            if policies.bundles == bundles:
                return
            await self.store.set(
                path, Policies(bundles, policies.extra).to_bytes(), version=glob.stat.version
            )

        await retry_async(
            attempt,
            policy=self.retry,
            retry_on=_CAS_LOST,
            sleep=self._sleep,
            what=f"global policies update of {ns}",
        )

    async def _put(self, path: str, data: bytes) -> None:
        try:
            await self.store.create(path, data, make_parents=True)
        except NodeExistsError:
            await self.store.set(path, data)
