"""``OverloadShedder``: unload enough from each overloaded broker to bring it under the threshold.

Goal: no broker above ``loadBalancerBrokerOverloadedThresholdPercentage``. It does not look at
under-loaded brokers (ThresholdShedder does).

Config keys: ``loadBalancerBrokerOverloadedThresholdPercentage`` (85),
``atLeastOneBundleSelected`` (true). Memory between cycles: none.

Rule (Pulsar's ``OverloadShedder.findBundlesForUnloading``), for every broker:

* ``usage = localData.getMaxResourceUsage()`` (unweighted: cpu, direct memory, bandwidth in/out);
  skip unless ``usage >= threshold`` (``threshold = pct / 100``);
* ``minimumThroughputToOffload = (msgThroughputIn + msgThroughputOut) * (usage - threshold + 0.05)``;
* pick its bundles by short-term throughput, largest first, until that much is marked -- at
  least one (:mod:`~brokerlb.loadbalance.shedding.common`). One bundle or none: nothing.

Worked example: b1 at cpu 90% with 100 MB/s and bundles of 60, 30 and 10 MB/s; threshold 0.85,
so ``pct = 0.90 - 0.85 + 0.05 = 0.10`` and 10 MB/s must go. The largest bundle (60 MB/s) is
selected first and already covers it: one unload, reason ``Overloaded``. b2 at 40% is left alone.
"""

from __future__ import annotations

import random
from typing import ClassVar

from brokerlb.loadbalance.decisions import Reason, SheddingResult, UnloadDecision
from brokerlb.loadbalance.registry import IMPL
from brokerlb.loadbalance.shedding.common import MB, SkippedBrokers, finish, select_by_short_term_throughput
from brokerlb.loadbalance.state import StrategyState
from brokerlb.loadbalance.view import ClusterView

__all__ = ["OverloadShedder", "ADDITIONAL_THRESHOLD_PERCENT_MARGIN"]

#: Margin added to the share to offload, so a broker does not end right at the threshold.
ADDITIONAL_THRESHOLD_PERCENT_MARGIN = 0.05


class OverloadShedder:
    """Pulsar's ``org.apache.pulsar.broker.loadbalance.impl.OverloadShedder`` (module docstring)."""

    class_name: ClassVar[str] = f"{IMPL}.OverloadShedder"

    def find_bundles_for_unloading(
        self, view: ClusterView, state: StrategyState, rng: random.Random
    ) -> SheddingResult:
        conf = view.config
        threshold = conf.loadBalancerBrokerOverloadedThresholdPercentage / 100.0
        decisions: list[UnloadDecision] = []
        skipped = SkippedBrokers()
        usage_of: dict[str, float] = {}
        for broker in view.modular_broker_order:
            local = view.brokers[broker].local_data
            usage = usage_of[broker] = local.max_resource_usage()
            if usage < threshold:
                continue
            share = usage - threshold + ADDITIONAL_THRESHOLD_PERCENT_MARGIN
            minimum = local.total_msg_throughput() * share
            selection = select_by_short_term_throughput(
                view, broker, minimum, at_least_one=conf.atLeastOneBundleSelected
            )
            if selection.skip is not None:
                skipped.add(broker, *selection.skip)
                continue
            detail = (
                f"max usage {usage:.3f} >= threshold {threshold:.3f}: offload at least "
                f"{minimum / MB:.2f} MB/s ({share:.1%} of {local.total_msg_throughput() / MB:.2f} MB/s); "
                f"{local.print_resource_usage()}"
            )
            decisions.extend(
                UnloadDecision(broker, bundle, None, reason=Reason.OVERLOADED, detail=detail)
                for bundle in selection.bundles
            )
        return finish(
            decisions,
            skipped,
            {"overloadThreshold": threshold, "brokerUsage": {b: round(u, 6) for b, u in usage_of.items()}},
            balanced_detail=f"no broker at or above {threshold:.2f} max resource usage",
        )
