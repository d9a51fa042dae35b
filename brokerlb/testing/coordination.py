"""Invariant checks of the coordination state, read straight from a metadata store.

:func:`check_coordination_invariants` reads the namespaces' bundles and ownership
nodes and checks:

* **bundles cover the ring** -- each namespace's bundles (local policies, as brokers
  read them) cover ``[0x00000000, 0xffffffff]`` with no gap or overlap, and the
  global policies hold the same boundaries;
* **single owner per bundle** -- every ownership node is for a current bundle of its
  namespace (no node left behind for a split parent), and no two brokers believe
  they own the same bundle; a broker's belief matches the node's owner;
* optionally **every bundle owned**.

Violations raise :class:`~brokerlb.testing.invariants.InvariantViolation` with the
whole state in the message. Used at the end of the coordination tests and by the
simulator.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from brokerlb.coordination.bundle_metadata import BundleMetadata
from brokerlb.coordination.ownership import OwnerInfo, bundle_name
from brokerlb.coordination.paths import namespace_ownership_path, ownership_path
from brokerlb.coordination.records import NamespaceEphemeralData
from brokerlb.coordination.store import MetadataStore
from brokerlb.errors import NoNodeError
from brokerlb.naming import NamespaceName
from brokerlb.ring.bundles import NamespaceBundles
from brokerlb.testing.invariants import InvariantViolation, assert_ring_covers_keyspace, assert_single_owner

__all__ = ["CoordinationSnapshot", "read_coordination_snapshot", "check_coordination_invariants"]


@dataclass
class CoordinationSnapshot:
    """What the store says: bundles per namespace and the owner of each owned bundle."""

    bundles: dict[str, NamespaceBundles] = field(default_factory=dict)
    global_boundaries: dict[str, list[str] | None] = field(default_factory=dict)
    owners: dict[str, OwnerInfo] = field(default_factory=dict)

    def owner_ids(self) -> dict[str, str | None]:
        return {b: info.broker_id for b, info in sorted(self.owners.items())}


async def read_coordination_snapshot(
    store: MetadataStore, namespaces: Iterable[NamespaceName | str], default_num_bundles: int = 4
) -> CoordinationSnapshot:
    metadata = BundleMetadata(store, default_num_bundles=default_num_bundles)
    snap = CoordinationSnapshot()
    for namespace in namespaces:
        ns = NamespaceName.parse(namespace)
        snap.bundles[str(ns)] = await metadata.get_bundles(ns)
        glob = await metadata.read_policies(ns)
        snap.global_boundaries[str(ns)] = (
            list(glob[0].bundles.get("boundaries", [])) if glob is not None and glob[0].bundles else None
        )
        try:
            ranges = await store.children(namespace_ownership_path(ns))
        except NoNodeError:
            ranges = []
        for rng in ranges:
            name = f"{ns}/{rng}"
            path = ownership_path(name)
            node = await store.get_or_none(path)
            if node is not None:
                snap.owners[name] = OwnerInfo(
                    name,
                    NamespaceEphemeralData.from_bytes(node.data, path),
                    node.stat.ephemeral_owner,
                    node.stat.version,
                )
    return snap


async def check_coordination_invariants(
    store: MetadataStore,
    namespaces: Iterable[NamespaceName | str],
    *,
    beliefs: Mapping[str, Iterable[str]] | None = None,
    require_all_owned: bool = False,
    default_num_bundles: int = 4,
) -> CoordinationSnapshot:
    """Check the invariants (see the module docstring); returns the snapshot read.

    ``beliefs`` maps each broker id to the bundles it believes it owns.
    """
    snap = await read_coordination_snapshot(store, namespaces, default_num_bundles)
    for ns, bundles in snap.bundles.items():
        assert_ring_covers_keyspace(bundles)
        stored_global = snap.global_boundaries[ns]
        local = bundles.to_json()["boundaries"]
        if stored_global is not None and stored_global != local:
            raise InvariantViolation(
                f"namespace {ns}: global policies boundaries {stored_global} differ from "
                f"local policies boundaries {local}"
            )
    current = {str(b) for bundles in snap.bundles.values() for b in bundles}
    stray = sorted(set(snap.owners) - current)
    if stray:
        raise InvariantViolation(
            f"ownership nodes for bundles that are not in the ring: {stray}; owners: {snap.owner_ids()}"
        )
    if require_all_owned:
        unowned = sorted(current - set(snap.owners))
        if unowned:
            raise InvariantViolation(f"bundles without an owner: {unowned}; owners: {snap.owner_ids()}")
    if beliefs is not None:
        claims = {broker: [bundle_name(b) for b in owned] for broker, owned in beliefs.items()}
        assert_single_owner(claims)
        wrong = {
            f"{broker} believes it owns {b}, the store says {snap.owner_ids().get(b)}"
            for broker, owned in claims.items()
            for b in owned
            if b not in snap.owners or snap.owners[b].broker_id != broker
        }
        if wrong:
            raise InvariantViolation(f"beliefs disagree with the store: {sorted(wrong)}")
    return snap
