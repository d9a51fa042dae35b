"""One bundle's ownership record -- Pulsar's ``ServiceUnitStateData`` -- and the rules of its changes.

The record is what the metadata store keeps at ``/service_unit_state/{tenant}/{namespace}/{range}``
(Pulsar's ``ServiceUnitStateMetadataStoreTableViewImpl.PATH_PREFIX``), one JSON object per bundle,
in Pulsar's field names::

    {"state": "Owned", "dstBroker": "b1:8080", "sourceBroker": null,
     "splitServiceUnitToDestBroker": null, "force": false, "timestamp": 1718000000000,
     "versionId": 3, "dstBrokerSessionId": 72057602627862528, "sourceBrokerSessionId": null}

``dstBrokerSessionId`` / ``sourceBrokerSessionId`` are brokerlb's additions: the metadata-store
session of the broker named, when it took the part the record gives it. A record names an
*incarnation* of a broker, not just its id, so every reader can tell a record of an ended session
(the broker's registration now belongs to another session, or is gone) from a live one, and a
broker that comes back under a new session recognises what it held before as no longer its own.

:func:`check_next` is Pulsar's ``ServiceUnitStateDataConflictResolver`` for the metadata-store
table view (``shouldKeepLeft`` with ``StorageType.MetadataStore``): a new record must carry the
next ``versionId`` (1 for a bundle without a record), make a valid transition
(:data:`~brokerlb.ownership.states.VALID_TRANSITIONS`, or one of brokerlb's
:data:`~brokerlb.ownership.states.COMMIT_TRANSITIONS` inside a split or merge commit) and name the
brokers Pulsar's ``checkBrokers`` requires. A ``force`` record (the leader's override) skips the
transition table but may not bring back a Deleted bundle. The writer checks before it writes; the
store's compare-and-set on the node version makes the check the last word.

This module is pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from brokerlb.errors import CorruptMetadataError, InvalidTransitionError
from brokerlb.ownership.states import (
    ACTIVE,
    COMMIT_TRANSITIONS,
    IN_FLIGHT,
    BundleState,
    is_valid_transition,
)

__all__ = [
    "OwnershipRecord",
    "VERSION_ID_INIT",
    "check_next",
    "state_of",
    "record_from_json",
    "record_from_bytes",
]

S = BundleState
#: Pulsar's ``ServiceUnitStateChannelImpl.VERSION_ID_INIT``: a bundle's first record.
VERSION_ID_INIT = 1


@dataclass(frozen=True, slots=True)
class OwnershipRecord:
    """A bundle's ownership record (module docstring). ``None`` stands for Pulsar's Init (no record)."""

    state: BundleState
    #: ``dstBroker``: the broker that owns the bundle, or is taking it.
    dst: str | None = None
    #: ``sourceBroker``: the broker giving it up (release, transfer), or splitting it.
    src: str | None = None
    #: ``splitServiceUnitToDestBroker``: the children ranges of a split (``0x…_0x…``), in ring order.
    children: tuple[str, ...] = ()
    #: ``force``: written by the leader's override (orphans of an ended session, stuck states).
    force: bool = False
    #: ``timestamp``: when the record was written (ms, the writer's clock).
    timestamp: int = 0
    #: ``versionId``: 1 for a bundle's first record, then one more per change.
    version: int = VERSION_ID_INIT
    #: brokerlb: the session under which ``dst`` holds the bundle (``Owned``).
    dst_session: int | None = None
    #: brokerlb: the session under which ``src`` releases or splits it (``Releasing``, ``Splitting``).
    src_session: int | None = None

    def __post_init__(self) -> None:
        if self.state is S.INIT:
            raise InvalidTransitionError("An Init bundle has no record (it is the absence of one)")
        if self.state is not S.FREE and not self.dst and not self.src:
            raise InvalidTransitionError(
                f"A {self.state} record must name a broker"
            )  # Pulsar: "Empty broker"

    # ------------------------------------------------------------------ reading
    @property
    def in_flight(self) -> bool:
        return self.state in IN_FLIGHT

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    @property
    def is_transfer(self) -> bool:
        """Pulsar's ``isTransferCommand``: both a source and a destination."""
        return bool(self.dst) and bool(self.src)

    def holder(self) -> tuple[str | None, int | None]:
        """The broker responsible for the bundle now and the session it acts under: the owner of an
        Owned or Assigning bundle (``dst``; its session once it took it), the source of a Releasing
        or Splitting one."""
        if self.state in (S.OWNED, S.ASSIGNING):
            return self.dst, self.dst_session
        if self.state in (S.RELEASING, S.SPLITTING):
            return self.src, self.src_session
        return None, None

    def names(self, broker: str) -> bool:
        return broker in (self.dst, self.src)

    def next(self, state: BundleState, *, at_ms: int, **changes: Any) -> OwnershipRecord:
        """The record after a change to ``state`` (one more ``versionId``); fields not given are
        cleared as Pulsar's constructors leave them: brokers and children must be given again."""
        fields: dict[str, Any] = {
            "dst": None,
            "src": None,
            "children": (),
            "force": False,
            "dst_session": None,
            "src_session": None,
        }
        fields.update(changes)
        return OwnershipRecord(state, timestamp=at_ms, version=self.version + 1, **fields)

    def __str__(self) -> str:
        parts = [str(self.state)]
        if self.src:
            parts.append(f"src {self.src}")
        if self.dst:
            parts.append(f"dst {self.dst}")
        if self.children:
            parts.append("children " + ",".join(self.children))
        if self.force:
            parts.append("force")
        return f"{' '.join(parts)} v{self.version}"

    # ------------------------------------------------------------------ JSON (Pulsar's field names)
    def to_json(self) -> dict[str, Any]:
        split = {c: None for c in self.children} if self.children else None
        return {
            "state": self.state.value,
            "dstBroker": self.dst,
            "sourceBroker": self.src,
            "splitServiceUnitToDestBroker": split,
            "force": self.force,
            "timestamp": self.timestamp,
            "versionId": self.version,
            "dstBrokerSessionId": self.dst_session,
            "sourceBrokerSessionId": self.src_session,
        }

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_json(), separators=(",", ":")).encode()

    def with_force(self) -> OwnershipRecord:
        return replace(self, force=True)


def state_of(record: OwnershipRecord | None) -> BundleState:
    """Pulsar's ``ServiceUnitStateData.state(data)``: Init when there is no record."""
    return S.INIT if record is None else record.state


_STATES = {s.value: s for s in BundleState if s is not S.INIT}


def record_from_json(data: object, path: str = "") -> OwnershipRecord:
    """Decode a stored record; :class:`~brokerlb.errors.CorruptMetadataError` names what is wrong."""
    if not isinstance(data, Mapping):
        raise CorruptMetadataError(f"an ownership record must be a JSON object, got {data!r}", path)
    state = _STATES.get(str(data.get("state")))
    if state is None:
        raise CorruptMetadataError(f"unknown ownership state {data.get('state')!r}", path)
    split = data.get("splitServiceUnitToDestBroker")
    if split is not None and not isinstance(split, Mapping):
        raise CorruptMetadataError(f"splitServiceUnitToDestBroker must be an object, got {split!r}", path)
    try:
        return OwnershipRecord(
            state,
            dst=_opt_str(data.get("dstBroker"), "dstBroker", path),
            src=_opt_str(data.get("sourceBroker"), "sourceBroker", path),
            children=tuple(sorted(split or (), key=_range_order)),
            force=bool(data.get("force", False)),
            timestamp=_int(data.get("timestamp", 0), "timestamp", path),
            version=_int(data.get("versionId"), "versionId", path),
            dst_session=_opt_int(data.get("dstBrokerSessionId"), "dstBrokerSessionId", path),
            src_session=_opt_int(data.get("sourceBrokerSessionId"), "sourceBrokerSessionId", path),
        )
    except InvalidTransitionError as exc:
        raise CorruptMetadataError(str(exc), path) from None


def record_from_bytes(raw: bytes, path: str = "") -> OwnershipRecord:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptMetadataError(f"an ownership record is not JSON: {exc}", path) from None
    return record_from_json(data, path)


def _range_order(child: str) -> str:
    return child.rpartition("/")[2]


def _opt_str(value: object, name: str, path: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise CorruptMetadataError(f"{name} must be a string, got {value!r}", path)
    return value


def _int(value: object, name: str, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CorruptMetadataError(f"{name} must be an integer, got {value!r}", path)
    return value


def _opt_int(value: object, name: str, path: str) -> int | None:
    return None if value is None else _int(value, name, path)


# --------------------------------------------------------------------------- the conflict resolver


@dataclass(frozen=True, slots=True)
class _Change:
    prev: OwnershipRecord | None
    new: OwnershipRecord
    commit: bool = field(default=False)


def check_next(prev: OwnershipRecord | None, new: OwnershipRecord | None, *, commit: bool = False) -> None:
    """Raise :class:`~brokerlb.errors.InvalidTransitionError` unless ``new`` may follow ``prev``
    (module docstring). ``new=None`` is a tombstone (the record deleted: back to Init), allowed from
    Free and Deleted. ``commit``: the change is part of a split or merge commit, made in one
    transaction with the namespace's bundles."""
    start = state_of(prev)
    if new is None:
        if start not in (S.FREE, S.DELETED):
            raise InvalidTransitionError(f"Only a Free or Deleted record is tombstoned, not a {start} one")
        return
    expected = VERSION_ID_INIT if prev is None else prev.version + 1
    if new.version != expected:
        raise InvalidTransitionError(f"versionId {new.version} does not follow {start} v{expected - 1}")
    if new.force:
        if start is S.DELETED:
            raise InvalidTransitionError("A Deleted bundle is out of the ring; no override brings it back")
        return
    finish = new.state
    if commit:
        if (start, finish) not in COMMIT_TRANSITIONS:
            raise InvalidTransitionError(f"{start} -> {finish} is not a split or merge commit")
    elif not is_valid_transition(start, finish):
        raise InvalidTransitionError(f"{start} -> {finish} is not a valid transition")
    why = _broker_rule(_Change(prev, new, commit))
    if why:
        raise InvalidTransitionError(f"{start} -> {finish}: {why}")


def _broker_rule(change: _Change) -> str:
    """Pulsar's ``checkBrokers`` (``ServiceUnitStateDataConflictResolver``), with brokerlb's rules
    for the sessions and the commits; an empty string when the brokers are right."""
    prev, new = change.prev, change.new
    start, finish = state_of(prev), new.state
    if change.commit:
        if finish is S.OWNED and not (new.dst and new.dst_session is not None):
            return "a committed child or merged bundle names its owner and session"
        if start is S.SPLITTING and finish is S.DELETED and prev is not None and new.src != prev.src:
            return "the split is committed by its source"
        if start is S.OWNED and finish is S.DELETED and prev is not None and new.src != prev.dst:
            return "a merged part is committed by its owner"
        return ""
    assert prev is not None or start is S.INIT
    if start is S.OWNED and prev is not None:
        if finish is S.SPLITTING and (new.dst or prev.dst != new.src):
            return "a split is made by the owner (sourceBroker = the owner, no dstBroker)"
        if finish is S.RELEASING and (not new.src or prev.dst != new.src or prev.dst == new.dst):
            return "a release names the owner as sourceBroker and another broker (or none) as dstBroker"
    if start is S.ASSIGNING and prev is not None and finish is S.OWNED:
        if (prev.dst, prev.src) != (new.dst, new.src):
            return "the destination takes the bundle as it was assigned"
        if new.dst_session is None:
            return "the owner names its session"
    if start is S.RELEASING and prev is not None:
        if finish is S.ASSIGNING and (not new.dst or new.src != prev.src or prev.dst not in (None, new.dst)):
            return "a transfer goes on to its destination"  # (brokerlb: an unload may choose one, see docs)
        if finish is S.FREE and (prev.dst, prev.src) != (new.dst, new.src) and new.src != prev.src:
            return "a release ends as it began"
    if start is S.SPLITTING and prev is not None and finish is S.DELETED and new.src != prev.src:
        return "the split ends as it began"
    if start in (S.INIT, S.FREE) and finish is S.ASSIGNING and (new.src or not new.dst):
        return "an assignment names a destination and no source"
    return ""
