"""Decisions are data: what a load-balancing step decided, with a label and a reason.

Every shedding, split and placement step returns values of the types below instead of
acting. The caller (the planner CLI, the live leader loop, the simulator, a Spark
backtest) prints, applies or counts them. A step that decides to do nothing still
returns a decision -- ``Skip`` or ``Failure`` with a :class:`Reason` -- so "why nothing
happened" can be shown and counted like Pulsar's ``brk_lb_unload_broker_breakdown_total``.

Labels and reasons are Pulsar's (``UnloadDecision.Label``/``Reason``,
``SplitDecision.Reason``) plus brokerlb's own reasons for the steps where Pulsar only
logs a line (e.g. ``SingleBroker`` for "Only 1 broker available: no load shedding will
be performed"). Enum values are the names, so JSON carries Pulsar's spelling.

>>> d = UnloadDecision("b1:8080", "t/ns/0x00000000_0x80000000", "b2:8080", Label.SUCCESS, Reason.OVERLOADED)
>>> d.to_json()["reason"], d.is_unload
('Overloaded', True)
>>> SplitDecision("t/ns/0x00000000_0x80000000", (0x40000000,), Label.SUCCESS, Reason.TOPICS).to_json()["boundaries"]
['0x40000000']
>>> MergeDecision(("t/ns/0x80000000_0xc0000000", "t/ns/0xc0000000_0xffffffff"), reason=Reason.COLD_BUNDLES).merged
't/ns/0x80000000_0xffffffff'

A shedding cycle may also decide ring changes: :class:`SheddingResult` carries split and merge
decisions beside its unloads (a balancer that splits a bundle too hot for any broker, or merges
cold neighbours, says so in the same result the leader executes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from brokerlb.ring.bundles import format_boundary, format_range, parse_range

__all__ = [
    "Label",
    "Reason",
    "UNLOAD_REASONS",
    "SPLIT_REASONS",
    "UnloadDecision",
    "SplitDecision",
    "MergeDecision",
    "PlacementDecision",
    "SheddingResult",
    "SplitResult",
]


class Label(StrEnum):
    """Outcome of a decision (Pulsar's ``UnloadDecision.Label`` / ``SplitDecision.Label``)."""

    SUCCESS = "Success"  #: the step acts: unload, split, assign
    SKIP = "Skip"  #: nothing to do, and that is fine (balanced, cooling down, below a threshold)
    FAILURE = "Failure"  #: the step wanted to act but could not (no destination, bad data)


class Reason(StrEnum):
    """Why a decision was taken. One enum for shedding, split and placement.

    Pulsar's ``UnloadDecision.Reason``: ``Overloaded``, ``Underloaded``, ``Balanced``,
    ``NoBundles``, ``CoolDown``, ``OutDatedData``, ``NoLoadData``, ``NoBrokers``,
    ``Unknown``, ``Admin``, ``HitCount``. Pulsar's ``SplitDecision.Reason``: ``Topics``,
    ``Sessions``, ``MsgRate``, ``Bandwidth``, ``Admin``, ``Balanced``, ``Unknown``.
    The rest are brokerlb's names for conditions Pulsar only logs.
    """

    # --- Pulsar UnloadDecision.Reason
    OVERLOADED = "Overloaded"  #: the broker is above the threshold / the cluster spread is too wide
    UNDERLOADED = "Underloaded"  #: some broker is far below the others
    BALANCED = "Balanced"  #: nothing to balance (also SplitDecision: no threshold passed)
    NO_BUNDLES = "NoBundles"  #: the broker has no bundle that could move
    COOL_DOWN = "CoolDown"  #: a recent unload has not shown in the load data yet
    OUTDATED_DATA = "OutDatedData"  #: load data older than its TTL
    NO_LOAD_DATA = "NoLoadData"  #: an available broker has no load data
    NO_BROKERS = "NoBrokers"  #: no broker is left to compare
    UNKNOWN = "Unknown"  #: an unexpected error
    ADMIN = "Admin"  #: requested by an operator (a ``Skip``: held back for an operator's action)
    HIT_COUNT = "HitCount"  #: the condition has not held for enough cycles in a row
    # --- Pulsar SplitDecision.Reason
    TOPICS = "Topics"  #: more topics than loadBalancerNamespaceBundleMaxTopics
    SESSIONS = "Sessions"  #: more producers + consumers than loadBalancerNamespaceBundleMaxSessions
    MSG_RATE = "MsgRate"  #: message rate above loadBalancerNamespaceBundleMaxMsgRate
    BANDWIDTH = "Bandwidth"  #: throughput above loadBalancerNamespaceBundleMaxBandwidthMbytes
    # --- brokerlb: why a loop/step did nothing (Pulsar logs these)
    DISABLED = "Disabled"  #: loadBalancerEnabled / loadBalancerSheddingEnabled / auto split off
    SINGLE_BROKER = "SingleBroker"  #: at most one broker available
    SINGLE_BUNDLE = (
        "SingleBundle"  #: the broker owns only one bundle, shedding it would just move the hot spot
    )
    IDLE = "Idle"  #: the busiest broker is below brokerlbBalancerIdleThresholdPercentage: nothing is worth a move
    BELOW_THRESHOLD = "BelowThreshold"  #: what would move is below a minimum (throughput, message rate)
    RECENTLY_UNLOADED = "RecentlyUnloaded"  #: unloaded within loadBalancerSheddingGracePeriodMinutes
    NOT_OWNED = "NotOwned"  #: the bundle is not owned by the broker the strategy named
    SYSTEM_NAMESPACE = "SystemNamespace"  #: pulsar/system, heartbeat or SLA namespaces never move
    ANTI_AFFINITY = "AntiAffinity"  #: unloading would break the namespace's anti-affinity spread
    ISOLATION_POLICY = "IsolationPolicy"  #: no other broker may own the bundle under its isolation policy
    NO_DESTINATION = "NoDestination"  #: no broker (other than the current owner) can take the bundle
    TOO_MANY_BUNDLES = "TooManyBundles"  #: the namespace reached loadBalancerNamespaceMaximumBundles
    SINGLE_TOPIC = "SingleTopic"  #: a bundle with fewer than two topics cannot be split
    INVALID_BUNDLE = "InvalidBundle"  #: the bundle range cannot be split further / is not a range
    SPLITTING = "Splitting"  #: an overlapping bundle of the namespace is being split
    # --- brokerlb: ring changes decided by a balancer
    OVER_TARGET = "OverTarget"  #: the bundle alone carries more load than the balancer's per-broker target
    COLD_BUNDLES = "ColdBundles"  #: adjacent bundles too cold to need their own ranges (merge)
    # --- brokerlb: placement
    SELECTED = "Selected"  #: the strategy picked a broker
    PREALLOCATED = "Preallocated"  #: the bundle was already assigned to a broker (not reported yet)
    HEARTBEAT = "Heartbeat"  #: heartbeat / SLA namespaces go to the broker they name
    AFFINITY = "Affinity"  #: a one-shot affinity left by an unload with a destination
    NO_CANDIDATES = "NoCandidates"  #: filters left no broker (and no fallback applied)


#: Reasons Pulsar's ``UnloadDecision`` has (for metrics in Pulsar's names).
UNLOAD_REASONS: frozenset[Reason] = frozenset(
    {
        Reason.OVERLOADED,
        Reason.UNDERLOADED,
        Reason.BALANCED,
        Reason.NO_BUNDLES,
        Reason.COOL_DOWN,
        Reason.OUTDATED_DATA,
        Reason.NO_LOAD_DATA,
        Reason.NO_BROKERS,
        Reason.UNKNOWN,
        Reason.ADMIN,
        Reason.HIT_COUNT,
    }
)
#: Reasons Pulsar's ``SplitDecision`` has.
SPLIT_REASONS: frozenset[Reason] = frozenset(
    {
        Reason.TOPICS,
        Reason.SESSIONS,
        Reason.MSG_RATE,
        Reason.BANDWIDTH,
        Reason.ADMIN,
        Reason.BALANCED,
        Reason.UNKNOWN,
    }
)


@dataclass(frozen=True, slots=True)
class UnloadDecision:
    """One shedding decision.

    ``label == SUCCESS``: unload ``bundle`` from ``broker``; with a ``destination`` it is a
    transfer (the bundle is pre-assigned there), else the next lookup places it. ``SKIP`` /
    ``FAILURE`` entries explain why something did not move; ``broker`` and ``bundle`` are
    ``None`` when the decision is about the whole cycle (e.g. ``CoolDown``).
    ``detail`` is a human sentence with the numbers behind the decision.
    """

    broker: str | None
    bundle: str | None
    destination: str | None = None
    label: Label = Label.SUCCESS
    reason: Reason = Reason.UNKNOWN
    detail: str = ""

    @property
    def is_unload(self) -> bool:
        """True for a decision that moves a bundle (``Success`` with a bundle)."""
        return self.label is Label.SUCCESS and self.bundle is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "broker": self.broker,
            "bundle": self.bundle,
            "destination": self.destination,
            "label": self.label.value,
            "reason": self.reason.value,
            "detail": self.detail,
        }

    @classmethod
    def skip(
        cls, reason: Reason, detail: str = "", broker: str | None = None, bundle: str | None = None
    ) -> UnloadDecision:
        return cls(broker, bundle, None, Label.SKIP, reason, detail)

    @classmethod
    def failure(
        cls, reason: Reason, detail: str = "", broker: str | None = None, bundle: str | None = None
    ) -> UnloadDecision:
        return cls(broker, bundle, None, Label.FAILURE, reason, detail)


@dataclass(frozen=True, slots=True)
class SplitDecision:
    """One split decision: split ``bundle`` at ``boundaries`` (hash values inside its range).

    ``boundaries`` is empty when the split algorithm runs at split time (Pulsar's modular
    manager calls the admin split with the configured default algorithm) or when the bundle
    name is opaque; JSON writes each boundary as ``0x%08x``.
    """

    bundle: str
    boundaries: tuple[int, ...] = ()
    label: Label = Label.SUCCESS
    reason: Reason = Reason.UNKNOWN
    detail: str = ""

    @property
    def is_split(self) -> bool:
        return self.label is Label.SUCCESS

    def to_json(self) -> dict[str, Any]:
        return {
            "bundle": self.bundle,
            "boundaries": [format_boundary(b) for b in self.boundaries],
            "label": self.label.value,
            "reason": self.reason.value,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class MergeDecision:
    """One merge decision: replace the adjacent ``bundles`` (full names of one namespace, in
    ring order) by one bundle covering their ranges. A brokerlb extension: Pulsar cannot merge;
    the broker's admin flow and the simulator can (the parts are unloaded, the merged range is
    written to the ring, the merged bundle is placed).
    """

    bundles: tuple[str, ...]
    label: Label = Label.SUCCESS
    reason: Reason = Reason.UNKNOWN
    detail: str = ""

    @property
    def is_merge(self) -> bool:
        return self.label is Label.SUCCESS

    @property
    def namespace(self) -> str:
        """``tenant/ns`` of the merged bundles."""
        return self.bundles[0].rpartition("/")[0]

    @property
    def merged(self) -> str:
        """The full name of the bundle the merge creates (lowest lower bound to highest upper bound)."""
        ranges = [parse_range(b.rpartition("/")[2]) for b in self.bundles]
        return f"{self.namespace}/{format_range(min(r[0] for r in ranges), max(r[1] for r in ranges))}"

    def to_json(self) -> dict[str, Any]:
        return {
            "bundles": list(self.bundles),
            "merged": self.merged,
            "label": self.label.value,
            "reason": self.reason.value,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class PlacementDecision:
    """Where a bundle goes: ``broker`` (``None`` when no broker can take it, with the reason).

    ``candidates`` are the brokers the strategy chose among (after the filters), sorted.
    """

    bundle: str
    broker: str | None
    candidates: tuple[str, ...] = ()
    reason: Reason = Reason.SELECTED
    detail: str = ""

    @property
    def label(self) -> Label:
        return Label.SUCCESS if self.broker is not None else Label.FAILURE

    def to_json(self) -> dict[str, Any]:
        return {
            "bundle": self.bundle,
            "broker": self.broker,
            "candidates": list(self.candidates),
            "label": self.label.value,
            "reason": self.reason.value,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class SheddingResult:
    """What one shedding cycle decided: every decision (in order) and the strategy's numbers.

    ``stats`` holds what the strategy computed, e.g. TransferShedder's ``avg`` and ``std``;
    values are JSON scalars. ``split_decisions`` and ``merge_decisions`` are ring changes the
    strategy decided in the same cycle (Pulsar's shedders decide none; the leader executes the
    ``Success`` ones like the split check's splits).
    """

    decisions: tuple[UnloadDecision, ...] = ()
    stats: Mapping[str, Any] = field(default_factory=dict)
    split_decisions: tuple[SplitDecision, ...] = ()
    merge_decisions: tuple[MergeDecision, ...] = ()

    @classmethod
    def of(
        cls,
        decisions: Iterable[UnloadDecision],
        stats: Mapping[str, Any] | None = None,
        *,
        splits: Iterable[SplitDecision] = (),
        merges: Iterable[MergeDecision] = (),
    ) -> SheddingResult:
        return cls(tuple(decisions), dict(stats or {}), tuple(splits), tuple(merges))

    @property
    def unloads(self) -> list[UnloadDecision]:
        """Only the decisions that move a bundle."""
        return [d for d in self.decisions if d.is_unload]

    @property
    def splits(self) -> list[SplitDecision]:
        """Only the split decisions that split (``Success``)."""
        return [d for d in self.split_decisions if d.is_split]

    @property
    def merges(self) -> list[MergeDecision]:
        """Only the merge decisions that merge (``Success``)."""
        return [d for d in self.merge_decisions if d.is_merge]

    def to_json(self) -> dict[str, Any]:
        return {
            "unload": [d.to_json() for d in self.decisions],
            "split": [d.to_json() for d in self.split_decisions],
            "merge": [d.to_json() for d in self.merge_decisions],
            "stats": dict(self.stats),
        }


@dataclass(frozen=True, slots=True)
class SplitResult:
    """What one split check decided (every decision, in order) and the numbers behind it."""

    decisions: tuple[SplitDecision, ...] = ()
    stats: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, decisions: Iterable[SplitDecision], stats: Mapping[str, Any] | None = None) -> SplitResult:
        return cls(tuple(decisions), dict(stats or {}))

    @property
    def splits(self) -> list[SplitDecision]:
        return [d for d in self.decisions if d.is_split]

    def to_json(self) -> dict[str, Any]:
        return {"split": [d.to_json() for d in self.decisions], "stats": dict(self.stats)}
