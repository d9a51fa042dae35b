"""Invariant checkers, written once and used by tests, the simulator and the shells.

Each raises :class:`InvariantViolation` with a message that prints the whole
state it looked at, so a failure can be read without a debugger.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from brokerlb.ring.bundles import NamespaceBundle, NamespaceBundles
from brokerlb.ring.hashing import FULL_LOWER_BOUND, FULL_UPPER_BOUND, topic_hash

__all__ = [
    "InvariantViolation",
    "assert_ring_covers_keyspace",
    "assert_every_topic_in_one_bundle",
    "assert_single_owner",
]


class InvariantViolation(AssertionError):
    """An invariant of the system does not hold."""


def assert_ring_covers_keyspace(bundles: NamespaceBundles | Iterable[NamespaceBundle]) -> None:
    """The bundles cover ``[0x00000000, 0xffffffff]`` with no gap and no overlap.

    Works on a :class:`NamespaceBundles` or on any collection of bundles of one
    namespace (e.g. the bundles owned across all brokers).
    """
    items = sorted(bundles, key=lambda b: b.lower)
    shown = ", ".join(b.range for b in items)
    if not items:
        raise InvariantViolation("ring is empty: no bundle covers the keyspace")
    namespaces = {str(b.namespace) for b in items}
    if len(namespaces) != 1:
        raise InvariantViolation(f"bundles of several namespaces {sorted(namespaces)} given: [{shown}]")
    if items[0].lower != FULL_LOWER_BOUND:
        raise InvariantViolation(
            f"gap at the start: first bundle starts at 0x{items[0].lower:08x}: [{shown}]"
        )
    if items[-1].upper != FULL_UPPER_BOUND:
        raise InvariantViolation(f"gap at the end: last bundle ends at 0x{items[-1].upper:08x}: [{shown}]")
    for left, right in zip(items, items[1:], strict=False):
        if left.upper < right.lower:
            raise InvariantViolation(f"gap between {left.range} and {right.range}: [{shown}]")
        if left.upper > right.lower:
            raise InvariantViolation(f"overlap between {left.range} and {right.range}: [{shown}]")
    for b in items:
        if b.lower >= b.upper:
            raise InvariantViolation(f"empty bundle {b.range}: [{shown}]")


def assert_every_topic_in_one_bundle(bundles: NamespaceBundles, topics: Iterable[str]) -> None:
    """Every topic's hash falls in exactly one bundle, and it is the one ``find_bundle`` returns."""
    all_bundles = bundles.bundles
    for name in topics:
        h = topic_hash(name)
        holders = [b for b in all_bundles if b.includes_hash(h)]
        found = bundles.find_bundle(name)
        if len(holders) != 1 or holders[0] != found:
            raise InvariantViolation(
                f"topic {name} (hash 0x{h:08x}) is in {[b.range for b in holders]} but find_bundle gave "
                f"{found.range}; boundaries {bundles.to_json()['boundaries']}"
            )


def assert_single_owner(claims: Mapping[Any, Iterable[Any]] | Iterable[tuple[Any, Any]]) -> None:
    """Each bundle has at most one owner.

    ``claims`` is either ``{broker: [bundles it believes it owns]}`` or an iterable
    of ``(bundle, broker)`` pairs.
    """
    owners: dict[str, set[str]] = {}
    pairs: Iterable[tuple[Any, Any]]
    if isinstance(claims, Mapping):
        pairs = ((bundle, broker) for broker, owned in claims.items() for bundle in owned)
    else:
        pairs = claims
    for bundle, broker in pairs:
        owners.setdefault(str(bundle), set()).add(str(broker))
    doubled = {b: sorted(o) for b, o in owners.items() if len(o) > 1}
    if doubled:
        raise InvariantViolation(
            f"bundles with more than one owner: {doubled}; all claims: "
            f"{ {b: sorted(o) for b, o in sorted(owners.items())} }"
        )
