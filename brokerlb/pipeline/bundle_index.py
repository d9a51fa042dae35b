"""Vectorised topic → bundle lookup against namespace layouts that change over time (pure numpy).

A *layout version* is one ``bundle-boundaries`` record: a namespace's boundaries valid from its
timestamp until the namespace's next record. :class:`BoundaryIndex` numbers the versions
(``versionId``, ordered by namespace then time) and answers, for many rows at once:

* :meth:`BoundaryIndex.version_at` -- the version valid at a time (``-1`` when the namespace has
  no record at or before it);
* :meth:`BoundaryIndex.bundle_of` -- the bundle ``[lower, upper)`` a hash falls in under a version.
  As in :class:`brokerlb.ring.NamespaceBundles`, the last bundle includes ``0xffffffff``.

Both are a single ``numpy.searchsorted`` over packed 64-bit keys (``namespace << 42 | time``;
``version << 33 | lower``), so a batch of a million rows takes milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from brokerlb.history.records import MAX_TIMESTAMP_MS
from brokerlb.ring import NamespaceBundles

__all__ = ["LayoutVersion", "BoundaryIndex"]

_TIME_BITS = 42
_HASH_BITS = 33


@dataclass(frozen=True, slots=True)
class LayoutVersion:
    """One namespace layout: ``boundaries`` valid from ``valid_from`` (ms) until ``valid_to`` (exclusive; ``None`` = open)."""

    version_id: int
    namespace: str
    valid_from: int
    valid_to: int | None
    boundaries: tuple[int, ...]


class BoundaryIndex:
    """Layout versions of many namespaces, for vectorised lookups (see the module docstring)."""

    def __init__(self, records: Iterable[tuple[str, int, Sequence[int]]]) -> None:
        """``records``: ``(namespace, timestamp, boundaries)``; a repeated ``(namespace, timestamp)`` keeps the last."""
        latest: dict[tuple[str, int], tuple[int, ...]] = {}
        for namespace, timestamp, boundaries in records:
            if not 0 <= int(timestamp) <= MAX_TIMESTAMP_MS:
                raise ValueError(f"timestamp {timestamp} of namespace {namespace} is outside [0, 2**42)")
            bounds = tuple(int(b) for b in boundaries)
            NamespaceBundles(namespace, bounds)  # validates: sorted, covers the ring
            latest[(namespace, int(timestamp))] = bounds
        keys = sorted(latest)
        self.namespaces: list[str] = sorted({ns for ns, _ in keys})
        self._ns_id = {ns: i for i, ns in enumerate(self.namespaces)}
        versions: list[LayoutVersion] = []
        for i, (namespace, valid_from) in enumerate(keys):
            nxt = keys[i + 1] if i + 1 < len(keys) else None
            valid_to = nxt[1] if nxt is not None and nxt[0] == namespace else None
            versions.append(
                LayoutVersion(i, namespace, valid_from, valid_to, latest[(namespace, valid_from)])
            )
        self.versions = versions
        ns_ids = np.array([self._ns_id[v.namespace] for v in versions], dtype=np.int64)
        froms = np.array([v.valid_from for v in versions], dtype=np.int64)
        self._version_keys = (ns_ids << _TIME_BITS) | froms
        self._version_ns = ns_ids
        lowers: list[int] = []
        uppers: list[int] = []
        owners: list[int] = []
        for v in versions:
            lowers.extend(v.boundaries[:-1])
            uppers.extend(v.boundaries[1:])
            owners.extend([v.version_id] * (len(v.boundaries) - 1))
        self._lower = np.array(lowers, dtype=np.int64)
        self._upper = np.array(uppers, dtype=np.int64)
        self._bundle_version = np.array(owners, dtype=np.int64)
        self._bundle_keys = (self._bundle_version << _HASH_BITS) | self._lower

    def __len__(self) -> int:
        return len(self.versions)

    def namespace_id(self, namespace: str) -> int:
        """The namespace's id, ``-1`` if it has no layout."""
        return self._ns_id.get(namespace, -1)

    def version_at(self, namespace_ids: np.ndarray, timestamps: np.ndarray) -> np.ndarray:
        """``versionId`` valid at each time, ``-1`` where none (unknown namespace or before its first record)."""
        ns = np.asarray(namespace_ids, dtype=np.int64)
        ts = np.asarray(timestamps, dtype=np.int64)
        if len(self.versions) == 0:
            return np.full(ns.shape, -1, dtype=np.int64)
        query = (np.maximum(ns, 0) << _TIME_BITS) | ts
        pos = np.searchsorted(self._version_keys, query, side="right") - 1
        safe = np.maximum(pos, 0)
        ok = (ns >= 0) & (pos >= 0) & (self._version_ns[safe] == ns)
        return np.where(ok, pos, -1)

    def bundle_of(self, version_ids: np.ndarray, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` of the bundle holding each hash under each version; ``-1`` where the version is ``-1``."""
        vid = np.asarray(version_ids, dtype=np.int64)
        h = np.asarray(hashes, dtype=np.int64)
        if len(self._bundle_keys) == 0:
            missing = np.full(vid.shape, -1, dtype=np.int64)
            return missing, missing.copy()
        pos = np.searchsorted(self._bundle_keys, (np.maximum(vid, 0) << _HASH_BITS) | h, side="right") - 1
        safe = np.maximum(pos, 0)
        ok = (vid >= 0) & (pos >= 0) & (self._bundle_version[safe] == vid)
        return np.where(ok, self._lower[safe], -1), np.where(ok, self._upper[safe], -1)

    def latest(self, until: int | None = None) -> dict[str, LayoutVersion]:
        """Each namespace's layout valid at ``until`` (default: its newest)."""
        out: dict[str, LayoutVersion] = {}
        for v in self.versions:
            if until is None or v.valid_from <= until:
                out[v.namespace] = v
        return out
