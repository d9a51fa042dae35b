"""What a simulation measures, per cycle and in summary.

Broker **load** is the max resource usage as a fraction (Pulsar's ``getMaxResourceUsage``:
``max(cpu%, directMemory%, bwIn%, bwOut%) / 100``) of the traffic a broker actually serves,
without measurement noise. Per cycle, over the brokers that are up:

* ``load_max``, ``load_mean``, ``load_min``, ``load_std`` (population std-dev);
* ``lower_bound`` -- no placement can make the most loaded broker lighter than
  ``max(average load, largest bundle)``. Per resource r (cpu, bandwidth in/out, direct
  memory): the average is ``(sum of base usage + sum of bundle demands) / sum of limits``
  over the live brokers; the largest bundle must sit on some broker, so it gives
  ``min over brokers of (base + largest demand) / limit``. The bound is the largest of these;
  ``distance = load_max - lower_bound`` (0 = as balanced as possible);
* ``moves`` and ``moved_throughput`` (bytes/s of the moved bundles, at the time they were
  released), by cause (``shed``, ``transfer``, ``split``, ``merge``, ``restart``, ``failure``);
  ``balancer_moved_throughput`` -- the same without the moves a restart or failure forced
  (:data:`FORCED_CAUSES`: the same for every strategy), i.e. what the balancer chose to move;
* ``flaps`` -- balancer moves of a bundle whose previous balancer move ended less than
  ``loadBalancerSheddingGracePeriodMinutes`` earlier; ``returns`` -- shed bundles placed back
  on the broker they were shed from;
* ``unowned_seconds`` -- bundle-seconds without a serving owner; ``unserved_throughput`` --
  offered throughput of the bundles without one at the sampling instant;
* ``decisions`` -- counts of the engine's decisions by ``kind/label/reason``
  (``unload/Skip/Balanced``, ``split/Success/Topics``, ``placement/Success/Selected`` ...).

:meth:`MetricsRecorder.summary` reduces them to one row per run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brokerlb.sim.ownership import Move
from brokerlb.sim.resources import BrokerUsage, Capacities, ResourceModel

__all__ = ["MetricsRecorder", "CycleMetrics", "lower_bound", "MOVE_CAUSES", "FORCED_CAUSES"]

#: causes a move is attributed to
MOVE_CAUSES = ("shed", "transfer", "split", "merge", "restart", "failure")
#: causes of the moves no strategy chose: a broker restarted or failed
FORCED_CAUSES = ("restart", "failure")

_SERIES = (
    "time_s",
    "live_brokers",
    "load_max",
    "load_mean",
    "load_min",
    "load_std",
    "lower_bound",
    "distance",
    "moves",
    "moved_throughput",
    "balancer_moved_throughput",
    "flaps",
    "returns",
    "unowned_seconds",
    "unserved_throughput",
    "offered_throughput",
    "served_throughput",
    "splits",
    "reports_written",
    "bundles",
)


@dataclass(slots=True)
class CycleMetrics:
    """The numbers of one cycle (what :meth:`MetricsRecorder.record` stores)."""

    time_s: float
    broker_load: np.ndarray
    broker_throughput: np.ndarray
    live: np.ndarray
    lower_bound: float
    moves: list[Move]
    unowned_seconds: float
    unserved_throughput: float
    offered_throughput: float
    served_throughput: float
    splits: int
    reports_written: int
    bundles: int
    decisions: Counter[str] = field(default_factory=Counter)


def lower_bound(
    caps: Capacities,
    base: BrokerUsage,
    live: np.ndarray,
    model: ResourceModel,
    bundle_msg_rate: np.ndarray,
    bundle_tput_in: np.ndarray,
    bundle_tput_out: np.ndarray,
) -> float:
    """``max(average load, largest bundle)`` over the live brokers (module docstring)."""
    if not live.any():
        return float("nan")
    tput = bundle_tput_in + bundle_tput_out
    demands = {
        "cpu": (model.cpu_demand(bundle_msg_rate, tput), base.cpu, caps.cpu_limit),
        "in": (bundle_tput_in * 0.008, base.bandwidth_in, caps.nic_kbps),
        "out": (bundle_tput_out * 0.008, base.bandwidth_out, caps.nic_kbps),
        "dm": (
            model.direct_memory_demand(tput),
            base.direct_memory,
            np.full(len(caps.cores), model.spec.direct_memory_mb),
        ),
    }
    bound = 0.0
    for demand, base_usage, limit in demands.values():
        b, lim = base_usage[live], limit[live]
        average = (b.sum() + demand.sum()) / lim.sum()
        largest = float(demand.max()) if len(demand) else 0.0
        single = float(((b + largest) / lim).min())
        bound = max(bound, average, single)
    return float(bound)


class MetricsRecorder:
    """Collects :class:`CycleMetrics` into arrays (one row per cycle)."""

    def __init__(self, brokers: list[str], grace_seconds: float) -> None:
        self.brokers = brokers
        self.grace_seconds = grace_seconds
        self.series: dict[str, list[float]] = {name: [] for name in _SERIES}
        self.moves_by_cause: dict[str, list[int]] = {cause: [] for cause in MOVE_CAUSES}
        self.broker_load: list[np.ndarray] = []
        self.broker_throughput: list[np.ndarray] = []
        self.decisions: list[Counter[str]] = []
        self.move_log: list[Move] = []

    def record(self, m: CycleMetrics) -> None:
        loads = m.broker_load[m.live]
        s = self.series
        s["time_s"].append(m.time_s)
        s["live_brokers"].append(float(m.live.sum()))
        if len(loads):
            s["load_max"].append(float(loads.max()))
            s["load_mean"].append(float(loads.mean()))
            s["load_min"].append(float(loads.min()))
            s["load_std"].append(float(loads.std()))
        else:
            for name in ("load_max", "load_mean", "load_min", "load_std"):
                s[name].append(float("nan"))
        s["lower_bound"].append(m.lower_bound)
        s["distance"].append(s["load_max"][-1] - m.lower_bound)
        s["moves"].append(float(len(m.moves)))
        s["moved_throughput"].append(float(sum(mv.throughput for mv in m.moves)))
        s["balancer_moved_throughput"].append(
            float(sum(mv.throughput for mv in m.moves if mv.cause not in FORCED_CAUSES))
        )
        s["flaps"].append(float(sum(mv.flap for mv in m.moves)))
        s["returns"].append(float(sum(mv.returned for mv in m.moves)))
        s["unowned_seconds"].append(m.unowned_seconds)
        s["unserved_throughput"].append(m.unserved_throughput)
        s["offered_throughput"].append(m.offered_throughput)
        s["served_throughput"].append(m.served_throughput)
        s["splits"].append(float(m.splits))
        s["reports_written"].append(float(m.reports_written))
        s["bundles"].append(float(m.bundles))
        causes = Counter(mv.cause for mv in m.moves)
        for cause in MOVE_CAUSES:
            self.moves_by_cause[cause].append(causes.get(cause, 0))
        self.broker_load.append(np.where(m.live, m.broker_load, np.nan))
        self.broker_throughput.append(np.where(m.live, m.broker_throughput, np.nan))
        self.decisions.append(m.decisions)
        self.move_log.extend(m.moves)

    # ------------------------------------------------------------------ results

    def arrays(self) -> dict[str, np.ndarray]:
        out = {name: np.asarray(values, dtype=float) for name, values in self.series.items()}
        for cause, values in self.moves_by_cause.items():
            out[f"moves_{cause}"] = np.asarray(values, dtype=float)
        return out

    def broker_matrix(self, which: str = "load") -> np.ndarray:
        """cycles x brokers (NaN where a broker is down or not yet added)."""
        rows = self.broker_load if which == "load" else self.broker_throughput
        if not rows:
            return np.zeros((0, len(self.brokers)))
        return np.vstack(rows)

    def decision_series(self) -> dict[str, np.ndarray]:
        keys = sorted({k for counter in self.decisions for k in counter})
        return {k: np.asarray([c.get(k, 0) for c in self.decisions], dtype=float) for k in keys}

    def summary(self) -> dict[str, Any]:
        a = self.arrays()
        n = len(a["time_s"])

        def stat(name: str, fn: Any) -> float:
            values = a[name][~np.isnan(a[name])]
            return float(fn(values)) if len(values) else float("nan")

        decisions: Counter[str] = Counter()
        for counter in self.decisions:
            decisions.update(counter)
        return {
            "cycles": n,
            "load_max_mean": stat("load_max", np.mean),
            "load_max_peak": stat("load_max", np.max),
            "load_std_mean": stat("load_std", np.mean),
            "load_std_final": float(a["load_std"][-1]) if n else float("nan"),
            "distance_mean": stat("distance", np.mean),
            "distance_p95": stat("distance", lambda v: np.percentile(v, 95)),
            "distance_final": float(a["distance"][-1]) if n else float("nan"),
            "load_min_final": float(a["load_min"][-1]) if n else float("nan"),
            "moves": int(a["moves"].sum()),
            "moves_by_cause": {cause: int(a[f"moves_{cause}"].sum()) for cause in MOVE_CAUSES},
            "moved_throughput": float(a["moved_throughput"].sum()),
            "balancer_moved_throughput": float(a["balancer_moved_throughput"].sum()),
            "flaps": int(a["flaps"].sum()),
            "returns": int(a["returns"].sum()),
            "unowned_seconds": float(a["unowned_seconds"].sum()),
            "splits": int(a["splits"].sum()),
            "reports_written": int(a["reports_written"].sum()),
            "decisions": dict(sorted(decisions.items())),
        }
