"""Bundle selection shared by OverloadShedder and ThresholdShedder.

Both pick, on a broker they shed, its bundles by **short-term** throughput (in + out, from
``bundle_data_for_load_shedding``, so system namespaces never move), largest first, skipping
bundles unloaded recently, until the marked throughput reaches the amount to offload -- and
always at least one bundle (``atLeastOneBundleSelected``). A broker with a single bundle
is left alone (moving its only bundle just moves the hot spot) and so is one with none.
Equal throughputs are ordered by bundle name, so the choice is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokerlb.loadbalance.decisions import Reason, UnloadDecision
from brokerlb.loadbalance.view import ClusterView

__all__ = ["BundleSelection", "select_by_short_term_throughput", "MB"]

#: Pulsar's ``MB`` constant (bytes).
MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class BundleSelection:
    """Bundles chosen on one broker (in order) and their summed short-term throughput."""

    bundles: tuple[str, ...]
    throughput: float
    #: why nothing was chosen (``None`` when something was)
    skip: UnloadDecision | None = None


def select_by_short_term_throughput(
    view: ClusterView, broker: str, minimum_to_offload: float, *, at_least_one: bool = True
) -> BundleSelection:
    """The bundles to unload from ``broker`` (module docstring)."""
    owned = view.bundles_owned_by(broker)
    if len(owned) <= 1:
        reason = Reason.SINGLE_BUNDLE if owned else Reason.NO_BUNDLES
        why = (f"sole bundle {next(iter(owned))} is overloading the broker; no load shedding on it"
               if owned else "overloaded despite having no bundles")
        return BundleSelection((), 0.0, UnloadDecision.skip(reason, why, broker=broker))
    shedding_data = view.bundle_data_for_load_shedding
    recently_unloaded = view.recently_unloaded_bundles
    candidates: list[tuple[float, str]] = []
    for bundle in owned:
        data = shedding_data.get(bundle)
        if data is None or bundle in recently_unloaded:
            continue
        short = data.short_term_data
        candidates.append((-(short.msg_throughput_in + short.msg_throughput_out), bundle))
    candidates.sort()
    chosen: list[str] = []
    marked = 0.0
    for negative_throughput, bundle in candidates:
        if marked < minimum_to_offload or (at_least_one and not chosen):
            chosen.append(bundle)
            marked -= negative_throughput
    if not chosen:
        why = ("every bundle was unloaded recently or has no load data"
               if candidates == [] else "nothing to offload")
        return BundleSelection((), 0.0, UnloadDecision.skip(Reason.RECENTLY_UNLOADED if candidates == [] else
                                                            Reason.BELOW_THRESHOLD, why, broker=broker))
    return BundleSelection(tuple(chosen), marked)
