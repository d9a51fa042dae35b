"""What the live dashboard shows, as one JSON document (``GET /dashboard/api/state``).

Built from the leader's view: the brokers' reports as the registry holds them, the bundles of every
namespace the leader knows with their owners, its last cycles (decisions with labels, reasons and
numbers), the ownership changes it saw (moves with their cause) and the balancer's status.

* ``brokers``: id, web URL, whether it leads, load (``maxResourceUsage`` %), each resource's usage,
  limit and percent, bundles, topics, message rates and throughput;
* ``namespaces``: each namespace's ring -- every bundle's range (``lower``/``upper`` as hash
  values), owner, and whether it is being unloaded;
* ``cycles``: the leader's recent records, the ones that did something first (moves, splits,
  merges, failures; newest first), then the idle ones (nothing but skips), each run of idle cycles
  that concluded alike collapsed into one entry with its count (``kind: idle``): every six seconds
  of "Skip/Balanced" no longer pushes a real move out of sight;
* ``moves``: recent moves and releases, newest first, with their cause;
* ``balancer``: :mod:`brokerlb.broker.leader.balancer_status`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from brokerlb.broker.leader.leader_feed import ObservedCycle
from brokerlb.broker.ownership.ownership_channel import BundleOwner
from brokerlb.broker.ownership.ownership_log import OwnershipChange
from brokerlb.model import LocalBrokerData
from brokerlb.ring import NamespaceBundles

__all__ = ["dashboard_state", "broker_row", "namespace_ring", "cycle_entries", "is_idle"]

_RESOURCES = (
    ("cpu", "cpu"),
    ("memory", "memory"),
    ("directMemory", "direct_memory"),
    ("bandwidthIn", "bandwidth_in"),
    ("bandwidthOut", "bandwidth_out"),
)


def broker_row(broker: str, report: LocalBrokerData, leader: str | None) -> dict[str, Any]:
    resources = {}
    for key, attr in _RESOURCES:
        usage = getattr(report, attr)
        resources[key] = {
            "usage": usage.usage,
            "limit": usage.limit,
            "percent": round(usage.percent_usage(), 2),
        }
    return {
        "id": broker,
        "url": report.web_service_url,
        "leader": broker == leader,
        "load": round(report.max_resource_usage() * 100.0, 2),
        "resources": resources,
        "bundles": report.num_bundles,
        "topics": report.num_topics,
        "msgRateIn": report.msg_rate_in,
        "msgRateOut": report.msg_rate_out,
        "msgThroughputIn": report.msg_throughput_in,
        "msgThroughputOut": report.msg_throughput_out,
    }


def namespace_ring(
    namespace: str, bundles: NamespaceBundles, owners: Mapping[str, BundleOwner]
) -> dict[str, Any]:
    ring = []
    for bundle in bundles:
        info = owners.get(str(bundle))
        ring.append(
            {
                "bundle": str(bundle),
                "range": bundle.range,
                "lower": bundle.lower,
                "upper": bundle.upper,
                "owner": info.broker_id if info is not None else None,
                "unloading": bool(info is not None and info.disabled),
            }
        )
    return {"namespace": namespace, "bundles": ring}


def dashboard_state(
    *,
    cluster: str,
    served_by: str,
    leader: str | None,
    balancer: Mapping[str, Any],
    reports: Mapping[str, LocalBrokerData],
    namespaces: Iterable[tuple[str, NamespaceBundles]],
    owners: Mapping[str, BundleOwner],
    cycles: Sequence[ObservedCycle],
    moves: Sequence[OwnershipChange],
    now_ms: int,
) -> dict[str, Any]:
    return {
        "cluster": cluster,
        "servedBy": served_by,
        "leader": leader,
        "atMs": now_ms,
        "balancer": dict(balancer),
        "brokers": [broker_row(b, r, leader) for b, r in sorted(reports.items())],
        "namespaces": [
            namespace_ring(ns, b, owners) for ns, b in sorted(namespaces, key=lambda item: item[0])
        ],
        "cycles": cycle_entries(cycles),
        "moves": [m.to_json() for m in reversed(moves)],
    }


def is_idle(cycle: ObservedCycle) -> bool:
    """A cycle that did nothing: no move, split or merge decided, no failure."""
    if cycle.moves or cycle.splits or cycle.merges:
        return False
    return all(str(d.label) == "Skip" for d in cycle.decisions)


def cycle_entries(
    cycles: Sequence[ObservedCycle], *, active: int = 15, idle: int = 5
) -> list[dict[str, Any]]:
    """The cycles for the page (module docstring): up to ``active`` that did something, newest
    first, then up to ``idle`` runs of idle cycles collapsed by what they concluded."""
    busy = [c.to_json() for c in reversed(cycles) if not is_idle(c)][:active]
    runs: list[dict[str, Any]] = []
    joined = False  # whether the next idle cycle may join the last run (no busy cycle in between)
    for cycle in reversed(cycles):
        if not is_idle(cycle):
            joined = False
            continue
        counts: dict[str, int] = {}
        for d in cycle.decisions:
            key = f"{d.label}/{d.reason}"
            counts[key] = counts.get(key, 0) + 1
        signature = {"kind": cycle.kind, "decisions": dict(sorted(counts.items()))}
        last = runs[-1] if runs and joined else None
        if last is not None and {"kind": last["cycleKind"], "decisions": last["decisions"]} == signature:
            last["count"] += 1
            last["fromMs"] = cycle.at_ms
            continue
        joined = True
        if len(runs) == idle:
            break
        detail = next((d.detail for d in cycle.decisions if d.detail), "")
        runs.append(
            {
                "kind": "idle",
                "cycleKind": cycle.kind,
                "count": 1,
                "fromMs": cycle.at_ms,
                "toMs": cycle.at_ms,
                "decisions": signature["decisions"],
                "detail": detail,
            }
        )
    return busy + runs
