"""The balancer's picture of the cluster: broker loads relative to capacity, bundle demands.

Built once per cycle from a :class:`~brokerlb.loadbalance.view.ClusterView` (the modular
leader's load reports) and the balancer's memory:

* a broker's **load** is Pulsar's weighted max resource usage
  (``getMaxResourceUsageWithWeight``): ``max(w_r x usage_r / limit_r)`` over cpu, direct memory,
  bandwidth in and out, with ``loadBalancer*ResourceWeight``; heap memory does not move with
  bundles, so its weighted share is a floor under the load. Loads are relative to each broker's
  own limits, so brokers of different sizes compare;
* a bundle's **demand** per resource is what moving it moves: ``cost_r x traffic_r`` with the
  bundle's traffic from its broker's report (``lastStats``: message rate and throughput in and
  out) and ``cost_r`` the cluster's usage per unit of traffic, fitted over the brokers' reports as
  ``usage_r = base_r x limit_r + cost_r x traffic_r``. cpu traffic counts messages, bytes
  converted to messages at the cluster's average message size; direct memory counts bytes;
  bandwidth in / out count bytes in / out. ``base_r`` -- what an idle broker uses, per unit of
  capacity -- is read off brokers that report no traffic (a new or restarted broker) and kept
  in memory; without one yet it is taken as 0 (all usage follows traffic);
* **pending moves** (decided, not yet in the reports) are applied: a bundle the source still
  reports is taken off it, one the destination does not report yet is added to it -- and one it
  reports with less traffic than was moved (its topics just opened there, their rates not measured
  yet) adds the difference.

>>> from brokerlb.testing import broker, load_data
>>> from brokerlb.loadbalance.balancer.memory import BalancerMemory
>>> view = ClusterView(load_data=load_data([
...     broker("b1:8080", cpu=60, bundles={"t/ns/0x00000000_0x80000000": 2000, "t/ns/0x80000000_0xffffffff": 1000}),
...     broker("b2:8080", cpu=20)]))
>>> model = ClusterModel.build(view, BalancerMemory())
>>> [round(x, 3) for x in model.loads()], model.owner.tolist()
[0.6, 0.2], [0, 0]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from brokerlb.loadbalance.balancer.layout import Layout
from brokerlb.loadbalance.balancer.memory import BalancerMemory
from brokerlb.loadbalance.view import ClusterView
from brokerlb.model import BundleData, LocalBrokerData

__all__ = ["RESOURCES", "ClusterModel", "bundle_traffic"]

#: the resources that move with bundles, in column order
RESOURCES = ("cpu", "directMemory", "bandwidthIn", "bandwidthOut")
_CPU, _DM, _BW_IN, _BW_OUT = range(4)


def bundle_traffic(
    rate_in: float, rate_out: float, tput_in: float, tput_out: float, message_size: float
) -> tuple[float, float, float, float]:
    """The traffic measure per resource of one bundle (module docstring)."""
    tput = tput_in + tput_out
    return (rate_in + rate_out + (tput / message_size if message_size > 0 else 0.0), tput, tput_in, tput_out)


@dataclass(eq=False)
class ClusterModel:
    """Arrays over brokers (``n``) and bundles (``m``); see the module docstring."""

    brokers: tuple[str, ...]
    index: dict[str, int]
    #: (n, 4) limits and usage (after pending corrections) per resource
    limit: np.ndarray
    usage: np.ndarray
    #: (4,) resource weights; (n,) weighted heap-memory share (a floor under the load)
    weights: np.ndarray
    floor: np.ndarray
    #: (4,) usage per unit of traffic; (4,) idle usage per unit of limit
    cost: np.ndarray
    base: np.ndarray
    message_size: float
    bundles: list[str]
    bundle_index: dict[str, int]
    #: (m,) owner index; (m, 4) traffic measure; (m,) throughput in + out (bytes/s), message rate
    #: in + out, topics, sessions (producers + consumers)
    owner: np.ndarray
    traffic: np.ndarray
    throughput: np.ndarray
    msg_rate: np.ndarray
    topics: np.ndarray
    sessions: np.ndarray
    #: (m,) each bundle's namespace (an index into ``namespaces``); (m, 2) its hash range
    #: ``[lower, upper)`` (``-1, -1`` for a name that is not a range)
    ns_id: np.ndarray
    namespaces: list[str]
    bounds: np.ndarray
    #: the table the model was read from (shared between cycles: ``bundles``, ``bundle_index``,
    #: ``ns_id``, ``bounds`` and ``namespaces`` are its, read-only)
    layout: Layout

    def namespace_of(self, k: int) -> str:
        return self.namespaces[int(self.ns_id[k])]

    # ------------------------------------------------------------------ building

    @classmethod
    def build(cls, view: ClusterView, memory: BalancerMemory) -> ClusterModel:
        conf = view.config
        brokers = tuple(sorted(view.brokers))
        index = {b: i for i, b in enumerate(brokers)}
        n = len(brokers)
        limit = np.zeros((n, 4))
        usage = np.zeros((n, 4))
        floor = np.zeros(n)
        weights = np.array(
            [
                conf.loadBalancerCPUResourceWeight,
                conf.loadBalancerDirectMemoryResourceWeight,
                conf.loadBalancerBandwidthInResourceWeight,
                conf.loadBalancerBandwidthOutResourceWeight,
            ]
        )
        reports = []
        memory_weight = conf.loadBalancerMemoryResourceWeight
        for i, broker in enumerate(brokers):
            local = view.brokers[broker].local_data
            reports.append(local)
            _resources(local, limit[i], usage[i])
            memory_limit = local.memory.limit
            if memory_limit > 0:
                floor[i] = memory_weight * local.memory.usage / memory_limit
        layout = memory.layout
        layout.refresh(brokers, reports)
        table = layout.table()
        owner_arr = layout.owner.copy()  # pending moves change it
        m = len(layout.names)
        rate, tin, tout = table[:, 0], table[:, 1], table[:, 2]
        total_rate, total_tput = float(rate.sum()), float((tin + tout).sum())
        message_size = total_tput / total_rate if total_rate > 0 else 0.0
        throughput = tin + tout
        traffic = np.empty((m, 4))
        traffic[:, 0] = rate + (throughput / message_size if message_size > 0 else 0.0)
        traffic[:, 1] = throughput
        traffic[:, 2] = tin
        traffic[:, 3] = tout
        broker_traffic = np.zeros((n, 4))
        if m:
            for r in range(4):
                broker_traffic[:, r] = np.bincount(owner_arr, weights=traffic[:, r], minlength=n)
        base = _base_fraction(memory, limit, usage, broker_traffic)
        cost = _fit_cost(limit, usage, broker_traffic, base)
        model = cls(
            brokers=brokers,
            index=index,
            limit=limit,
            usage=usage,
            weights=weights,
            floor=floor,
            cost=cost,
            base=base,
            message_size=message_size,
            bundles=layout.names,
            bundle_index=layout.bundle_index,
            owner=owner_arr,
            traffic=traffic,
            throughput=throughput,
            msg_rate=rate,
            topics=table[:, 3].astype(np.int64),
            sessions=table[:, 4].astype(np.int64),
            ns_id=layout.ns_id,
            namespaces=layout.namespaces,
            bounds=layout.bounds,
            layout=layout,
        )
        model._apply_pending(view, memory)
        return model

    def _apply_pending(self, view: ClusterView, memory: BalancerMemory) -> None:
        for move in memory.pending.values():
            demand = np.asarray(move.demand)
            src, dst = self.index.get(move.source), self.index.get(move.destination)
            if src is not None and move.bundle in view.reported_bundles(move.source):
                self.usage[src] = np.maximum(self.usage[src] - demand, 0.0)
            if dst is not None and move.bundle not in view.reported_bundles(move.destination):
                self.usage[dst] += demand
            elif dst is not None:
                # reported there before its traffic is measured there (a topic just opened on the
                # destination reports no rate until its next stats interval): the part the report
                # does not show yet still counts on the destination
                shown = self._reported_demand(view, move.destination, move.bundle)
                self.usage[dst] += np.maximum(demand - shown, 0.0)
            k = self.bundle_index.get(move.bundle)
            if k is not None and dst is not None:
                self.owner[k] = dst

    def _reported_demand(self, view: ClusterView, broker: str, bundle: str) -> np.ndarray:
        """(4,) the demand ``broker``'s report shows for ``bundle`` (0 without its stats)."""
        data = view.brokers.get(broker)
        stats = data.local_data.last_stats.get(bundle) if data is not None else None
        if stats is None:
            return np.zeros(4)
        traffic = bundle_traffic(
            stats.msg_rate_in,
            stats.msg_rate_out,
            stats.msg_throughput_in,
            stats.msg_throughput_out,
            self.message_size,
        )
        return np.asarray(self.cost * np.asarray(traffic))

    # ------------------------------------------------------------------ loads

    def load_of(self, usage: np.ndarray, limit: np.ndarray, floor: float) -> float:
        """One broker's load from its usage and limit rows."""
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(limit > 0, usage / limit, 0.0)
        return max(floor, float((self.weights * ratios).max()))

    def loads(self) -> np.ndarray:
        """(n,) every broker's load."""
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(self.limit > 0, self.usage / self.limit, 0.0)
        return (
            np.maximum(self.floor, (ratios * self.weights).max(axis=1)) if len(self.brokers) else np.zeros(0)
        )

    def demand(self, k: int) -> np.ndarray:
        """(4,) what moving bundle ``k`` moves, in the reports' units."""
        return np.asarray(self.cost * self.traffic[k])

    def demands(self) -> np.ndarray:
        """(m, 4) every bundle's demand."""
        return np.asarray(self.traffic * self.cost)

    def demand_of_data(self, data: BundleData) -> np.ndarray:
        """(4,) the demand of a bundle known only by its history (a bundle being placed)."""
        short = data.short_term_data
        return self.cost * np.asarray(  # type: ignore[no-any-return]
            bundle_traffic(
                short.msg_rate_in,
                short.msg_rate_out,
                short.msg_throughput_in,
                short.msg_throughput_out,
                self.message_size,
            )
        )

    def contribution(self, demand: np.ndarray, broker: int) -> float:
        """How much ``demand`` weighs on ``broker`` (weighted max over resources of demand / limit)."""
        limit = self.limit[broker]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(limit > 0, demand / limit, 0.0)
        return float((self.weights * ratios).max())

    def lightest_contributions(self) -> np.ndarray:
        """(m,) each bundle's load on the broker where it weighs least (the largest limits)."""
        best = self.limit.max(axis=0) if len(self.brokers) else np.zeros(4)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(best > 0, self.demands() / best, 0.0)
        return np.asarray((ratios * self.weights).max(axis=1)) if len(self.bundles) else np.zeros(0)

    def names(self, ks: Iterable[int]) -> list[str]:
        return [self.bundles[k] for k in ks]


def _resources(local: LocalBrokerData, limit: np.ndarray, usage: np.ndarray) -> None:
    for j, resource in enumerate((local.cpu, local.direct_memory, local.bandwidth_in, local.bandwidth_out)):
        limit[j] = resource.limit
        usage[j] = resource.usage


def _base_fraction(
    memory: BalancerMemory, limit: np.ndarray, usage: np.ndarray, broker_traffic: np.ndarray
) -> np.ndarray:
    """Idle usage per unit of limit: from brokers reporting no traffic, else what was learnt."""
    idle = (broker_traffic.sum(axis=1) == 0) & (limit[:, _CPU] > 0)
    if idle.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(limit[idle] > 0, usage[idle] / limit[idle], 0.0)
        learnt = ratios.min(axis=0)
        memory.base_fraction = tuple(float(v) for v in learnt)
    if memory.base_fraction is None:
        return np.zeros(4)
    return np.asarray(memory.base_fraction, dtype=float)


def _fit_cost(
    limit: np.ndarray, usage: np.ndarray, broker_traffic: np.ndarray, base: np.ndarray
) -> np.ndarray:
    """Usage per unit of traffic per resource: ``sum(usage - base x limit) / sum(traffic)``."""
    cost = np.zeros(4)
    for r in range(4):
        moving = broker_traffic[:, r]
        total = float(moving.sum())
        if total <= 0:
            continue
        variable = np.maximum(usage[:, r] - base[r] * limit[:, r], 0.0)
        cost[r] = float(variable[moving > 0].sum()) / total
    return cost
