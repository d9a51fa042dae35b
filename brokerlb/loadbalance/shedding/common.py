"""Pieces shared by the modular shedding strategies.

**Bundle selection** (OverloadShedder, ThresholdShedder): on a broker they shed, its bundles
by **short-term** throughput (in + out, from ``bundle_data_for_load_shedding``, so system
namespaces never move), largest first, skipping bundles unloaded recently, until the marked
throughput reaches the amount to offload -- and always at least one bundle
(``atLeastOneBundleSelected``). A broker with a single bundle is left alone (moving its
only bundle just moves the hot spot) and so is one with none.

**Ownership**: a broker's bundles are :meth:`ClusterView.bundles_owned_by` -- Pulsar's
``localData.getBundles()`` (plus its ``lastStats`` keys), unless the snapshot's ``ownership``
map says otherwise.

**Order**: brokers and bundles are visited in the order Pulsar's hash maps give them
(:mod:`~brokerlb.loadbalance.java_order`), so ties come out as in Pulsar, reproducibly.

**Result shape**: every strategy returns its ``Success`` decisions; when there is none, one
cycle-level ``Skip`` says why (its detail lists the brokers that could not shed), and
``stats["skippedBrokers"]`` maps each such broker to ``"Reason: detail"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from brokerlb.loadbalance.decisions import Reason, SheddingResult, UnloadDecision
from brokerlb.loadbalance.view import ClusterView

__all__ = [
    "BundleSelection",
    "SkippedBrokers",
    "select_by_short_term_throughput",
    "select_largest_first",
    "sort_largest_first",
    "finish",
    "MB",
]

#: Pulsar's ``MB`` constant (bytes).
MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class BundleSelection:
    """Bundles chosen on one broker (in order) and their summed short-term throughput;
    ``skip`` holds the reason and detail when nothing was chosen."""

    bundles: tuple[str, ...]
    throughput: float
    skip: tuple[Reason, str] | None = None


@dataclass(slots=True)
class SkippedBrokers:
    """Brokers a strategy looked at but could not shed, with the reason (in visiting order)."""

    reasons: dict[str, tuple[Reason, str]] = field(default_factory=dict)

    def add(self, broker: str, reason: Reason, detail: str) -> None:
        self.reasons[broker] = (reason, detail)

    def to_json(self) -> dict[str, str]:
        return {broker: f"{reason.value}: {detail}" for broker, (reason, detail) in self.reasons.items()}


def select_by_short_term_throughput(
    view: ClusterView, broker: str, minimum_to_offload: float, *, at_least_one: bool = True
) -> BundleSelection:
    """The bundles to unload from ``broker`` (module docstring)."""
    owned = view.bundles_owned_by(broker)
    if len(owned) <= 1:
        if owned:
            return BundleSelection(
                (),
                0.0,
                (
                    Reason.SINGLE_BUNDLE,
                    f"sole bundle {next(iter(owned))} is overloading the broker; no shedding on it",
                ),
            )
        return BundleSelection((), 0.0, (Reason.NO_BUNDLES, "overloaded despite having no bundles"))
    return select_largest_first(view, broker, owned, minimum_to_offload, at_least_one=at_least_one)


def select_largest_first(
    view: ClusterView, broker: str, bundles: Iterable[str], minimum_to_offload: float, *, at_least_one: bool
) -> BundleSelection:
    """Largest short-term throughput first until ``minimum_to_offload`` is marked (at least one)."""
    recently_unloaded = view.recently_unloaded_bundles
    candidates: list[tuple[float, str]] = []
    for bundle in bundles:
        data = view.shedding_bundle_data(bundle)
        if data is None or bundle in recently_unloaded:
            continue
        short = data.short_term_data
        candidates.append((short.msg_throughput_in + short.msg_throughput_out, bundle))
    sort_largest_first(view, candidates)
    chosen: list[str] = []
    marked = 0.0
    for throughput, bundle in candidates:
        if marked < minimum_to_offload or (at_least_one and not chosen):
            chosen.append(bundle)
            marked += throughput
    if not chosen:
        if not candidates:
            return BundleSelection(
                (),
                0.0,
                (
                    Reason.RECENTLY_UNLOADED,
                    "every bundle was unloaded recently, is a system bundle or has no load data",
                ),
            )
        return BundleSelection((), 0.0, (Reason.BELOW_THRESHOLD, "nothing to offload"))
    return BundleSelection(tuple(chosen), marked)


def sort_largest_first(view: ClusterView, values: list[tuple[float, str]]) -> None:
    """Sort ``(value, bundle)`` pairs by value, largest first; equal values keep Pulsar's map order.

    Ties are rare, so the map order is computed only for runs of equal values.
    """
    values.sort(key=lambda item: -item[0])
    start = 0
    while start < len(values):
        end = start + 1
        while end < len(values) and values[end][0] == values[start][0]:
            end += 1
        if end - start > 1:
            run = {item[1]: item for item in values[start:end]}
            values[start:end] = [run[bundle] for bundle in view.bundle_order(run)]
        start = end


def finish(
    decisions: list[UnloadDecision],
    skipped: SkippedBrokers,
    stats: Mapping[str, Any],
    *,
    balanced_detail: str,
) -> SheddingResult:
    """The strategy's result: its unloads, or one cycle-level ``Skip`` saying why there is none."""
    out_stats = dict(stats)
    if skipped.reasons:
        out_stats["skippedBrokers"] = skipped.to_json()
    if any(d.is_unload for d in decisions):
        return SheddingResult.of(decisions, out_stats)
    if skipped.reasons:
        first_reason = next(iter(skipped.reasons.values()))[0]
        detail = "; ".join(f"{b}: {d}" for b, (_, d) in skipped.reasons.items())
        return SheddingResult.of([*decisions, UnloadDecision.skip(first_reason, detail)], out_stats)
    return SheddingResult.of([*decisions, UnloadDecision.skip(Reason.BALANCED, balanced_detail)], out_stats)
