"""Read and validate scenario files (YAML) into :class:`~brokerlb.sim.spec.Scenario`.

A scenario file, with every field (only ``seed``, ``duration``, ``brokers`` and
``namespaces`` are required)::

    name: new-broker-idle
    description: Ten busy brokers and a new one.
    seed: 7                      # required: same seed, same result
    duration: 6h                 # 500ms, 90s, 5m, 2h, 1d, 1h30m or seconds
    tick: 1m                     # cycle length (default 1m)
    strategies: [OverloadShedder, ThresholdShedder]   # default set for --report
    config:                      # broker.conf overrides, Pulsar key names
      loadBalancerSheddingGracePeriodMinutes: 30
    timing: {unload: 50ms, transfer: 50ms, lookup: 500ms, session_timeout: 30s}
    resources: {cpu_us_per_msg: 10, cpu_us_per_mb: 2000, base_cpu: 2, measurement_noise: 0.01}
    brokers:
      - {name: "broker-{i}", count: 10, cores: 8, nic_gbps: 10, version: 4.0.0}
    workload: {msg_rate: 20k, msg_size: 1KB, fanout: 1, zipf: 1.0, noise: 0.05,
               diurnal: {amplitude: 0.5, period: 1d, peak: 14h}, producers: 1, consumers: 1}
    namespaces:
      - {name: "tenant/ns-{i}", count: 4, bundles: 16, topics: 200,
         anti_affinity_group: null, workload: {msg_rate: 40k}}
    events:
      - {at: 1h, type: add_broker, broker: {name: broker-11, cores: 16}}
      - {at: 2h, type: restart_broker, broker: broker-3, downtime: 5m}
      - {at: 3h, type: fail_broker, broker: broker-4}
      - {at: 1h, type: hot_topic, namespace: tenant/ns-1, topic: 0, factor: 20, ramp: 5m, duration: 1h}
      - {at: 3h, type: hot_topic, namespace: tenant/ns-2, topic: 5, rate: 40k}   # to 40,000 msg/s
      - {at: 1h, type: namespace_growth, namespace: tenant/ns-2, topics: 500, over: 2h}
      - {at: 4h, type: scale_traffic, namespace: tenant/ns-3, factor: 2, ramp: 10m}
      - {at: 5h, type: set_config, config: {loadBalancerSheddingEnabled: false}}
    recorded_workload: topic-stats.jsonl   # replay recorded topic stats instead (relative path)

* ``count`` repeats an entry; ``{i}`` in its name becomes 1, 2, ... ``count``.
* A broker name without ``:port`` gets ``:8080`` (Pulsar's ``host:port`` broker ids).
* The top-level ``workload`` is the default; a namespace's ``workload`` overrides single fields.

Every problem raises :class:`~brokerlb.errors.InvalidScenarioError` naming the file and the
field path (``namespaces[1].workload.zipf``); unknown keys are errors (with a suggestion),
so a typo never silently falls back to a default.
"""

from __future__ import annotations

import os
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from brokerlb.errors import InvalidScenarioError
from brokerlb.sim.event_reader import BROKER_KEYS, broker_fields, read_events
from brokerlb.sim.reading import (
    Node,
    config,
    count,
    expand_names,
    fraction,
    namespace,
    positive,
    strategies,
    text,
)
from brokerlb.sim.settings import apply_settings, check_config, scenario_to_dict
from brokerlb.sim.spec import (
    DEFAULT_STRATEGIES,
    BrokerSpec,
    DiurnalSpec,
    NamespaceSpec,
    ResourceModelSpec,
    Scenario,
    TimingSpec,
    WorkloadSpec,
    broker_id_of,
)
from brokerlb.sim.units import parse_duration, parse_quantity, parse_size

__all__ = ["load_scenario", "parse_scenario", "check_config", "scenario_to_dict", "apply_settings"]

_TOP_KEYS = (
    "name",
    "description",
    "seed",
    "duration",
    "tick",
    "strategies",
    "config",
    "timing",
    "resources",
    "brokers",
    "workload",
    "namespaces",
    "events",
    "recorded_workload",
)


# --------------------------------------------------------------------------- sections


def _timing(node: Node) -> TimingSpec:
    keys = tuple(f.name for f in fields(TimingSpec))
    n = Node(node.data.get("timing") or {}, node.sub("timing"), node.source, keys)
    default = TimingSpec()
    return TimingSpec(
        unload=n.get("unload", parse_duration, default.unload),
        transfer=n.get("transfer", parse_duration, default.transfer),
        lookup=n.get("lookup", parse_duration, default.lookup),
        session_timeout=n.get("session_timeout", parse_duration, None),
        refresh_interval=n.get("refresh_interval", parse_duration, default.refresh_interval),
    )


def _resources(node: Node) -> ResourceModelSpec:
    keys = tuple(f.name for f in fields(ResourceModelSpec))
    n = Node(node.data.get("resources") or {}, node.sub("resources"), node.source, keys)
    default = ResourceModelSpec()
    values = {key: n.get(key, parse_quantity, getattr(default, key)) for key in keys}
    for key in ("heap_mb", "direct_memory_mb"):
        if values[key] <= 0:
            raise n.error(f"{values[key]!r} must be > 0", key)
    return ResourceModelSpec(**values)


def _brokers(node: Node) -> tuple[BrokerSpec, ...]:
    raw = node.data.get("brokers")
    if not isinstance(raw, list) or not raw:
        raise node.error("required: a non-empty list of brokers", "brokers")
    out: list[BrokerSpec] = []
    for i, item in enumerate(raw):
        path = f"{node.sub('brokers')}[{i}]"
        if isinstance(item, str):
            item = {"name": item}
        n = Node(item, path, node.source, ("name", "count") + BROKER_KEYS)
        repeat = n.get("count", count(1), 1)
        template = n.get("name", text, "broker-{i}")
        try:
            names = expand_names(template, repeat)
        except ValueError as exc:
            raise n.error(str(exc), "name") from None
        spec = broker_fields(n, BrokerSpec(names[0]))
        out.extend(replace(spec, name=broker_id_of(name)) for name in names)
    _unique([b.name for b in out], node, "brokers", "broker")
    return tuple(out)


_WORKLOAD_KEYS = tuple(f.name for f in fields(WorkloadSpec))


def _workload(data: Any, path: str, source: str | None, base: WorkloadSpec) -> WorkloadSpec:
    n = Node(data, path, source, _WORKLOAD_KEYS)
    diurnal = base.diurnal
    if "diurnal" in n.data:
        diurnal = _diurnal(n.data["diurnal"], n.sub("diurnal"), source, base.diurnal)
    return WorkloadSpec(
        msg_rate=n.get("msg_rate", parse_quantity, base.msg_rate),
        msg_size=n.get("msg_size", positive(parse_size), base.msg_size),
        fanout=n.get("fanout", parse_quantity, base.fanout),
        zipf=n.get("zipf", parse_quantity, base.zipf),
        diurnal=diurnal,
        noise=n.get("noise", parse_quantity, base.noise),
        producers=n.get("producers", count(0), base.producers),
        consumers=n.get("consumers", count(0), base.consumers),
    )


def _diurnal(data: Any, path: str, source: str | None, base: DiurnalSpec | None) -> DiurnalSpec | None:
    if data is None or data is False:
        return None
    if data is True:
        data = {}
    n = Node(data, path, source, ("amplitude", "period", "peak"))
    start = base or DiurnalSpec()
    return DiurnalSpec(
        amplitude=n.get("amplitude", fraction, start.amplitude),
        period=n.get("period", positive(parse_duration), start.period),
        peak=n.get("peak", parse_duration, start.peak),
    )


def _namespaces(node: Node, default_workload: WorkloadSpec, required: bool) -> tuple[NamespaceSpec, ...]:
    raw = node.data.get("namespaces")
    if raw is None and not required:
        return ()
    if not isinstance(raw, list) or not raw:
        raise node.error("required: a non-empty list of namespaces", "namespaces")
    out: list[NamespaceSpec] = []
    keys = ("name", "count", "bundles", "topics", "workload", "anti_affinity_group")
    for i, item in enumerate(raw):
        path = f"{node.sub('namespaces')}[{i}]"
        n = Node(item, path, node.source, keys)
        repeat = n.get("count", count(1), 1)
        template = n.get("name", text, "", required=True)
        try:
            names = [namespace(name) for name in expand_names(template, repeat)]
        except ValueError as exc:
            raise n.error(str(exc), "name") from None
        workload = default_workload
        if n.has("workload"):
            workload = _workload(n.data["workload"], n.sub("workload"), node.source, default_workload)
        bundles = n.get("bundles", count(1), 4)
        topics = n.get("topics", count(0), 100)
        group = n.get("anti_affinity_group", text, None)
        out.extend(NamespaceSpec(name, bundles, topics, workload, group) for name in names)
    _unique([ns.name for ns in out], node, "namespaces", "namespace")
    return tuple(out)


def _unique(names: list[str], node: Node, key: str, what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise node.error(f"{what} {name!r} is declared twice", key)
        seen.add(name)


# --------------------------------------------------------------------------- entry points


def parse_scenario(
    data: Any, *, source: str | None = None, name: str | None = None, base_dir: str | None = None
) -> Scenario:
    """Build a :class:`Scenario` from already-parsed YAML/JSON data (rules in the module docstring).

    ``base_dir`` resolves a relative ``recorded_workload`` path.
    """
    node = Node(data, "", source, _TOP_KEYS)
    seed = node.get("seed", count(0), 0, required=True)
    duration = node.get("duration", positive(parse_duration), 0.0, required=True)
    tick = node.get("tick", positive(parse_duration), 60.0)
    if tick > duration:
        raise node.error(f"tick {tick:g}s is longer than the duration {duration:g}s", "tick")
    recorded = node.get("recorded_workload", text, None)
    if recorded is not None and base_dir is not None and not os.path.isabs(recorded):
        recorded = os.path.normpath(os.path.join(base_dir, recorded))
    default_workload = WorkloadSpec()
    if node.has("workload"):
        default_workload = _workload(node.data["workload"], "workload", source, default_workload)
    brokers = _brokers(node)
    namespaces = _namespaces(node, default_workload, required=recorded is None)
    events = read_events(node, brokers, {ns.name for ns in namespaces} if recorded is None else None)
    for event in events:
        if event.at > duration:
            raise InvalidScenarioError(
                f"event {event.kind} at {event.at:g}s is after the end ({duration:g}s)",
                field="events",
                source=source,
            )
    scenario = Scenario(
        name=node.get("name", text, name or "scenario"),
        seed=seed,
        duration=duration,
        tick=tick,
        description=node.get("description", lambda v: str(v).strip(), ""),
        brokers=brokers,
        namespaces=namespaces,
        events=events,
        config=node.get("config", config, {}),
        timing=_timing(node),
        resources=_resources(node),
        strategies=node.get("strategies", strategies, DEFAULT_STRATEGIES),
        recorded_workload=recorded,
        source=source,
    )
    check_config(scenario)
    return scenario


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read a scenario YAML file. A missing file or broken YAML is an :class:`InvalidScenarioError`."""
    import yaml

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidScenarioError(f"cannot read the file: {exc.strerror or exc}", source=str(p)) from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InvalidScenarioError(f"not valid YAML{where}: {problem}", source=str(p)) from exc
    return parse_scenario(data, source=str(p), name=p.stem, base_dir=str(p.parent))
