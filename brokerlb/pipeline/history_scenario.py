"""A simulator scenario for a recorded history: the cluster the topic samples came from.

A backtest replays recorded topic traffic (:class:`~brokerlb.sim.RecordedWorkload`) on a
simulated cluster. Without a scenario file, :func:`scenario_from_history` builds one from the
history itself:

* **brokers** -- every broker with a load report in ``broker-samples/``, with the capacity of
  its latest report: ``cores = cpu.limit / 100`` (Pulsar reports cpu limits as 100 per core)
  and ``nic_gbps = bandwidthIn.limit / 1e6`` (Kbit/s); a limit of 0 (not measured) keeps the
  simulator's default (8 cores, 10 Gbit/s);
* **namespaces** -- those of the recorded topics, each with the bundle count of its first
  layout in ``bundle-boundaries/`` (else ``defaultNumberOfNamespaceBundles``, which a grid may vary). The simulator
  starts them as equal ranges (``NamespaceBundles.create``): a recorded uneven layout (after
  splits) is not reproduced;
* **duration** -- the recorded span rounded up to whole ``tick`` cycles (at least one);
* ``seed`` 0 (the recorded traffic is replayed as is; the seed only drives measurement noise).

A broker that only appears in topic samples is not known without its report; a history
without broker samples needs a scenario file (``--scenario``) naming the brokers.
"""

from __future__ import annotations

import json
import math
import os
from typing import TYPE_CHECKING, Any

from brokerlb.errors import InvalidInputError, InvalidLoadDataError
from brokerlb.history import BROKER_SAMPLES, BUNDLE_BOUNDARIES, history_files

if TYPE_CHECKING:
    from brokerlb.sim import RecordedWorkload, Scenario

__all__ = ["scenario_from_history", "recorded_brokers", "recorded_bundle_counts"]


def _lines(root: str | os.PathLike[str], kind: str) -> Any:
    for path in history_files(root, kind):
        with open(path, encoding="utf-8") as handle:
            for number, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                try:
                    data = json.loads(text)
                except ValueError as exc:
                    raise InvalidLoadDataError(f"{path}:{number}: not JSON: {exc}") from exc
                if not isinstance(data, dict):
                    raise InvalidLoadDataError(f"{path}:{number}: expected a JSON object")
                yield f"{path}:{number}", data


def _limit(local: dict[str, Any], resource: str) -> float:
    usage = local.get(resource)
    value = usage.get("limit") if isinstance(usage, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return 0.0


def recorded_brokers(root: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Broker entries (``name``, ``cores``, ``nic_gbps``) from the latest report of each broker."""
    latest: dict[str, tuple[int, dict[str, Any]]] = {}
    for where, data in _lines(root, BROKER_SAMPLES):
        broker, timestamp, local = data.get("brokerId"), data.get("timestamp"), data.get("localData")
        if not isinstance(broker, str) or not broker or not isinstance(timestamp, int | float):
            raise InvalidLoadDataError(f"{where}: expected brokerId and timestamp")
        if isinstance(local, dict) and (broker not in latest or timestamp >= latest[broker][0]):
            latest[broker] = (int(timestamp), local)
    out = []
    for broker in sorted(latest):
        local = latest[broker][1]
        entry: dict[str, Any] = {"name": broker}
        cpu, nic = _limit(local, "cpu"), _limit(local, "bandwidthIn")
        if cpu:
            entry["cores"] = cpu / 100.0
        if nic:
            entry["nic_gbps"] = nic / 1e6
        out.append(entry)
    return out


def recorded_bundle_counts(root: str | os.PathLike[str]) -> dict[str, int]:
    """Namespace -> bundle count of its earliest recorded layout."""
    first: dict[str, tuple[int, int]] = {}
    for where, data in _lines(root, BUNDLE_BOUNDARIES):
        namespace, timestamp, boundaries = (
            data.get("namespace"),
            data.get("timestamp"),
            data.get("boundaries"),
        )
        if (
            not isinstance(namespace, str)
            or not isinstance(timestamp, int | float)
            or not isinstance(boundaries, list)
        ):
            raise InvalidLoadDataError(f"{where}: expected namespace, timestamp and boundaries")
        if len(boundaries) < 2:
            raise InvalidLoadDataError(f"{where}: boundaries: fewer than two")
        if namespace not in first or timestamp < first[namespace][0]:
            first[namespace] = (int(timestamp), len(set(boundaries)) - 1)
    return {ns: count for ns, (_, count) in first.items()}


def scenario_from_history(
    root: str | os.PathLike[str], workload: RecordedWorkload, *, tick: float = 60.0
) -> Scenario:
    """The scenario of the module docstring for the history under ``root``."""
    from brokerlb.sim import parse_scenario

    brokers = recorded_brokers(root)
    if not brokers:
        raise InvalidInputError(
            f"history {os.fspath(root)}: no broker load reports ({BROKER_SAMPLES}/*.jsonl) "
            f"to take the brokers from; give a scenario naming the brokers (--scenario)"
        )
    counts = recorded_bundle_counts(root)
    namespaces = [
        {"name": ns, "topics": 0, "bundles": counts[ns]} for ns in workload.namespaces if ns in counts
    ]
    cycles = max(1, math.ceil(workload.span_seconds / tick))
    data = {
        "name": f"history {os.path.basename(os.path.normpath(os.fspath(root)))}",
        "description": f"Recorded topic traffic of {os.fspath(root)} on the brokers of its load reports.",
        "seed": 0,
        "duration": cycles * tick,
        "tick": tick,
        "brokers": brokers,
        "namespaces": namespaces,
        # the workload is passed to the simulation; the path says where it came from
        "recorded_workload": os.fspath(root),
    }
    return parse_scenario(data, source=f"{os.fspath(root)} (derived)")
