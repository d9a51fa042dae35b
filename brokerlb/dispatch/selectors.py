"""Key_Shared sticky-key consumer selectors (Pulsar's ``StickyKeyConsumerSelector`` implementations).

All map a sticky-key hash (``Murmur3_32(key) & Integer.MAX_VALUE``) to a consumer.

* :class:`HashRangeAutoSplitSelector` -- AUTO_SPLIT with range splitting
  (``subscriptionKeySharedUseConsistentHashing=false``): slots ``0..65535``
  (``hash % 65536``); the first consumer owns everything; each new consumer
  takes the lower half of the biggest range (the first biggest, from slot 0 up);
  a leaving consumer's range goes to the consumer above it (or, if it held the
  top, to the one below).
* :class:`ConsistentHashingSelector` -- AUTO_SPLIT on a consistent-hash ring
  (the default, ``subscriptionKeySharedUseConsistentHashing=true``): each consumer
  puts ``subscriptionKeySharedConsistentHashingReplicaPoints`` (100) points at
  ``Murmur3_32(name + "\\0" + i)``; a key goes to the first point at or after
  its hash, wrapping around. Consumers with the same name collide on the same
  points; each point then serves the entry that sorts first by (priority level
  *descending* -- Pulsar's comparator is ``reversed()`` -- name, how many points
  it already serves), so same-named consumers share the points evenly.
* :class:`HashRangeExclusiveSelector` -- STICKY: each consumer brings fixed
  inclusive ranges of slots; a range overlapping another consumer's is refused
  (``Range conflict with consumer ...``); a slot nobody covers selects nobody.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from brokerlb.dispatch.base import DEFAULT_RANGE_SIZE, DispatchConsumer, HashRange
from brokerlb.errors import ConsumerAssignError, InvalidInputError
from brokerlb.kafka.hashing import INT_MAX, murmur3_32

__all__ = [
    "DEFAULT_REPLICA_POINTS",
    "HashRangeAutoSplitSelector",
    "ConsistentHashingSelector",
    "HashRangeExclusiveSelector",
]

#: ``subscriptionKeySharedConsistentHashingReplicaPoints`` default.
DEFAULT_REPLICA_POINTS = 100


def _java_order(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


class HashRangeAutoSplitSelector:
    """``HashRangeAutoSplitStickyKeyConsumerSelector``: state = the upper bound of each consumer's range."""

    def __init__(self, range_size: int = DEFAULT_RANGE_SIZE) -> None:
        if range_size < 2 or range_size & (range_size - 1):
            raise InvalidInputError(f"range size must be a power of 2 and >= 2, got {range_size}")
        self.range_size = range_size
        self._uppers: list[int] = []  # sorted upper bounds (inclusive)
        self._by_upper: dict[int, DispatchConsumer] = {}

    def add_consumer(self, consumer: DispatchConsumer) -> None:
        if not self._uppers:
            self._put(self.range_size, consumer)
            return
        biggest, lower = self._biggest_range()
        if biggest - lower <= 1:
            raise ConsumerAssignError(
                f"No more range can assigned to new consumer, assigned consumers {len(self._uppers)}"
            )
        self._put(biggest - ((biggest - lower) >> 1), consumer)

    def _put(self, upper: int, consumer: DispatchConsumer) -> None:
        bisect.insort(self._uppers, upper)
        self._by_upper[upper] = consumer

    def _biggest_range(self) -> tuple[int, int]:
        best_size, best_upper, best_lower = 0, self.range_size, 0
        lower = 0
        for upper in self._uppers:
            if upper - lower > best_size:
                best_size, best_upper, best_lower = upper - lower, upper, lower
            lower = upper
        return best_upper, best_lower

    def remove_consumer(self, consumer: DispatchConsumer) -> None:
        upper = next((u for u, c in self._by_upper.items() if c is consumer), None)
        if upper is None:
            return
        i = bisect.bisect_left(self._uppers, upper)
        if upper == self.range_size and len(self._uppers) > 1:
            below = self._uppers[i - 1]
            self._by_upper[upper] = self._by_upper.pop(below)  # the consumer below takes the top
            del self._uppers[i - 1]
        else:
            del self._uppers[i]
            del self._by_upper[upper]

    def select(self, key_hash: int) -> DispatchConsumer | None:
        if not self._uppers:
            return None
        slot = key_hash % self.range_size
        return self._by_upper[self._uppers[bisect.bisect_left(self._uppers, slot)]]

    def consumer_ranges(self) -> list[tuple[DispatchConsumer, HashRange]]:
        """Each consumer's slot range ``[lower, upper]`` (slot ``range_size`` counts as the top slot)."""
        out, lower = [], 0
        for upper in self._uppers:
            top = min(upper, self.range_size - 1)
            if lower <= top:
                out.append((self._by_upper[upper], HashRange(lower, top)))
            lower = upper + 1
        return out


@dataclass
class _Point:
    """A ring point: the consumers hashed onto it, in selection order, and the selected one."""

    entries: list[DispatchConsumer]
    selected: DispatchConsumer | None = None


class ConsistentHashingSelector:
    """``ConsistentHashingStickyKeyConsumerSelector`` (Pulsar 4.x semantics)."""

    def __init__(self, replica_points: int = DEFAULT_REPLICA_POINTS) -> None:
        if replica_points < 1:
            raise InvalidInputError(f"replica points must be >= 1, got {replica_points}")
        self.replica_points = replica_points
        self._hashes: list[int] = []  # sorted ring positions
        self._points: dict[int, _Point] = {}
        self._selected_count: dict[int, int] = {}  # consumer_id -> points it serves

    @staticmethod
    def point_hash(consumer_name: str, index: int) -> int:
        return murmur3_32(f"{consumer_name}\0{index}".encode()) & INT_MAX

    def _sort_key(self, c: DispatchConsumer) -> tuple[int, bytes, int]:
        return (-c.priority_level, _java_order(c.consumer_name), self._selected_count.get(c.consumer_id, 0))

    def _reselect(self, point: _Point) -> None:
        new = point.entries[0] if point.entries else None
        if new is point.selected:
            return
        if point.selected is not None:
            self._selected_count[point.selected.consumer_id] -= 1
        point.selected = new
        if new is not None:
            self._selected_count[new.consumer_id] = self._selected_count.get(new.consumer_id, 0) + 1

    def add_consumer(self, consumer: DispatchConsumer) -> None:
        self._selected_count.setdefault(consumer.consumer_id, 0)
        for i in range(self.replica_points):
            h = self.point_hash(consumer.consumer_name, i)
            point = self._points.get(h)
            if point is None:
                point = self._points[h] = _Point([])
                bisect.insort(self._hashes, h)
            key = self._sort_key(consumer)
            # insertion sort: before the first entry that sorts after the newcomer
            at = next(
                (j for j, other in enumerate(point.entries) if self._sort_key(other) > key),
                len(point.entries),
            )
            point.entries.insert(at, consumer)
            self._reselect(point)

    def remove_consumer(self, consumer: DispatchConsumer) -> None:
        for i in range(self.replica_points):
            h = self.point_hash(consumer.consumer_name, i)
            point = self._points.get(h)
            if point is None:
                continue
            point.entries = [c for c in point.entries if c is not consumer]
            self._reselect(point)
            if point.selected is None:
                del self._points[h]
                del self._hashes[bisect.bisect_left(self._hashes, h)]
        self._selected_count.pop(consumer.consumer_id, None)

    def select(self, key_hash: int) -> DispatchConsumer | None:
        if not self._hashes:
            return None
        i = bisect.bisect_left(self._hashes, key_hash)
        h = self._hashes[i] if i < len(self._hashes) else self._hashes[0]
        return self._points[h].selected

    def ring(self) -> list[tuple[int, DispatchConsumer]]:
        """The ring: ``(position, selected consumer)`` in position order."""
        return [(h, self._points[h].selected) for h in self._hashes]  # type: ignore[misc]


class HashRangeExclusiveSelector:
    """``HashRangeExclusiveStickyKeyConsumerSelector``: fixed user ranges, overlap refused.

    Pulsar stores each range's two ends in a sorted map and selects the consumer
    when the floor and the ceiling of the slot belong to the same consumer -- so a
    slot in the *gap* between two ranges of one consumer also goes to it. That is
    the default here too; ``strict_ranges=True`` sends such slots to nobody.
    """

    def __init__(self, range_size: int = DEFAULT_RANGE_SIZE, strict_ranges: bool = False) -> None:
        self.range_size = range_size
        self.strict_ranges = strict_ranges
        self._ranges: list[tuple[HashRange, DispatchConsumer]] = []  # sorted by start
        self._bounds: list[int] = []  # every range's start and end, sorted
        self._bound_owner: dict[int, DispatchConsumer] = {}

    def add_consumer(self, consumer: DispatchConsumer) -> None:
        ranges: Sequence[HashRange] = consumer.hash_ranges
        if not ranges:
            raise ConsumerAssignError("Ranges for KeyShared policy must not be empty.")
        for new in ranges:
            for existing, owner in self._ranges:
                if existing.overlaps(new):
                    raise ConsumerAssignError(
                        f"Range conflict with consumer {owner.consumer_name}: its range {existing} overlaps "
                        f"{new} of {consumer.consumer_name}"
                    )
        for new in ranges:
            bisect.insort(self._ranges, (new, consumer), key=lambda item: item[0])
            for bound in {new.start, new.end}:
                bisect.insort(self._bounds, bound)
                self._bound_owner[bound] = consumer

    def remove_consumer(self, consumer: DispatchConsumer) -> None:
        self._ranges = [(r, c) for r, c in self._ranges if c is not consumer]
        self._bounds = [b for b in self._bounds if self._bound_owner[b] is not consumer]
        self._bound_owner = {b: c for b, c in self._bound_owner.items() if c is not consumer}

    def select(self, key_hash: int) -> DispatchConsumer | None:
        slot = key_hash % self.range_size
        i = bisect.bisect_right(self._bounds, slot) - 1  # floor
        j = bisect.bisect_left(self._bounds, slot)  # ceiling
        if i < 0 or j >= len(self._bounds):
            return None
        floor_owner, ceiling_owner = self._bound_owner[self._bounds[i]], self._bound_owner[self._bounds[j]]
        if floor_owner is not ceiling_owner:
            return None
        if self.strict_ranges and not any(
            r.start <= slot <= r.end for r, c in self._ranges if c is floor_owner
        ):
            return None
        return floor_owner

    def consumer_ranges(self) -> list[tuple[DispatchConsumer, HashRange]]:
        return [(c, r) for r, c in self._ranges]
