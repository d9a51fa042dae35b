"""Reading the ``events`` list of a scenario: one reader per event ``type``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from brokerlb.sim.reading import Node, config, count, namespace, positive, shown, text
from brokerlb.sim.spec import (
    EVENT_TYPES,
    AddBroker,
    BrokerSpec,
    Event,
    FailBroker,
    HotTopic,
    NamespaceGrowth,
    RestartBroker,
    ScaleTraffic,
    SetConfig,
    broker_id_of,
)
from brokerlb.sim.units import parse_duration, parse_quantity

__all__ = ["read_events", "BROKER_KEYS", "broker_fields"]

#: broker fields a scenario may set (besides ``name`` and ``count``)
BROKER_KEYS = ("cores", "nic_gbps", "version")


def broker_fields(n: Node, base: BrokerSpec) -> BrokerSpec:
    """``base`` with the broker fields ``n`` sets."""
    return replace(
        base,
        cores=n.get("cores", positive(parse_quantity), base.cores),
        nic_gbps=n.get("nic_gbps", positive(parse_quantity), base.nic_gbps),
        version=n.get("version", text, base.version),
    )


def read_events(
    node: Node, brokers: tuple[BrokerSpec, ...], namespaces: set[str] | None
) -> tuple[Event, ...]:
    raw = node.data.get("events") or []
    if not isinstance(raw, list):
        raise node.error(f"expected a list of events, got {shown(raw)}", "events")
    known_brokers = {b.name for b in brokers}
    out: list[Event] = []
    for i, item in enumerate(raw):
        path = f"{node.sub('events')}[{i}]"
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind not in EVENT_TYPES:
            choices = ", ".join(EVENT_TYPES)
            n = Node(item if isinstance(item, Mapping) else {}, path, node.source, tuple(item or ()))
            raise n.error(f"unknown or missing event type {kind!r}; one of: {choices}", "type")
        keys = ("at", "type") + _EVENT_KEYS[kind]
        n = Node(item, path, node.source, keys)
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


def _known_broker(n: Node, known: set[str]) -> str:
    name = broker_id_of(n.get("broker", text, "", required=True))
    if name not in known:
        raise n.error(f"no broker {name!r} (known: {', '.join(sorted(known))})", "broker")
    return name


def _add_broker(n: Node, at: float, known: set[str]) -> Event:
    raw = n.data.get("broker")
    if isinstance(raw, str):
        raw = {"name": raw}
    b = Node(raw, n.sub("broker"), n.source, ("name",) + BROKER_KEYS)
    name = broker_id_of(b.get("name", text, "", required=True))
    return AddBroker(at, broker_fields(b, BrokerSpec(name)))


def _restart_broker(n: Node, at: float, known: set[str]) -> Event:
    return RestartBroker(at, _known_broker(n, known), n.get("downtime", parse_duration, 60.0))


def _fail_broker(n: Node, at: float, known: set[str]) -> Event:
    return FailBroker(at, _known_broker(n, known))


def _hot_topic(n: Node, at: float, known: set[str]) -> Event:
    return HotTopic(
        at,
        n.get("namespace", namespace, "", required=True),
        topic=n.get("topic", count(0), 0),
        factor=n.get("factor", parse_quantity, 10.0),
        ramp=n.get("ramp", parse_duration, 0.0),
        duration=n.get("duration", parse_duration, None),
        rate=n.get("rate", positive(parse_quantity), None),
    )


def _namespace_growth(n: Node, at: float, known: set[str]) -> Event:
    return NamespaceGrowth(
        at,
        n.get("namespace", namespace, "", required=True),
        topics=n.get("topics", count(1), 0, required=True),
        over=n.get("over", parse_duration, 0.0),
    )


def _scale_traffic(n: Node, at: float, known: set[str]) -> Event:
    return ScaleTraffic(
        at,
        factor=n.get("factor", parse_quantity, 1.0, required=True),
        namespace=n.get("namespace", namespace, None),
        ramp=n.get("ramp", parse_duration, 0.0),
    )


def _set_config(n: Node, at: float, known: set[str]) -> Event:
    return SetConfig(at, n.get("config", config, {}, required=True))


_EVENT_READERS: dict[str, Callable[[Node, float, set[str]], Event]] = {
    "add_broker": _add_broker,
    "restart_broker": _restart_broker,
    "fail_broker": _fail_broker,
    "hot_topic": _hot_topic,
    "namespace_growth": _namespace_growth,
    "scale_traffic": _scale_traffic,
    "set_config": _set_config,
}
assert set(_EVENT_READERS) == set(EVENT_TYPES) == set(_EVENT_KEYS)
