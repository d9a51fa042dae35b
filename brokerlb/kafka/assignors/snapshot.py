"""What an assignor reads: the group snapshot (members, subscriptions, owned partitions, counts).

The snapshot carries what Kafka's group leader sees --
each member's subscription, the partitions it owned (with its generation), the
partition counts -- plus measured partition rates for the load-aware assignor.

JSON form (the ``brokerlb kafka assign --group FILE`` input)::

    {"members": {"<id>": {"topics": ["t0"], "owned": {"t0": [0, 1]},
                          "generation": 3, "group_instance_id": "host-a"}},
     "partitions": {"t0": 4},
     "rates": {"t0": [10.0, 1.0, 1.0, 2.5]}}

``generation`` and ``group_instance_id`` are optional (absent = Java's
``DEFAULT_GENERATION`` -1 / a dynamic member). Topic names follow Kafka's rule
(``[a-zA-Z0-9._-]``, at most 249 characters), so Python's string order equals
Java's for them; member ids may be anything and are ordered as Java orders
``String`` (UTF-16 code units, :func:`java_order`).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from brokerlb.errors import InvalidInputError

__all__ = [
    "DEFAULT_GENERATION",
    "TopicPartition",
    "Member",
    "GroupSnapshot",
    "by_topic",
    "java_order",
    "member_order",
]

#: ``AbstractStickyAssignor.DEFAULT_GENERATION``.
DEFAULT_GENERATION = -1

_TOPIC_RE = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


class TopicPartition(NamedTuple):
    """A partition of a topic; sorts by topic then partition number."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@functools.lru_cache(maxsize=1 << 16)
def java_order(text: str) -> bytes:
    """Sort key giving Java's ``String.compareTo`` order (UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


@dataclass(frozen=True)
class Member:
    """One group member's JoinGroup metadata.

    ``owned`` holds the partitions the member says it owns, as given (possibly
    stale: deleted topics, partitions beyond the count, claimed twice).
    """

    member_id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int | None = None
    group_instance_id: str | None = None

    @property
    def generation_or_default(self) -> int:
        return DEFAULT_GENERATION if self.generation is None else self.generation


def member_order(member: Member) -> tuple[int, bytes]:
    """``AbstractPartitionAssignor.MemberInfo.compareTo``: static members first.

    Static members (with ``group.instance.id``) sort by instance id and come
    before dynamic members, which sort by member id.
    """
    if member.group_instance_id is not None:
        return (0, java_order(member.group_instance_id))
    return (1, java_order(member.member_id))


@dataclass(frozen=True)
class GroupSnapshot:
    """What the group leader sees when it runs the assignor."""

    members: Mapping[str, Member]
    partitions: Mapping[str, int]
    rates: Mapping[str, tuple[float, ...]] = field(default_factory=dict)

    # ------------------------------------------------------------------ views

    def subscribed_topics(self) -> list[str]:
        """Topics some member subscribes to and that exist, sorted."""
        return list(self._subscribed)

    @functools.cached_property
    def _subscribed(self) -> tuple[str, ...]:
        # members usually share few distinct subscriptions: union those, not every member's
        wanted: set[str] = set().union(*{m.topics for m in self.members.values()})
        return tuple(sorted(t for t in wanted if t in self.partitions))

    def partitions_per_topic(self) -> dict[str, int]:
        """Java's ``partitionsPerTopic``: counts of the subscribed, existing topics."""
        return {t: self.partitions[t] for t in self.subscribed_topics()}

    def all_partitions(self) -> list[TopicPartition]:
        """Every partition of the subscribed topics, sorted."""
        return [TopicPartition(t, p) for t, n in self.partitions_per_topic().items() for p in range(n)]

    def exists(self, tp: TopicPartition) -> bool:
        return 0 <= tp.partition < self.partitions.get(tp.topic, 0)

    def rate(self, tp: TopicPartition) -> float | None:
        rates = self.rates.get(tp.topic)
        return rates[tp.partition] if rates is not None else None

    def sorted_members(self) -> list[Member]:
        return sorted(self.members.values(), key=member_order)

    def all_subscriptions_equal(self) -> bool:
        subs = {frozenset(m.topics) for m in self.members.values()}
        return len(subs) <= 1

    # ------------------------------------------------------------------ JSON

    @classmethod
    def from_json(cls, data: Any) -> GroupSnapshot:
        """Parse and validate the JSON form; errors name the member/topic at fault."""
        if not isinstance(data, Mapping):
            raise InvalidInputError(f"group must be a JSON object, got {type(data).__name__}")
        _no_unknown_keys(data, {"members", "partitions", "rates"}, "group")
        partitions = _parse_partition_counts(data.get("partitions", {}))
        members_raw = data.get("members", {})
        if not isinstance(members_raw, Mapping):
            raise InvalidInputError("'members' must be an object {member id: {...}}")
        members = {mid: _parse_member(mid, raw) for mid, raw in members_raw.items()}
        rates = _parse_rates(data.get("rates", {}), partitions)
        return cls(members=members, partitions=partitions, rates=rates)

    def to_json(self) -> dict[str, Any]:
        members: dict[str, Any] = {}
        for mid, m in self.members.items():
            entry: dict[str, Any] = {"topics": list(m.topics), "owned": by_topic(m.owned)}
            if m.generation is not None:
                entry["generation"] = m.generation
            if m.group_instance_id is not None:
                entry["group_instance_id"] = m.group_instance_id
            members[mid] = entry
        out: dict[str, Any] = {"members": members, "partitions": dict(self.partitions)}
        if self.rates:
            out["rates"] = {t: list(r) for t, r in self.rates.items()}
        return out


def _no_unknown_keys(obj: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise InvalidInputError(f"unknown key(s) {unknown} in {where}; allowed: {sorted(allowed)}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_topic(topic: Any, where: str) -> str:
    if not isinstance(topic, str) or not _TOPIC_RE.match(topic) or topic in (".", ".."):
        raise InvalidInputError(
            f"invalid topic name {topic!r} in {where}: Kafka topics are 1-249 ASCII letters, "
            "digits, '.', '_' or '-', and not '.' or '..'"
        )
    return topic


def _parse_partition_counts(raw: Any) -> dict[str, int]:
    if not isinstance(raw, Mapping):
        raise InvalidInputError("'partitions' must be an object {topic: partition count}")
    counts: dict[str, int] = {}
    for topic, n in raw.items():
        _check_topic(topic, "'partitions'")
        if not _is_int(n) or n < 1:
            raise InvalidInputError(f"partition count of topic {topic!r} must be an integer >= 1, got {n!r}")
        counts[topic] = n
    return counts


def _parse_member(member_id: Any, raw: Any) -> Member:
    where = f"member {member_id!r}"
    if not isinstance(member_id, str) or not member_id:
        raise InvalidInputError(f"member ids must be non-empty strings, got {member_id!r}")
    if not isinstance(raw, Mapping):
        raise InvalidInputError(f"{where} must be an object with 'topics' and 'owned'")
    _no_unknown_keys(raw, {"topics", "owned", "generation", "group_instance_id"}, where)
    topics_raw = raw.get("topics", [])
    if not isinstance(topics_raw, list):
        raise InvalidInputError(f"'topics' of {where} must be a list of topic names")
    topics = tuple(sorted({_check_topic(t, f"'topics' of {where}") for t in topics_raw}))
    owned_raw = raw.get("owned", {})
    if not isinstance(owned_raw, Mapping):
        raise InvalidInputError(f"'owned' of {where} must be an object {{topic: [partitions]}}")
    owned: list[TopicPartition] = []
    for topic, parts in owned_raw.items():
        _check_topic(topic, f"'owned' of {where}")
        if not isinstance(parts, list) or not all(_is_int(p) and p >= 0 for p in parts):
            raise InvalidInputError(
                f"owned partitions of topic {topic!r} in {where} must be a list of "
                f"integers >= 0, got {parts!r}"
            )
        if len(set(parts)) != len(parts):
            raise InvalidInputError(f"{where} lists a partition of topic {topic!r} twice: {parts}")
        owned.extend(TopicPartition(topic, p) for p in parts)
    generation = raw.get("generation")
    if generation is not None and not _is_int(generation):
        raise InvalidInputError(f"'generation' of {where} must be an integer, got {generation!r}")
    instance = raw.get("group_instance_id")
    if instance is not None and (not isinstance(instance, str) or not instance):
        raise InvalidInputError(f"'group_instance_id' of {where} must be a non-empty string")
    return Member(member_id, topics, tuple(sorted(owned)), generation, instance)


def _parse_rates(raw: Any, partitions: Mapping[str, int]) -> dict[str, tuple[float, ...]]:
    if not isinstance(raw, Mapping):
        raise InvalidInputError("'rates' must be an object {topic: [rate per partition]}")
    rates: dict[str, tuple[float, ...]] = {}
    for topic, values in raw.items():
        if topic not in partitions:
            raise InvalidInputError(f"rates given for topic {topic!r} which is not in 'partitions'")
        if not isinstance(values, list) or len(values) != partitions[topic]:
            raise InvalidInputError(
                f"rates of topic {topic!r} must be a list of {partitions[topic]} numbers "
                f"(one per partition), got {values!r}"
            )
        for i, v in enumerate(values):
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
                raise InvalidInputError(
                    f"rate of partition {topic}-{i} must be a finite number >= 0, got {v!r}"
                )
        rates[topic] = tuple(float(v) for v in values)
    return rates


def by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        out.setdefault(tp.topic, []).append(tp.partition)
    return out
