"""How many bundle ranges of each namespace every broker holds, kept in step with the leader's map.

Placement's even-spread step and the modular anti-affinity count read, for one namespace, how
many of its bundle ranges each broker holds -- reported plus preallocated, Pulsar's
``brokerToNamespaceToBundleRange`` turned around. Building that for every namespace from the
broker -> namespace -> ranges map walks every (broker, namespace) pair: 100,000 of them on a
cluster of 1,000 brokers with 100 namespaces each, which a placement context paid after every
refresh. :class:`NamespaceRangeCounts` keeps the turned-around map between refreshes and, at
each :meth:`~NamespaceRangeCounts.sync`, updates it only for the brokers whose map is another
object than last time.

That relies on one rule the leader keeps: a broker's namespace map is **replaced, never changed
in place**, whenever its ranges change (the refresh builds a new map for a broker whose report
or preallocations changed and keeps the same object otherwise; the leader copies the map before
it records a preallocation). A map changed in place is not seen until it is replaced.

Worked example:

>>> counts = NamespaceRangeCounts()
>>> ranges = {"b1": {"t/a": {"0x0_0x8", "0x8_0xf"}}, "b2": {"t/a": {"0x4_0x8"}, "t/b": set()}}
>>> counts.sync(ranges)["t/a"], "t/b" in counts.sync(ranges)
({'b1': 2, 'b2': 1}, False)
>>> ranges["b1"] = {"t/b": {"0x0_0xf"}}
>>> counts.sync(ranges)
{'t/a': {'b2': 1}, 't/b': {'b1': 1}}
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet

__all__ = ["NamespaceRangeCounts", "count_ranges"]

#: broker -> namespace -> bundle ranges (the leader's ``namespace_bundle_ranges``)
BrokerRanges = Mapping[str, Mapping[str, AbstractSet[str]]]


def count_ranges(ranges: BrokerRanges) -> dict[str, dict[str, int]]:
    """``namespace -> broker -> number of its ranges there`` (brokers holding none left out)."""
    out: dict[str, dict[str, int]] = {}
    for broker, per_ns in ranges.items():
        for namespace, held in per_ns.items():
            if held:
                out.setdefault(namespace, {})[broker] = len(held)
    return out


class NamespaceRangeCounts:
    """``namespace -> broker -> number of ranges``, updated incrementally (module docstring)."""

    __slots__ = ("_counts", "_seen")

    def __init__(self) -> None:
        self._counts: dict[str, dict[str, int]] = {}
        #: broker -> (the map last counted, what it contributed: namespace -> count)
        self._seen: dict[str, tuple[Mapping[str, AbstractSet[str]], dict[str, int]]] = {}

    def sync(self, ranges: BrokerRanges) -> Mapping[str, Mapping[str, int]]:
        """The counts of ``ranges`` (a live mapping: later syncs update it; read it, never change it)."""
        seen = self._seen
        for broker, per_ns in ranges.items():
            known = seen.get(broker)
            if known is not None:
                if known[0] is per_ns:
                    continue
                self._remove(broker, known[1])
            seen[broker] = (per_ns, self._add(broker, per_ns))
        if len(seen) > len(ranges):
            for broker in [b for b in seen if b not in ranges]:
                self._remove(broker, seen.pop(broker)[1])
        return self._counts

    def _add(self, broker: str, per_ns: Mapping[str, AbstractSet[str]]) -> dict[str, int]:
        counts = self._counts
        added: dict[str, int] = {}
        for namespace, held in per_ns.items():
            if held:
                n = added[namespace] = len(held)
                per_broker = counts.get(namespace)
                if per_broker is None:
                    per_broker = counts[namespace] = {}
                per_broker[broker] = n
        return added

    def _remove(self, broker: str, added: Mapping[str, int]) -> None:
        counts = self._counts
        for namespace in added:
            per_broker = counts[namespace]
            del per_broker[broker]
            if not per_broker:
                del counts[namespace]
