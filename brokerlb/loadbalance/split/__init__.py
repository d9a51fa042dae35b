"""Split triggering: which hot bundles to split, and where (pure core).

* :class:`BundleSplitterTask` -- the modular leader's strategy
  (:mod:`~brokerlb.loadbalance.split.bundle_splitter_task`);
* :class:`DefaultNamespaceBundleSplitStrategyImpl` -- the extensible load manager's strategy with
  consecutive hit counts (:mod:`~brokerlb.loadbalance.split.default_split_strategy`);
* :func:`find_bundles_to_split` -- what the load manager's split check would do on a view:
  the configured (or named) strategy behind the enable flags; the planner's ``split`` op.

Where a split cuts is :mod:`brokerlb.ring.split_algorithms`' business
(``defaultNamespaceBundleSplitAlgorithm``); see :mod:`~brokerlb.loadbalance.split.thresholds`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from brokerlb.config import short_class_name
from brokerlb.loadbalance.decisions import SplitResult
from brokerlb.loadbalance.registry import StrategyKind, default_strategy_name, resolve
from brokerlb.loadbalance.split.bundle_splitter_task import NAME as BUNDLE_SPLITTER_TASK
from brokerlb.loadbalance.split.bundle_splitter_task import find_bundles_to_split_modular
from brokerlb.loadbalance.split.default_split_strategy import NAME as DEFAULT_SPLIT_STRATEGY
from brokerlb.loadbalance.split.default_split_strategy import SplitHitCounts, find_bundles_to_split_extensible
from brokerlb.loadbalance.split.thresholds import SplitThresholds, split_boundaries
from brokerlb.loadbalance.state import StrategyState
from brokerlb.loadbalance.view import ClusterView

__all__ = [
    "BUNDLE_SPLITTER_TASK",
    "DEFAULT_SPLIT_STRATEGY",
    "BundleSplitterTask",
    "DefaultNamespaceBundleSplitStrategyImpl",
    "SplitHitCounts",
    "SplitThresholds",
    "find_bundles_to_split",
    "split_boundaries",
]


def _stats(decisions: list[Any], checked: int) -> dict[str, int]:
    return {
        "bundlesChecked": checked,
        "splits": sum(1 for d in decisions if d.is_split),
    }


class BundleSplitterTask:
    """The modular leader's split strategy (stateless; see its module)."""

    class_name: ClassVar[str] = BUNDLE_SPLITTER_TASK

    def find_bundles_to_split(self, view: ClusterView, state: StrategyState) -> SplitResult:
        reports = {broker: data.local_data for broker, data in view.brokers.items()}
        decisions = find_bundles_to_split_modular(
            reports, view.bundle_data, view.bundle_count, view.config, view.fold_summary
        )
        return SplitResult.of(decisions, _stats(decisions, sum(len(r.last_stats) for r in reports.values())))


class DefaultNamespaceBundleSplitStrategyImpl:
    """The extensible load manager's split strategy; hit counts live in ``state[class_name]``."""

    class_name: ClassVar[str] = DEFAULT_SPLIT_STRATEGY

    def find_bundles_to_split(self, view: ClusterView, state: StrategyState) -> SplitResult:
        reports = {broker: data.local_data.last_stats for broker, data in view.brokers.items()}
        decisions = find_bundles_to_split_extensible(
            reports,
            state.get(self.class_name, SplitHitCounts),
            is_owner=view.is_owner,
            splitting=(),
            bundle_count_of=view.bundle_count,
            conf=view.config,
        )
        return SplitResult.of(decisions, _stats(decisions, sum(len(r) for r in reports.values())))


def find_bundles_to_split(
    view: ClusterView, state: StrategyState, strategy: str | None = None
) -> SplitResult:
    """What the split check would do (``strategy``: full or short class name; default from the config).

    The modular leader checks only with ``loadBalancerAutoBundleSplitEnabled``; the extensible
    ``SplitScheduler`` also needs ``loadBalancerEnabled``. Disabled: no decision, and ``stats``
    says why.
    """
    spec = resolve(StrategyKind.SPLIT, strategy or default_strategy_name(StrategyKind.SPLIT, view.config))
    conf = view.config
    disabled = [
        key
        for key, on in (
            ("loadBalancerAutoBundleSplitEnabled", conf.loadBalancerAutoBundleSplitEnabled),
            ("loadBalancerEnabled", conf.loadBalancerEnabled or not spec.extensible),
        )
        if not on
    ]
    if disabled:
        return SplitResult.of(
            [],
            {
                "skipped": "Disabled",
                "detail": f"{' and '.join(disabled)} = false",
                "strategy": short_class_name(spec.class_name),
            },
        )
    result = spec.create().find_bundles_to_split(view, state)
    return result if isinstance(result, SplitResult) else SplitResult.of(result)
