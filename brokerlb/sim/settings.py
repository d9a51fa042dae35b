"""Changing a scenario after reading it (``--set``), and writing it back as plain data."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields, replace
from typing import Any

from brokerlb.errors import InvalidInputError, InvalidScenarioError
from brokerlb.sim.reading import count, positive
from brokerlb.sim.spec import (
    BrokerSpec,
    DiurnalSpec,
    Event,
    ResourceModelSpec,
    Scenario,
    SetConfig,
    TimingSpec,
    WorkloadSpec,
)
from brokerlb.sim.units import parse_duration, parse_quantity

__all__ = ["apply_settings", "check_config", "scenario_to_dict"]


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
                raise InvalidScenarioError(
                    str(exc), field=f"events[{i}].config", source=scenario.source
                ) from None


_SCENARIO_SETTINGS: dict[str, Callable[[Scenario, Any], Scenario]] = {
    "seed": lambda s, v: replace(s, seed=count(0)(_yaml_value(v))),
    "duration": lambda s, v: replace(s, duration=positive(parse_duration)(v)),
    "tick": lambda s, v: replace(s, tick=positive(parse_duration)(v)),
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
            field="tick",
            source=scenario.source,
        )


def _set_field(
    scenario: Scenario, section: str, key: str, value: Any, parse: Callable[[Any], float]
) -> Scenario:
    name = key.split(".", 1)[1]
    current = getattr(scenario, section)
    if name not in {f.name for f in fields(current)}:
        known = ", ".join(f"{section}.{f.name}" for f in fields(current))
        raise ValueError(f"unknown setting {key!r}; known: {known}")
    return replace(scenario, **{section: replace(current, **{name: parse(value)})})


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
            {
                "name": ns.name,
                "bundles": ns.bundles,
                "topics": ns.topics,
                "workload": workload(ns.workload),
                "anti_affinity_group": ns.anti_affinity_group,
            }
            for ns in scenario.namespaces
        ],
        "events": [event(e) for e in scenario.events],
    }
    if scenario.recorded_workload is not None:
        data["recorded_workload"] = scenario.recorded_workload
    return data
