"""The ownership table in the metadata store: one record per bundle, read by watches, changed by CAS.

Pulsar's ``ServiceUnitStateMetadataStoreTableViewImpl`` (4.0+): every bundle's
:class:`~brokerlb.ownership.record.OwnershipRecord` (``ServiceUnitStateData`` JSON) is a persistent
node ``/service_unit_state/{tenant}/{namespace}/{range}``. :class:`OwnershipTable` is the shell
around it, for every broker:

* **reading** -- a watch-fed mirror of the whole table (:class:`~brokerlb.coordination.cache.TreeCache`
  on the prefix): :meth:`OwnershipTable.start` returns once the records stored now are loaded, and
  listeners hear every record that appears, changes or goes, with its node version (the
  compare-and-set key) and transaction id (the order of changes). An unreadable record is logged
  and skipped;
* **writing** -- :meth:`OwnershipTable.write` carries out one :class:`~brokerlb.ownership.events.Write`
  of the ownership machine as a compare-and-set on the node version (a create when the bundle has
  no record, a delete for a tombstone); :meth:`OwnershipTable.commit` writes several records and
  other operations (the namespace's bundles for a split or a merge) in **one transaction**. A lost
  race is :class:`~brokerlb.errors.RecordConflictError`. ``guards`` are checks the write is
  conditional on -- the leader's epoch (:func:`~brokerlb.coordination.election.fenced_ops`), the
  namespace's bundles unchanged (a lookup's assignment): a failed guard raises the error its
  :class:`Guard` names, and nothing is written.

The machine that reduces the table is pure (:mod:`brokerlb.ownership`); this module only moves
records between it and the store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from brokerlb.coordination.cache import TreeCache
from brokerlb.coordination.paths import (
    SERVICE_UNIT_STATE_ROOT,
    bundle_of_service_unit_path,
    is_range_segment,
    service_unit_state_path,
)
from brokerlb.coordination.store import (
    CheckOp,
    CreateOp,
    DeleteOp,
    MetadataStore,
    Node,
    Op,
    SetOp,
    parent_path,
)
from brokerlb.errors import (
    BadVersionError,
    BrokerLBError,
    CorruptMetadataError,
    InvalidBundleRangeError,
    InvalidInputError,
    NodeExistsError,
    NoNodeError,
    RecordConflictError,
)
from brokerlb.ownership.events import NO_NODE, Write
from brokerlb.ownership.record import OwnershipRecord, record_from_bytes

__all__ = ["OwnershipTable", "StoredRecord", "Guard", "RecordListener"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A record as the table view holds it: the record, its node version and its ``mzxid``."""

    bundle: str
    record: OwnershipRecord
    stat_version: int
    zxid: int


#: ``listener(bundle, stored | None)``: a record appeared or changed, or went (``None``).
RecordListener = Callable[[str, StoredRecord | None], None]


@dataclass(frozen=True, slots=True)
class Guard:
    """A check a write is conditional on, and the error raised when it fails (nothing is written)."""

    op: CheckOp
    error: Callable[[], BrokerLBError]


def _is_record_leaf(path: str, depth: int) -> bool:
    return depth >= 3 and is_range_segment(path.rsplit("/", 1)[1])


class OwnershipTable:
    """Every bundle's ownership record, mirrored by watches, written by compare-and-set."""

    def __init__(self, store: MetadataStore, *, root: str = SERVICE_UNIT_STATE_ROOT) -> None:
        self.store = store
        self.root = root
        self._tree = TreeCache(store, root, is_leaf=_is_record_leaf, max_depth=4)
        self._tree.add_listener(self._on_leaf)
        self._records: dict[str, StoredRecord] = {}
        self._listeners: list[RecordListener] = []
        self._namespaces: set[str] = set()

    async def start(self) -> OwnershipTable:
        """Start mirroring; returns once the records stored now are loaded."""
        await self.store.ensure_path(self.root)
        await self._tree.start()
        return self

    def close(self) -> None:
        self._tree.close()
        self._records.clear()

    async def settled(self) -> None:
        await self._tree.settled()

    # ------------------------------------------------------------------ reading
    def get(self, bundle: str) -> StoredRecord | None:
        return self._records.get(bundle)

    def __iter__(self) -> Iterator[StoredRecord]:
        return iter(list(self._records.values()))

    def __len__(self) -> int:
        return len(self._records)

    async def read(self, bundle: str) -> StoredRecord | None:
        """The record as the store has it now (the mirror may be a notification behind)."""
        path = service_unit_state_path(bundle)
        node = await self.store.get_or_none(path)
        return None if node is None else _stored(bundle, node, path)

    def add_listener(self, listener: RecordListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    # ------------------------------------------------------------------ writing
    async def write(self, write: Write, *, guards: Sequence[Guard] = ()) -> None:
        """Compare-and-set one record (module docstring)."""
        await self.commit([write], guards=guards)

    async def commit(
        self, writes: Sequence[Write], *, ops: Sequence[Op] = (), guards: Sequence[Guard] = ()
    ) -> None:
        """``writes`` and ``ops`` in one transaction, conditional on ``guards``."""
        for w in writes:
            await self._ensure_namespace(w.bundle)
        checks: list[Op] = [g.op for g in guards]
        record_ops = [self._op(w) for w in writes]
        all_ops = [*checks, *record_ops, *ops]
        try:
            if len(all_ops) == 1:
                await self._single(all_ops[0])
            else:
                await self.store.multi(all_ops)
        except (BadVersionError, NodeExistsError, NoNodeError) as exc:
            index = exc.op_index if len(all_ops) > 1 else len(checks)
            if index is not None and index < len(checks):
                raise guards[index].error() from exc
            if index is not None and index < len(checks) + len(record_ops):
                w = writes[index - len(checks)]
                raise RecordConflictError(
                    f"The ownership record of {w.bundle} changed meanwhile (expected version {w.expected}); "
                    "read it again"
                ) from exc
            raise
        self._note_written(writes)

    async def _single(self, op: Op) -> None:
        if isinstance(op, CreateOp):
            await self.store.create(op.path, op.data)
        elif isinstance(op, SetOp):
            await self.store.set(op.path, op.data, version=op.version)
        elif isinstance(op, DeleteOp):
            await self.store.delete(op.path, version=op.version)
        else:
            await self.store.multi([op])

    def _op(self, w: Write) -> Op:
        path = service_unit_state_path(w.bundle)
        if w.record is None:
            return DeleteOp(path, w.expected)
        if w.expected == NO_NODE:
            return CreateOp(path, w.record.to_bytes())
        return SetOp(path, w.record.to_bytes(), w.expected)

    async def _ensure_namespace(self, bundle: str) -> None:
        namespace = bundle.rpartition("/")[0]
        if namespace not in self._namespaces:
            await self.store.ensure_path(parent_path(service_unit_state_path(bundle)))
            self._namespaces.add(namespace)

    def _note_written(self, writes: Sequence[Write]) -> None:
        for w in writes:
            logger.debug("Wrote the ownership record of %s: %s (%s)", w.bundle, w.record, w.reason)

    # ------------------------------------------------------------------ the mirror
    def _on_leaf(self, path: str, node: Node | None) -> None:
        try:
            bundle = str(bundle_of_service_unit_path(path))
        except (InvalidBundleRangeError, InvalidInputError) as exc:
            logger.error("Ignoring an unexpected node under %s: %s (%s)", self.root, path, exc)
            return
        stored: StoredRecord | None = None
        if node is not None:
            try:
                stored = _stored(bundle, node, path)
            except CorruptMetadataError as exc:
                logger.error("Ignoring an unreadable ownership record: %s", exc)
                return
            self._records[bundle] = stored
        elif self._records.pop(bundle, None) is None:
            return
        for listener in list(self._listeners):
            try:
                listener(bundle, stored)
            except Exception:
                logger.exception("Ownership table listener failed for %s", bundle)


def _stored(bundle: str, node: Node, path: str) -> StoredRecord:
    return StoredRecord(bundle, record_from_bytes(node.data, path), node.stat.version, node.stat.mzxid)
