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

import difflib
import os
from collections.abc import Callable, Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, TypeVar

from brokerlb.errors import InvalidInputError, InvalidScenarioError
from brokerlb.naming import NamespaceName
from brokerlb.sim.spec import (
    DEFAULT_STRATEGIES,
    EVENT_TYPES,
    AddBroker,
    BrokerSpec,
    DiurnalSpec,
    Event,
    FailBroker,
    HotTopic,
    NamespaceGrowth,
    NamespaceSpec,
    ResourceModelSpec,
    RestartBroker,
    ScaleTraffic,
    Scenario,
    SetConfig,
    TimingSpec,
    WorkloadSpec,
    broker_id_of,
)
from brokerlb.sim.units import parse_duration, parse_quantity, parse_size

__all__ = ["load_scenario", "parse_scenario", "scenario_to_dict", "apply_settings"]

T = TypeVar("T")

_TOP_KEYS = (
    "name", "description", "seed", "duration", "tick", "strategies", "config", "timing", "resources",
    "brokers", "workload", "namespaces", "events", "recorded_workload",
)


class _Node:
    """A mapping being read, with its path for error messages and a check for unknown keys."""

    def __init__(self, data: Any, path: str, source: str | None, allowed: tuple[str, ...]) -> None:
        self.path = path
        self.source = source
        if not isinstance(data, Mapping):
            raise self.error(f"expected a mapping, got {_shown(data)}")
        self.data = data
        for key in data:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=2)
                hint = f" (did you mean {' or '.join(close)}?)" if close else ""
                raise self.error(f"unknown key {key!r}{hint}; known keys: {', '.join(allowed)}", key)

    def sub(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def error(self, why: str, key: Any = None) -> InvalidScenarioError:
        where = self.sub(str(key)) if key is not None else (self.path or None)
        return InvalidScenarioError(why, field=where, source=self.source)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def get(self, key: str, parse: Callable[[Any], T], default: T, *, required: bool = False) -> T:
        if key not in self.data or self.data[key] is None:
            if required:
                raise self.error("required", key)
            return default
        try:
            return parse(self.data[key])
        except (ValueError, TypeError) as exc:
            raise self.error(str(exc), key) from None


# --------------------------------------------------------------------------- value parsers


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {value!r}" if not isinstance(value, str) else repr(value)


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ValueError(f"{_shown(value)} is not an integer")
    return value


def _count(minimum: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        number = _integer(value) if not isinstance(value, str) else int(parse_quantity(value))
        if number < minimum:
            raise ValueError(f"{number} is below the minimum {minimum}")
        return number

    return parse


def _positive(parse: Callable[[Any], float]) -> Callable[[Any], float]:
    def checked(value: Any) -> float:
        number = parse(value)
        if number <= 0:
            raise ValueError(f"{value!r} must be > 0")
        return number

    return checked


def _fraction(value: Any) -> float:
    number = parse_quantity(value)
    if number > 1:
        raise ValueError(f"{value!r} must be between 0 and 1")
    return number


def _text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{_shown(value)} is not a string")
    text = str(value).strip()
    if not text:
        raise ValueError("empty string")
    return text


def _namespace(value: Any) -> str:
    text = _text(value)
    try:
        ns = NamespaceName.parse(text)
    except InvalidInputError as exc:
        raise ValueError(str(exc)) from None
    if not ns.is_v2:
        raise ValueError(f"{text!r}: use a tenant/namespace name (v2)")
    return str(ns)


def _strategies(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        items = [part.strip() for part in value.split(",")]
    elif isinstance(value, list | tuple):
        items = [_text(item) for item in value]
    else:
        raise ValueError(f"{_shown(value)} is not a list of strategy names")
    items = [item for item in items if item]
    if not items:
        raise ValueError("no strategy named")
    return tuple(items)


def _config(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping of broker.conf keys, got {_shown(value)}")
    return {str(k): v for k, v in value.items()}


def _expand_names(template: str, count: int) -> list[str]:
    if count == 1 and "{i}" not in template:
        return [template]
    if "{i}" not in template:
        raise ValueError(f"name {template!r} repeats {count} times: put {{i}} in it")
    return [template.replace("{i}", str(i)) for i in range(1, count + 1)]


# --------------------------------------------------------------------------- sections


def _timing(node: _Node) -> TimingSpec:
    keys = tuple(f.name for f in fields(TimingSpec))
    n = _Node(node.data.get("timing") or {}, node.sub("timing"), node.source, keys)
    default = TimingSpec()
    return TimingSpec(
        unload=n.get("unload", parse_duration, default.unload),
        transfer=n.get("transfer", parse_duration, default.transfer),
        lookup=n.get("lookup", parse_duration, default.lookup),
        session_timeout=n.get("session_timeout", parse_duration, None),
    )


def _resources(node: _Node) -> ResourceModelSpec:
    keys = tuple(f.name for f in fields(ResourceModelSpec))
    n = _Node(node.data.get("resources") or {}, node.sub("resources"), node.source, keys)
    default = ResourceModelSpec()
    values = {key: n.get(key, parse_quantity, getattr(default, key)) for key in keys}
    for key in ("heap_mb", "direct_memory_mb"):
        if values[key] <= 0:
            raise n.error(f"{values[key]!r} must be > 0", key)
    return ResourceModelSpec(**values)


def _brokers(node: _Node) -> tuple[BrokerSpec, ...]:
    raw = node.data.get("brokers")
    if not isinstance(raw, list) or not raw:
        raise node.error("required: a non-empty list of brokers", "brokers")
    out: list[BrokerSpec] = []
    for i, item in enumerate(raw):
        path = f"{node.sub('brokers')}[{i}]"
        if isinstance(item, str):
            item = {"name": item}
        n = _Node(item, path, node.source, ("name", "count") + _BROKER_KEYS)
        count = n.get("count", _count(1), 1)
        template = n.get("name", _text, "broker-{i}")
        try:
            names = _expand_names(template, count)
        except ValueError as exc:
            raise n.error(str(exc), "name") from None
        spec = _broker_fields(n, BrokerSpec(names[0]))
        out.extend(replace(spec, name=broker_id_of(name)) for name in names)
    _unique([b.name for b in out], node, "brokers", "broker")
    return tuple(out)


_BROKER_KEYS = ("cores", "nic_gbps", "version")


def _broker_fields(n: _Node, base: BrokerSpec) -> BrokerSpec:
    return replace(
        base,
        cores=n.get("cores", _positive(parse_quantity), base.cores),
        nic_gbps=n.get("nic_gbps", _positive(parse_quantity), base.nic_gbps),
        version=n.get("version", _text, base.version),
    )


_WORKLOAD_KEYS = tuple(f.name for f in fields(WorkloadSpec))


def _workload(data: Any, path: str, source: str | None, base: WorkloadSpec) -> WorkloadSpec:
    n = _Node(data, path, source, _WORKLOAD_KEYS)
    diurnal = base.diurnal
    if "diurnal" in n.data:
        diurnal = _diurnal(n.data["diurnal"], n.sub("diurnal"), source, base.diurnal)
    return WorkloadSpec(
        msg_rate=n.get("msg_rate", parse_quantity, base.msg_rate),
        msg_size=n.get("msg_size", _positive(parse_size), base.msg_size),
        fanout=n.get("fanout", parse_quantity, base.fanout),
        zipf=n.get("zipf", parse_quantity, base.zipf),
        diurnal=diurnal,
        noise=n.get("noise", parse_quantity, base.noise),
        producers=n.get("producers", _count(0), base.producers),
        consumers=n.get("consumers", _count(0), base.consumers),
    )


def _diurnal(data: Any, path: str, source: str | None, base: DiurnalSpec | None) -> DiurnalSpec | None:
    if data is None or data is False:
        return None
    if data is True:
        data = {}
    n = _Node(data, path, source, ("amplitude", "period", "peak"))
    start = base or DiurnalSpec()
    return DiurnalSpec(
        amplitude=n.get("amplitude", _fraction, start.amplitude),
        period=n.get("period", _positive(parse_duration), start.period),
        peak=n.get("peak", parse_duration, start.peak),
    )


def _namespaces(node: _Node, default_workload: WorkloadSpec, required: bool) -> tuple[NamespaceSpec, ...]:
    raw = node.data.get("namespaces")
    if raw is None and not required:
        return ()
    if not isinstance(raw, list) or not raw:
        raise node.error("required: a non-empty list of namespaces", "namespaces")
    out: list[NamespaceSpec] = []
    keys = ("name", "count", "bundles", "topics", "workload", "anti_affinity_group")
    for i, item in enumerate(raw):
        path = f"{node.sub('namespaces')}[{i}]"
        n = _Node(item, path, node.source, keys)
        count = n.get("count", _count(1), 1)
        template = n.get("name", _text, "", required=True)
        try:
            names = [_namespace(name) for name in _expand_names(template, count)]
        except ValueError as exc:
            raise n.error(str(exc), "name") from None
        workload = default_workload
        if n.has("workload"):
            workload = _workload(n.data["workload"], n.sub("workload"), node.source, default_workload)
        bundles = n.get("bundles", _count(1), 4)
        topics = n.get("topics", _count(0), 100)
        group = n.get("anti_affinity_group", _text, None)
        out.extend(NamespaceSpec(name, bundles, topics, workload, group) for name in names)
    _unique([ns.name for ns in out], node, "namespaces", "namespace")
    return tuple(out)


def _unique(names: list[str], node: _Node, key: str, what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise node.error(f"{what} {name!r} is declared twice", key)
        seen.add(name)


# --------------------------------------------------------------------------- events


def _events(node: _Node, brokers: tuple[BrokerSpec, ...], namespaces: set[str] | None) -> tuple[Event, ...]:
    raw = node.data.get("events") or []
    if not isinstance(raw, list):
        raise node.error(f"expected a list of events, got {_shown(raw)}", "events")
    known_brokers = {b.name for b in brokers}
    out: list[Event] = []
    for i, item in enumerate(raw):
        path = f"{node.sub('events')}[{i}]"
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind not in EVENT_TYPES:
            choices = ", ".join(EVENT_TYPES)
            n = _Node(item if isinstance(item, Mapping) else {}, path, node.source, tuple(item or ()))
            raise n.error(f"unknown or missing event type {kind!r}; one of: {choices}", "type")
        keys = ("at", "type") + _EVENT_KEYS[kind]
        n = _Node(item, path, node.source, keys)
        at = n.get("at", parse_duration, 0.0, required=True)
        event = _EVENT_READERS[kind](n, at, known_brokers)
        if namespaces is not None and getattr(event, "namespace", None) is not None:
            if event.namespace not in namespaces:  # type: ignore[attr-defined]
                raise n.error(f"namespace {event.namespace!r} is not declared in namespaces", "namespace")  # type: ignore[attr-defined]
        if isinstance(event, AddBroker):
            if event.broker.name in known_brokers:
                raise n.error(f"broker {event.broker.name!r} already exists", "broker")
            known_brokers.add(event.broker.name)
        out.append(event)
    return tuple(sorted(out, key=lambda e: e.at))


_EVENT_KEYS: dict[str, tuple[str, ...]] = {
    "add_broker": ("broker",),
    "restart_broker": ("broker", "downtime"),
    "fail_broker": ("broker",),
    "hot_topic": ("namespace", "topic", "factor", "rate", "ramp", "duration"),
    "namespace_growth": ("namespace", "topics", "over"),
    "scale_traffic": ("namespace", "factor", "ramp"),
    "set_config": ("config",),
}


def _known_broker(n: _Node, known: set[str]) -> str:
    name = broker_id_of(n.get("broker", _text, "", required=True))
    if name not in known:
        raise n.error(f"no broker {name!r} (known: {', '.join(sorted(known))})", "broker")
    return name


def _add_broker(n: _Node, at: float, known: set[str]) -> Event:
    raw = n.data.get("broker")
    if isinstance(raw, str):
        raw = {"name": raw}
    b = _Node(raw, n.sub("broker"), n.source, ("name",) + _BROKER_KEYS)
    name = broker_id_of(b.get("name", _text, "", required=True))
    return AddBroker(at, _broker_fields(b, BrokerSpec(name)))


def _restart_broker(n: _Node, at: float, known: set[str]) -> Event:
    return RestartBroker(at, _known_broker(n, known), n.get("downtime", parse_duration, 60.0))


def _fail_broker(n: _Node, at: float, known: set[str]) -> Event:
    return FailBroker(at, _known_broker(n, known))


def _hot_topic(n: _Node, at: float, known: set[str]) -> Event:
    return HotTopic(
        at,
        n.get("namespace", _namespace, "", required=True),
        topic=n.get("topic", _count(0), 0),
        factor=n.get("factor", parse_quantity, 10.0),
        ramp=n.get("ramp", parse_duration, 0.0),
        duration=n.get("duration", parse_duration, None),
        rate=n.get("rate", _positive(parse_quantity), None),
    )


def _namespace_growth(n: _Node, at: float, known: set[str]) -> Event:
    return NamespaceGrowth(
        at,
        n.get("namespace", _namespace, "", required=True),
        topics=n.get("topics", _count(1), 0, required=True),
        over=n.get("over", parse_duration, 0.0),
    )


def _scale_traffic(n: _Node, at: float, known: set[str]) -> Event:
    return ScaleTraffic(
        at,
        factor=n.get("factor", parse_quantity, 1.0, required=True),
        namespace=n.get("namespace", _namespace, None),
        ramp=n.get("ramp", parse_duration, 0.0),
    )


def _set_config(n: _Node, at: float, known: set[str]) -> Event:
    return SetConfig(at, n.get("config", _config, {}, required=True))


_EVENT_READERS: dict[str, Callable[[_Node, float, set[str]], Event]] = {
    "add_broker": _add_broker,
    "restart_broker": _restart_broker,
    "fail_broker": _fail_broker,
    "hot_topic": _hot_topic,
    "namespace_growth": _namespace_growth,
    "scale_traffic": _scale_traffic,
    "set_config": _set_config,
}
assert set(_EVENT_READERS) == set(EVENT_TYPES) == set(_EVENT_KEYS)


# --------------------------------------------------------------------------- entry points


def parse_scenario(data: Any, *, source: str | None = None, name: str | None = None,
                   base_dir: str | None = None) -> Scenario:
    """Build a :class:`Scenario` from already-parsed YAML/JSON data (rules in the module docstring).

    ``base_dir`` resolves a relative ``recorded_workload`` path.
    """
    node = _Node(data, "", source, _TOP_KEYS)
    seed = node.get("seed", _count(0), 0, required=True)
    duration = node.get("duration", _positive(parse_duration), 0.0, required=True)
    tick = node.get("tick", _positive(parse_duration), 60.0)
    if tick > duration:
        raise node.error(f"tick {tick:g}s is longer than the duration {duration:g}s", "tick")
    recorded = node.get("recorded_workload", _text, None)
    if recorded is not None and base_dir is not None and not os.path.isabs(recorded):
        recorded = os.path.normpath(os.path.join(base_dir, recorded))
    default_workload = WorkloadSpec()
    if node.has("workload"):
        default_workload = _workload(node.data["workload"], "workload", source, default_workload)
    brokers = _brokers(node)
    namespaces = _namespaces(node, default_workload, required=recorded is None)
    events = _events(node, brokers, {ns.name for ns in namespaces} if recorded is None else None)
    for event in events:
        if event.at > duration:
            raise InvalidScenarioError(
                f"event {event.kind} at {event.at:g}s is after the end ({duration:g}s)",
                field="events", source=source,
            )
    scenario = Scenario(
        name=node.get("name", _text, name or "scenario"),
        seed=seed,
        duration=duration,
        tick=tick,
        description=node.get("description", lambda v: str(v).strip(), ""),
        brokers=brokers,
        namespaces=namespaces,
        events=events,
        config=node.get("config", _config, {}),
        timing=_timing(node),
        resources=_resources(node),
        strategies=node.get("strategies", _strategies, DEFAULT_STRATEGIES),
        recorded_workload=recorded,
        source=source,
    )
    check_config(scenario)
    return scenario


def check_config(scenario: Scenario) -> None:
    """Validate the scenario's broker.conf overrides (and those of ``set_config`` events)."""
    from brokerlb.config import ServiceConfig

    try:
        base = ServiceConfig.from_mapping(dict(scenario.config), strict=True)
    except InvalidInputError as exc:
        raise InvalidScenarioError(str(exc), field="config", source=scenario.source) from None
    for i, event in enumerate(scenario.events):
        if isinstance(event, SetConfig):
            try:
                base.with_overrides(dict(event.config), strict=True)
            except InvalidInputError as exc:
                raise InvalidScenarioError(str(exc), field=f"events[{i}].config",
                                           source=scenario.source) from None


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


# --------------------------------------------------------------------------- --set


_SCENARIO_SETTINGS: dict[str, Callable[[Scenario, Any], Scenario]] = {
    "seed": lambda s, v: replace(s, seed=_count(0)(_yaml_value(v))),
    "duration": lambda s, v: replace(s, duration=_positive(parse_duration)(v)),
    "tick": lambda s, v: replace(s, tick=_positive(parse_duration)(v)),
}


def _yaml_value(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def apply_settings(scenario: Scenario, settings: Mapping[str, Any]) -> Scenario:
    """Apply ``--set key=value`` pairs.

    ``seed``, ``duration``, ``tick``, ``timing.<field>`` and ``resources.<field>`` change the
    scenario; any other key is a broker.conf key (validated like the scenario's ``config``).
    """
    config: dict[str, Any] = {}
    for key, value in settings.items():
        try:
            if key in _SCENARIO_SETTINGS:
                scenario = _SCENARIO_SETTINGS[key](scenario, value)
            elif key.startswith("timing."):
                scenario = _set_field(scenario, "timing", key, value, parse_duration)
            elif key.startswith("resources."):
                scenario = _set_field(scenario, "resources", key, value, parse_quantity)
            else:
                config[key] = value
        except (ValueError, TypeError) as exc:
            raise InvalidScenarioError(str(exc), field=f"--set {key}", source=scenario.source) from None
    if config:
        scenario = scenario.with_config(config)
        check_config(scenario)
    scenario_duration_check(scenario)
    return scenario


def scenario_duration_check(scenario: Scenario) -> None:
    if scenario.tick > scenario.duration:
        raise InvalidScenarioError(
            f"tick {scenario.tick:g}s is longer than the duration {scenario.duration:g}s",
            field="tick", source=scenario.source,
        )


def _set_field(scenario: Scenario, section: str, key: str, value: Any, parse: Callable[[Any], float]) -> Scenario:
    name = key.split(".", 1)[1]
    current = getattr(scenario, section)
    if name not in {f.name for f in fields(current)}:
        known = ", ".join(f"{section}.{f.name}" for f in fields(current))
        raise ValueError(f"unknown setting {key!r}; known: {known}")
    return replace(scenario, **{section: replace(current, **{name: parse(value)})})


# --------------------------------------------------------------------------- writing back


def scenario_to_dict(scenario: Scenario) -> dict[str, Any]:
    """The scenario as plain data (for reports and JSON); :func:`parse_scenario` reads it back."""
    def workload(w: WorkloadSpec) -> dict[str, Any]:
        out = {f.name: getattr(w, f.name) for f in fields(WorkloadSpec) if f.name != "diurnal"}
        if w.diurnal is not None:
            out["diurnal"] = {f.name: getattr(w.diurnal, f.name) for f in fields(DiurnalSpec)}
        return out

    def event(e: Event) -> dict[str, Any]:
        out: dict[str, Any] = {"at": e.at, "type": e.kind}
        for f in fields(e):  # type: ignore[arg-type]
            if f.name == "at":
                continue
            value = getattr(e, f.name)
            if isinstance(value, BrokerSpec):
                value = {g.name: getattr(value, g.name) for g in fields(BrokerSpec)}
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out

    data: dict[str, Any] = {
        "name": scenario.name,
        "description": scenario.description,
        "seed": scenario.seed,
        "duration": scenario.duration,
        "tick": scenario.tick,
        "strategies": list(scenario.strategies),
        "config": dict(scenario.config),
        "timing": {f.name: getattr(scenario.timing, f.name) for f in fields(TimingSpec)},
        "resources": {f.name: getattr(scenario.resources, f.name) for f in fields(ResourceModelSpec)},
        "brokers": [{f.name: getattr(b, f.name) for f in fields(BrokerSpec)} for b in scenario.brokers],
        "namespaces": [
            {"name": ns.name, "bundles": ns.bundles, "topics": ns.topics, "workload": workload(ns.workload),
             "anti_affinity_group": ns.anti_affinity_group}
            for ns in scenario.namespaces
        ],
        "events": [event(e) for e in scenario.events],
    }
    if scenario.recorded_workload is not None:
        data["recorded_workload"] = scenario.recorded_workload
    return data

