"""Keys of brokerlb's own balancer (the ``brokerlb`` shedding and placement strategy).

Every key starts with ``brokerlbBalancer``; they are read only when
``loadBalancerLoadSheddingStrategy`` / ``loadBalancerLoadPlacementStrategy`` is ``brokerlb``
(docs/balancer.md explains the objective and the rules they tune).
"""

from __future__ import annotations

from brokerlb.config.kinds import BOOL, DOUBLE, INT, MINUTES
from brokerlb.config.registry import KeyGroup, key

__all__ = ["BalancerKeys"]


class BalancerKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "brokerlb balancer"
    EXTENSION = True
    INTRO = (
        "The `brokerlb` shedding and placement strategy (docs/balancer.md): its target band, "
        "hysteresis, per-cycle move budgets and ring changes."
    )

    brokerlbBalancerTargetTolerance: float = key(
        DOUBLE,
        0.05,
        "A broker is over target when its load (dominant resource over its capacity) exceeds the "
        "balanced load by more than this fraction of it; the balancer moves load off such brokers.",
        ge=0,
        le=1,
        dynamic=True,
    )
    brokerlbBalancerUnderloadTolerance: float = key(
        DOUBLE,
        0.10,
        "A broker is under target when its load is below the balanced load by more than this "
        "fraction of it (a new or restarted broker); the balancer moves load onto it.",
        ge=0,
        le=1,
        dynamic=True,
    )
    brokerlbBalancerMinImprovement: float = key(
        DOUBLE,
        0.005,
        "Hysteresis: a move must reduce the objective (the brokers' summed distance outside the "
        "target band) by at least this fraction of the balanced load, or it is not made.",
        ge=0,
        dynamic=True,
    )
    brokerlbBalancerMaxMovesPerCycle: int = key(
        INT,
        100,
        "Move budget per shedding cycle for the whole cluster (unloads, merges).",
        ge=1,
        dynamic=True,
    )
    brokerlbBalancerMaxMovesPerBrokerPerCycle: int = key(
        INT,
        20,
        "Move budget per shedding cycle for one broker (bundles leaving plus bundles arriving).",
        ge=1,
        dynamic=True,
    )
    brokerlbBalancerMaxMovedMbytesPerCycle: float = key(
        DOUBLE,
        2048.0,
        "Throughput (MB/s, in + out) the moves of one shedding cycle may carry in the whole "
        "cluster; 0 = no limit.",
        ge=0,
        dynamic=True,
    )
    brokerlbBalancerMaxMovedMbytesPerBrokerPerCycle: float = key(
        DOUBLE,
        512.0,
        "Throughput (MB/s, in + out) the moves of one shedding cycle may carry to or from one "
        "broker; 0 = no limit.",
        ge=0,
        dynamic=True,
    )
    brokerlbBalancerSwapBackBlockMinutes: float = key(
        MINUTES,
        120,
        "A bundle the balancer moved is not moved back to the broker it left within this time "
        "(no swap-backs); loadBalancerSheddingGracePeriodMinutes keeps it from moving at all "
        "within the grace period.",
        ge=0,
        dynamic=True,
    )
    brokerlbBalancerIdleThresholdPercentage: float = key(
        DOUBLE,
        10.0,
        "Load (percent of a broker's capacity in its dominant resource) below which nothing is worth "
        "a reconnect: while the busiest broker is below it the balancer moves, splits and merges "
        "nothing, and a bundle is split for load only when it alone weighs at least this much. "
        "The default is where no Pulsar shedder acts either (ThresholdShedder sheds only 10 points "
        "above the average).",
        ge=0,
        le=100,
        dynamic=True,
    )
    brokerlbBalancerNoMergeAfterSplitMinutes: float = key(
        MINUTES,
        30,
        "A range split by anyone (the balancer, the split check, an operator) is not merged again "
        "within this time; a leader merges nothing in its first such period (it did not see what "
        "was split before it led).",
        ge=0,
        dynamic=True,
    )
    brokerlbBalancerNoSplitAfterMergeMinutes: float = key(
        MINUTES,
        10,
        "A bundle merged by anyone (the balancer, an operator) is not split for load by the balancer "
        "within this time.",
        ge=0,
        dynamic=True,
    )
    brokerlbBalancerSplitHotBundles: bool = key(
        BOOL,
        True,
        "Split (with defaultNamespaceBundleSplitAlgorithm) a bundle whose load alone exceeds the "
        "target instead of moving it around; a single-topic bundle is never split.",
        dynamic=True,
    )
    brokerlbBalancerMergeColdBundles: bool = key(
        BOOL,
        True,
        "Merge adjacent bundles of one broker when the namespace has more bundles than its load "
        "needs (never below defaultNumberOfNamespaceBundles) and the merged bundle stays under "
        "brokerlbBalancerMergeMaxFill of every split threshold.",
        dynamic=True,
    )
    brokerlbBalancerMergeMaxFill: float = key(
        DOUBLE,
        0.1,
        "A merged bundle must stay below this fraction of every split threshold "
        "(loadBalancerNamespaceBundleMaxTopics, ...MaxSessions, ...MaxMsgRate, ...MaxBandwidthMbytes).",
        gt=0,
        le=1,
        dynamic=True,
    )
    brokerlbBalancerMaxMergesPerCycle: int = key(
        INT,
        2,
        "Merges per shedding cycle (each also counts as a move of the budgets); 0 = none.",
        ge=0,
        dynamic=True,
    )
