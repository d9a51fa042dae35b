"""Namespaces, their bundles on the hash ring, and which bundle every topic is in.

The topology is the simulator's vectorised picture of :mod:`brokerlb.ring`: each
namespace is a :class:`~brokerlb.ring.NamespaceBundles`; every bundle ever created
gets a global integer id (ids are never reused, so per-bundle arrays can grow when a
bundle splits); ``topic_bundle[t]`` is the id of the bundle topic ``t`` hashes into
(CRC-32 of the full name, binary search of the boundaries -- the real rule).

>>> topo = Topology([("t/ns", 4)], {"t/ns": ["persistent://t/ns/a", "persistent://t/ns/b"]})
>>> [topo.bundle_names[i] for i in topo.topic_bundle]
['t/ns/0x80000000_0xc0000000', 't/ns/0x00000000_0x40000000']
>>> children = topo.split(topo.topic_bundle[0], [0xa0000000])     # topic a hashes to 0xa656722e
>>> [topo.bundle_names[i] for i in children], topo.num_live_bundles
(['t/ns/0x80000000_0xa0000000', 't/ns/0xa0000000_0xc0000000'], 5)
>>> topo.bundle_names[topo.topic_bundle[0]]
't/ns/0xa0000000_0xc0000000'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from brokerlb.ring import NamespaceBundles, topic_hashes

__all__ = ["Topology"]


class Topology:
    """Bundles and topics of all namespaces; see the module docstring.

    Attributes (numpy arrays are indexed by topic id or bundle id):

    * ``namespaces`` -- namespace names, in order; ``ns_index`` maps name -> index;
    * ``topic_names``, ``topic_ns``, ``topic_hash``, ``topic_bundle``;
    * ``bundle_names``, ``bundle_ns``, ``bundle_live`` (False once split), ``bundle_index``
      (name -> id, live bundles only).
    """

    def __init__(
        self, namespaces: Sequence[tuple[str, int | NamespaceBundles]], topics: Mapping[str, Sequence[str]]
    ) -> None:
        self.namespaces: list[str] = [name for name, _ in namespaces]
        self.ns_index: dict[str, int] = {name: i for i, name in enumerate(self.namespaces)}
        self.ns_bundles: list[NamespaceBundles] = []
        self.ns_bundle_ids: list[np.ndarray] = []
        self.bundle_names: list[str] = []
        self._bundle_ns: list[int] = []
        self.bundle_live = np.zeros(0, dtype=bool)
        self.bundle_index: dict[str, int] = {}
        #: bumped whenever a topic moves to another bundle (a split or a merge)
        self.version = 0
        for i, (name, spec) in enumerate(namespaces):
            bundles = spec if isinstance(spec, NamespaceBundles) else NamespaceBundles.create(name, spec)
            self.ns_bundles.append(bundles)
            self.ns_bundle_ids.append(self._new_bundles(i, bundles, bundles.bundles))

        names: list[str] = []
        ns_of: list[int] = []
        for name in self.namespaces:
            ns_topics = list(topics.get(name, ()))
            names.extend(ns_topics)
            ns_of.extend([self.ns_index[name]] * len(ns_topics))
        unknown = set(topics) - set(self.ns_index)
        if unknown:
            raise ValueError(f"topics given for undeclared namespaces: {sorted(unknown)}")
        self.topic_names: list[str] = names
        self.topic_ns = np.asarray(ns_of, dtype=np.int32)
        self.topic_hash = topic_hashes(names, len(names)) if names else np.zeros(0, dtype=np.int64)
        self.topic_bundle = np.zeros(len(names), dtype=np.int32)
        self._ns_topics = [np.flatnonzero(self.topic_ns == i) for i in range(len(self.namespaces))]
        for i in range(len(self.namespaces)):
            self._map_topics(i)

    # ------------------------------------------------------------------ sizes

    @property
    def num_topics(self) -> int:
        return len(self.topic_names)

    @property
    def num_bundle_ids(self) -> int:
        """Bundle ids handed out so far (live and split); per-bundle arrays have this length."""
        return len(self.bundle_names)

    @property
    def num_live_bundles(self) -> int:
        return int(self.bundle_live.sum())

    @property
    def bundle_ns(self) -> np.ndarray:
        return np.asarray(self._bundle_ns, dtype=np.int32)

    def namespace_of_bundle(self, bundle_id: int) -> str:
        return self.namespaces[self._bundle_ns[bundle_id]]

    def topics_of_namespace(self, ns: int) -> np.ndarray:
        return self._ns_topics[ns]

    def bundles_of_namespace(self, ns: int) -> np.ndarray:
        return self.ns_bundle_ids[ns]

    # ------------------------------------------------------------------ changes

    def split(self, bundle_id: int, boundaries: Iterable[int | str]) -> list[int]:
        """Split a live bundle at ``boundaries`` (validated by the ring); returns the children's ids.

        Topics of the namespace are re-mapped; the parent stops being live.
        """
        ns = self._bundle_ns[bundle_id]
        if not self.bundle_live[bundle_id]:
            raise ValueError(f"bundle {self.bundle_names[bundle_id]} is not live")
        old = self.ns_bundles[ns]
        parent = old.get_bundle(self.bundle_names[bundle_id])
        new = old.split(parent, boundaries)
        children = [b for b in new.bundles if parent.lower <= b.lower and b.upper <= parent.upper]
        child_ids = self._new_bundles(ns, new, children)
        self.bundle_live[bundle_id] = False
        del self.bundle_index[self.bundle_names[bundle_id]]
        old_ids = self.ns_bundle_ids[ns]
        pos = int(np.flatnonzero(old_ids == bundle_id)[0])
        self.ns_bundle_ids[ns] = np.concatenate([old_ids[:pos], child_ids, old_ids[pos + 1 :]]).astype(
            np.int32
        )
        self.ns_bundles[ns] = new
        self._map_topics(ns)
        return [int(i) for i in child_ids]

    def merge(self, bundle_ids: Sequence[int]) -> int:
        """Merge adjacent live bundles of one namespace (validated by the ring); returns the merged
        bundle's id. Topics of the namespace are re-mapped; the parts stop being live."""
        if not bundle_ids:
            raise ValueError("nothing to merge")
        ns = self._bundle_ns[bundle_ids[0]]
        if any(self._bundle_ns[b] != ns or not self.bundle_live[b] for b in bundle_ids):
            raise ValueError("only live bundles of one namespace merge")
        old = self.ns_bundles[ns]
        names = [self.bundle_names[b] for b in bundle_ids]
        merged = old.merged_bundle(names)
        new = old.merge(names)
        (merged_id,) = self._new_bundles(ns, new, [merged])
        parts = set(bundle_ids)
        for b in bundle_ids:
            self.bundle_live[b] = False
            del self.bundle_index[self.bundle_names[b]]
        old_ids = self.ns_bundle_ids[ns]
        first = min(int(np.flatnonzero(old_ids == b)[0]) for b in bundle_ids)
        kept = [int(i) for i in old_ids if int(i) not in parts]
        kept.insert(first, int(merged_id))
        self.ns_bundle_ids[ns] = np.asarray(kept, dtype=np.int32)
        self.ns_bundles[ns] = new
        self._map_topics(ns)
        return int(merged_id)

    def _new_bundles(self, ns: int, bundles: NamespaceBundles, items: Sequence[object]) -> np.ndarray:
        start = len(self.bundle_names)
        for b in items:
            name = str(b)
            self.bundle_index[name] = len(self.bundle_names)
            self.bundle_names.append(name)
            self._bundle_ns.append(ns)
        self.bundle_live = np.concatenate([self.bundle_live, np.ones(len(items), dtype=bool)])
        return np.arange(start, len(self.bundle_names), dtype=np.int32)

    def _map_topics(self, ns: int) -> None:
        self.version += 1
        ids = self._ns_topics[ns]
        if len(ids) == 0:
            return
        bounds = np.asarray(self.ns_bundles[ns].boundaries, dtype=np.int64)
        idx = np.searchsorted(bounds, self.topic_hash[ids], side="right") - 1
        np.minimum(idx, len(bounds) - 2, out=idx)
        self.topic_bundle[ids] = self.ns_bundle_ids[ns][idx]
