"""Replay recorded load reports through the load-data model, as the leader would (pure Python).

This is the in-process reference for the Spark ``loaddata`` job: both compute, from the
same broker samples, the per-bundle :class:`~brokerlb.model.BundleData` (short- and
long-term capped running averages) and the per-broker
:class:`~brokerlb.model.TimeAverageBrokerData`. It costs ``O(cycles × bundles)``, so it is
meant for tests and small histories.

**Report cycles.** The samples are taken in ``(timestamp, brokerId)`` order; a repeated
``(timestamp, brokerId)`` counts once (the first). Each sample is one cycle:

* ``cycles="leader"`` (default, Pulsar's ``ModularLoadManagerImpl``): every write under
  ``/loadbalance/brokers`` makes the leader run ``updateAll``, which folds the latest
  ``lastStats`` of **every** broker it knows into the bundle histories -- a bundle gets one
  sample per cycle from each broker whose latest report lists it, stale or not. A removal
  (``localData: null``) drops the broker and is a cycle too. Each cycle *is* the leader's
  refresh (:func:`brokerlb.loadbalance.refresh.refresh`, which folds brokers in id order), so
  the replay -- and the Spark pipeline verified against it -- equal the live leader.
* ``cycles="report"``: a report folds only its own ``lastStats`` (one sample per bundle per
  report): the averages then depend only on what each bundle's owner reported.

After each cycle the reporting broker's time averages are recorded (``cycles="leader"``: as the
refresh computed them, right after folding that broker's report; ``"report"``:
``TimeAverageBrokerData.reset`` over the bundles of its report). Brokers removed by a
removal record have no final time averages. Bundle histories are never dropped (a bundle
that left every report keeps its last averages), as in the leader's map.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from brokerlb.errors import InvalidInputError
from brokerlb.history.records import BrokerSample
from brokerlb.loadbalance.refresh import LeaderLoadState, refresh
from brokerlb.model import BundleData, LocalBrokerData, NamespaceBundleStats, TimeAverageBrokerData

__all__ = [
    "CycleMode",
    "CYCLE_MODES",
    "ReplayedLoadData",
    "BundleHistoryEntry",
    "BrokerHistoryEntry",
    "replay_load_data",
]

CycleMode = Literal["leader", "report"]
CYCLE_MODES: tuple[str, ...] = ("leader", "report")


@dataclass(frozen=True, slots=True)
class BundleHistoryEntry:
    """A bundle's history right after the cycle of a report that listed it."""

    cycle: int
    timestamp: int
    broker_id: str
    bundle: str
    data: BundleData


@dataclass(frozen=True, slots=True)
class BrokerHistoryEntry:
    """A broker's time averages right after the cycle of its report."""

    cycle: int
    timestamp: int
    broker_id: str
    data: TimeAverageBrokerData


@dataclass(slots=True)
class ReplayedLoadData:
    """What the leader holds after the last cycle, plus the per-report history."""

    bundle_data: dict[str, BundleData] = field(default_factory=dict)
    time_average_data: dict[str, TimeAverageBrokerData] = field(default_factory=dict)
    latest_reports: dict[str, LocalBrokerData] = field(default_factory=dict)
    bundle_history: list[BundleHistoryEntry] = field(default_factory=list)
    broker_history: list[BrokerHistoryEntry] = field(default_factory=list)
    cycles: int = 0


def ordered_cycles(samples: Iterable[BrokerSample]) -> list[BrokerSample]:
    """Samples in cycle order: ``(timestamp, brokerId)``, repeated keys dropped (first kept)."""
    seen: set[tuple[int, str]] = set()
    out = []
    for sample in sorted(samples, key=lambda s: (s.timestamp, s.broker_id)):
        key = (sample.timestamp, sample.broker_id)
        if key not in seen:
            seen.add(key)
            out.append(sample)
    return out


def replay_load_data(
    samples: Iterable[BrokerSample], *, cycles: str = "leader", history: bool = True
) -> ReplayedLoadData:
    """Fold the samples' bundle stats into bundle histories (see the module docstring)."""
    if cycles not in CYCLE_MODES:
        raise InvalidInputError(f"Unknown cycle mode {cycles!r}; known: {', '.join(CYCLE_MODES)}")
    fold = _LeaderCycles() if cycles == "leader" else _ReportCycles()
    result = ReplayedLoadData()
    latest = result.latest_reports
    for cycle, sample in enumerate(ordered_cycles(samples)):
        if sample.local_data is None:
            latest.pop(sample.broker_id, None)
        else:
            latest[sample.broker_id] = sample.local_data
        averages = fold.cycle(latest, sample)
        result.cycles = cycle + 1
        if averages is None:
            continue
        if history:
            result.broker_history.append(
                BrokerHistoryEntry(cycle, sample.timestamp, sample.broker_id, averages)
            )
            result.bundle_history.extend(
                BundleHistoryEntry(
                    cycle, sample.timestamp, sample.broker_id, bundle, fold.bundle_data[bundle].copy()
                )
                for bundle in sorted(sample.local_data.last_stats)  # type: ignore[union-attr]
            )
    result.bundle_data = dict(fold.bundle_data)
    result.time_average_data = fold.time_averages(latest)
    return result


_DEFAULT_STATS = NamespaceBundleStats.new_default()


class _LeaderCycles:
    """``cycles="leader"``: each cycle is the leader's own refresh over every broker's latest report."""

    def __init__(self) -> None:
        self.state = LeaderLoadState()

    @property
    def bundle_data(self) -> Mapping[str, BundleData]:
        return self.state.load_data.bundle_data

    def cycle(
        self, latest: Mapping[str, LocalBrokerData], sample: BrokerSample
    ) -> TimeAverageBrokerData | None:
        # a copy of each report: the refresh keeps the objects it is given as the brokers' data
        refresh(self.state, {b: r.copy() for b, r in latest.items()})
        broker = self.state.load_data.broker_data.get(sample.broker_id)
        return None if broker is None else replace(broker.time_average_data)

    def time_averages(self, latest: Mapping[str, LocalBrokerData]) -> dict[str, TimeAverageBrokerData]:
        """Every broker's time averages as the last refresh left them."""
        brokers = self.state.load_data.broker_data
        return {b: replace(brokers[b].time_average_data) for b in latest if b in brokers}


class _ReportCycles:
    """``cycles="report"``: each report folds only its own ``lastStats``."""

    def __init__(self) -> None:
        self.bundle_data: dict[str, BundleData] = {}

    def cycle(
        self, latest: Mapping[str, LocalBrokerData], sample: BrokerSample
    ) -> TimeAverageBrokerData | None:
        report = sample.local_data
        if report is None:
            return None
        for bundle, stats in report.last_stats.items():
            data = self.bundle_data.get(bundle)
            if data is None:
                data = self.bundle_data[bundle] = BundleData.new_default()
            data.update(stats)
        return TimeAverageBrokerData.of(report.last_stats, self.bundle_data, _DEFAULT_STATS)

    def time_averages(self, latest: Mapping[str, LocalBrokerData]) -> dict[str, TimeAverageBrokerData]:
        """Each broker's time averages over its latest report's bundles, from the final histories."""
        return {
            b: TimeAverageBrokerData.of(r.last_stats, self.bundle_data, _DEFAULT_STATS)
            for b, r in latest.items()
        }
