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

from brokerlb.coordination.bundle_metadata import BundleMetadata, bundle_name
from brokerlb.coordination.paths import SERVICE_UNIT_STATE_ROOT, service_unit_state_path
from brokerlb.coordination.store import MetadataStore
from brokerlb.errors import NoNodeError
from brokerlb.naming import NamespaceName
from brokerlb.ownership import BundleState
from brokerlb.ownership.record import OwnershipRecord, record_from_bytes
from brokerlb.ring.bundles import NamespaceBundles
from brokerlb.testing.invariants import InvariantViolation, assert_ring_covers_keyspace, assert_single_owner

__all__ = ["CoordinationSnapshot", "read_coordination_snapshot", "check_coordination_invariants"]


@dataclass
class CoordinationSnapshot:
    """What the store says: bundles per namespace, every record, and the owner of each owned bundle."""

    bundles: dict[str, NamespaceBundles] = field(default_factory=dict)
    global_boundaries: dict[str, list[str] | None] = field(default_factory=dict)
    records: dict[str, OwnershipRecord] = field(default_factory=dict)

    @property
    def owners(self) -> dict[str, str]:
        """Owned bundles → their owner (a split's source included)."""
        out: dict[str, str] = {}
        for b, r in self.records.items():
            holder = r.holder()[0]
            if r.state in (BundleState.OWNED, BundleState.SPLITTING) and holder is not None:
                out[b] = holder
        return out

    def owner_ids(self) -> dict[str, str | None]:
        return dict(sorted(self.owners.items()))


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
            ranges = await store.children(f"{SERVICE_UNIT_STATE_ROOT}/{ns}")
        except NoNodeError:
            ranges = []
        for rng in ranges:
            name = f"{ns}/{rng}"
            path = service_unit_state_path(name)
            node = await store.get_or_none(path)
            if node is not None:
                snap.records[name] = record_from_bytes(node.data, path)
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
    live = {b for b, r in snap.records.items() if r.state is not BundleState.DELETED}
    stray = sorted(live - current)
    if stray:
        raise InvariantViolation(
            f"live ownership records of bundles that are not in the ring: "
            f"{ {b: str(snap.records[b]) for b in stray} }; owners: {snap.owner_ids()}"
        )
    dead = sorted(b for b in current if b in snap.records and snap.records[b].state is BundleState.DELETED)
    if dead:
        raise InvariantViolation(f"bundles in the ring whose records are Deleted: {dead}")
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
            if snap.owners.get(b) != broker
        }
        if wrong:
            raise InvariantViolation(f"beliefs disagree with the store: {sorted(wrong)}")
    return snap
