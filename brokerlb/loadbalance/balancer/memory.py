"""What the balancer remembers between cycles (one entry of the leader's ``StrategyState``).

* **pending moves** -- a bundle moved by the balancer whose move the load reports do not show
  yet. Brokers rewrite their report only when it changed by 10 % or every 15 minutes
  (``needBrokerDataUpdate``), so after a move the leader's view can keep the bundle on its old
  broker for a quarter of an hour; the balancer corrects the view by the bundle's demand until
  the destination reports the bundle -- with at least half the moved throughput, or once the grace
  period and two ``statsUpdateFrequencyInSecs`` have passed (until then its topics' rates there
  are not measured: the shortfall still counts on the destination) -- and the source no longer
  does (or the source reported it
  again long after the move: the move did not happen; or ``2 x
  loadBalancerReportUpdateMaxIntervalMinutes`` passed);
* **last moved** -- when the balancer last moved a bundle, or first saw it (a merged bundle, or a
  split child the leader unloaded -- a child kept by the owner did not move and may move at once):
  a bundle never moves twice within ``loadBalancerSheddingGracePeriodMinutes``;
* **left** -- the brokers a bundle left and when: it is not moved back there within
  ``brokerlbBalancerSwapBackBlockMinutes`` (no swap-backs);
* **bindings** -- bundle -> broker the balancer's placement prefers (the broker a merge's
  parts were on);
* **seen** -- every bundle name seen in a report (a name never seen before whose range lies inside
  a seen one of its namespace is a split or merge child, placed by the balancer's ring change: it
  counts as moved; a bundle coming back after a restart keeps its name and does not);
* **ring changes** -- ranges split and merged, by anyone (the balancer's own, or a new bundle
  name seen inside a seen range -- a split child -- or covering seen ranges -- a merged bundle):
  a range split is not merged within ``brokerlbBalancerNoMergeAfterSplitMinutes``, a merged one not
  split for load within ``brokerlbBalancerNoSplitAfterMergeMinutes``;
* **started** -- when the balancer first ran in this leadership (it saw no split made before: it
  merges nothing until it has watched the ring for ``brokerlbBalancerNoMergeAfterSplitMinutes``);
* **base fraction** -- what an idle broker uses per unit of capacity (learnt from a broker that
  reported no traffic).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from brokerlb.loadbalance.balancer.layout import Layout

__all__ = ["PendingMove", "BalancerMemory", "MEMORY_KEY"]

#: the ``StrategyState`` key of the balancer's memory (shared by its shedding and placement roles)
MEMORY_KEY = "brokerlb.loadbalance.balancer.Balancer"


@dataclass(frozen=True, slots=True)
class PendingMove:
    """A move the reports may not show yet: the bundle's demand per resource (absolute units of
    the broker reports: cpu %, direct memory MB, bandwidth in/out) and its throughput (bytes/s)."""

    bundle: str
    source: str
    destination: str
    at_ms: int
    demand: tuple[float, float, float, float]
    throughput: float
    topics: int = 0


@dataclass(slots=True)
class BalancerMemory:
    """The balancer's memory (module docstring)."""

    pending: dict[str, PendingMove] = field(default_factory=dict)
    last_moved: dict[str, int] = field(default_factory=dict)
    left: dict[str, dict[str, int]] = field(default_factory=dict)
    bindings: dict[str, str] = field(default_factory=dict)
    seen: set[str] | None = None
    #: bundle -> when the balancer split it (its old report may still list it for a while)
    split_at: dict[str, int] = field(default_factory=dict)
    #: idle usage per unit of limit (cpu, direct memory, bandwidth in, out), learnt from brokers
    #: that reported no traffic (see :mod:`~brokerlb.loadbalance.balancer.model`)
    base_fraction: tuple[float, ...] | None = None
    #: bumped whenever moves or bindings are recorded (placement models built before are stale)
    version: int = 0
    #: when the balancer first ran in this leadership
    started_ms: int | None = None
    #: bundle -> when a split of it (a parent) or that made it (a child) was decided or seen
    split_ranges: dict[str, int] = field(default_factory=dict)
    #: merged bundle -> when its merge was decided or seen
    merged_ranges: dict[str, int] = field(default_factory=dict)
    #: the bundle table read from the reports, kept between cycles (:mod:`.layout`)
    layout: Layout = field(default_factory=Layout)
    #: :attr:`Layout.version` when :attr:`seen` was last brought up to date
    seen_version: int = -1

    def forget_before(
        self,
        *,
        moved_cutoff_ms: int,
        left_cutoff_ms: int,
        split_cutoff_ms: int | None = None,
        merge_cutoff_ms: int | None = None,
    ) -> None:
        """Drop ``last_moved`` entries older than ``moved_cutoff_ms``, ``left`` entries older
        than ``left_cutoff_ms``, ring changes older than their cool-downs' cutoffs (memory stays
        bounded by what changed recently)."""
        self.last_moved = {b: t for b, t in self.last_moved.items() if t >= moved_cutoff_ms}
        self.split_at = {b: t for b, t in self.split_at.items() if t >= moved_cutoff_ms}
        if split_cutoff_ms is not None and self.split_ranges:
            self.split_ranges = {b: t for b, t in self.split_ranges.items() if t >= split_cutoff_ms}
        if merge_cutoff_ms is not None and self.merged_ranges:
            self.merged_ranges = {b: t for b, t in self.merged_ranges.items() if t >= merge_cutoff_ms}
        kept: dict[str, dict[str, int]] = {}
        for bundle, brokers in self.left.items():
            recent = {broker: t for broker, t in brokers.items() if t >= left_cutoff_ms}
            if recent:
                kept[bundle] = recent
        self.left = kept

    def record_move(self, move: PendingMove) -> None:
        """Remember a move the balancer decides (pending until the reports show it)."""
        self.version += 1
        self.pending[move.bundle] = move
        self.last_moved[move.bundle] = move.at_ms
        self.left.setdefault(move.bundle, {})[move.source] = move.at_ms
        self.bindings[move.bundle] = move.destination

    def forget_move(self, move: PendingMove) -> None:
        """A move that was decided and not carried out: as if it had not been decided."""
        self.version += 1
        self.pending.pop(move.bundle, None)
        if self.last_moved.get(move.bundle) == move.at_ms:
            del self.last_moved[move.bundle]
        left = self.left.get(move.bundle, {})
        if left.get(move.source) == move.at_ms:
            del left[move.source]
            if not left:
                del self.left[move.bundle]
        if self.bindings.get(move.bundle) == move.destination:
            del self.bindings[move.bundle]

    def to_json(self) -> dict[str, object]:
        return {
            "pending": {
                b: {"from": m.source, "to": m.destination, "at": m.at_ms}
                for b, m in sorted(self.pending.items())
            },
            "lastMoved": dict(sorted(self.last_moved.items())),
            "left": {b: dict(sorted(v.items())) for b, v in sorted(self.left.items())},
            "bindings": dict(sorted(self.bindings.items())),
            "seenBundles": None if self.seen is None else len(self.seen),
            "startedAt": self.started_ms,
            "splitRanges": dict(sorted(self.split_ranges.items())),
            "mergedRanges": dict(sorted(self.merged_ranges.items())),
        }
