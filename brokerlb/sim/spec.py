"""What a simulation runs: the scenario as frozen, picklable data.

A :class:`Scenario` is read from YAML by :mod:`brokerlb.sim.loader` (which
validates every field) or built in code. Everything here is plain data: tuples,
strings, floats. Times are seconds from the start of the simulation; rates are
messages/s; sizes bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, ClassVar

__all__ = [
    "BrokerSpec",
    "DiurnalSpec",
    "WorkloadSpec",
    "NamespaceSpec",
    "TimingSpec",
    "ResourceModelSpec",
    "Event",
    "AddBroker",
    "RestartBroker",
    "FailBroker",
    "HotTopic",
    "NamespaceGrowth",
    "ScaleTraffic",
    "SetConfig",
    "EVENT_TYPES",
    "Scenario",
    "DEFAULT_STRATEGIES",
    "broker_id_of",
]

#: Strategies compared when neither the scenario nor the command line names any.
DEFAULT_STRATEGIES: tuple[str, ...] = (
    "OverloadShedder",
    "ThresholdShedder",
    "UniformLoadShedder",
    "AvgShedder",
    "TransferShedder",
)


def broker_id_of(name: str) -> str:
    """A broker id in Pulsar's ``host:port`` form (``broker-1`` -> ``broker-1:8080``)."""
    return name if ":" in name else f"{name}:8080"


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True, slots=True)
class BrokerSpec:
    """One broker host: capacity and identity.

    ``cores`` sets the cpu limit (``100 * cores``, as Pulsar reports it), ``nic_gbps`` the
    bandwidth limits (``nic_gbps * 1e6`` Kbit/s in and out). ``version`` is the reported
    ``brokerVersionString``.
    """

    name: str
    cores: float = 8.0
    nic_gbps: float = 10.0
    version: str = "4.0.0"

    @property
    def broker_id(self) -> str:
        return broker_id_of(self.name)


@dataclass(frozen=True, slots=True)
class DiurnalSpec:
    """Daily curve: ``1 + amplitude * cos(2*pi*(t - peak) / period)`` (peak at ``peak`` seconds)."""

    amplitude: float = 0.5
    period: float = 86400.0
    peak: float = 14 * 3600.0


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """Synthetic traffic of one namespace.

    * ``msg_rate`` -- messages/s published into the namespace (all topics together);
    * ``msg_size`` -- bytes per message (throughput = rate x size);
    * ``fanout`` -- messages out per message in (number of subscriptions);
    * ``zipf`` -- skew of the per-topic rates: topic of rank r gets weight ``r ** -zipf``
      (0 = all equal); ranks are a seeded random permutation, so hot topics land in
      random bundles;
    * ``diurnal`` -- optional daily curve;
    * ``noise`` -- std-dev of a seeded multiplicative log-normal noise per topic and cycle
      (mean 1);
    * ``producers`` / ``consumers`` -- connections per topic.
    """

    msg_rate: float = 10_000.0
    msg_size: float = 1_000.0
    fanout: float = 1.0
    zipf: float = 0.0
    diurnal: DiurnalSpec | None = None
    noise: float = 0.0
    producers: int = 1
    consumers: int = 1


@dataclass(frozen=True, slots=True)
class NamespaceSpec:
    """A namespace: bundle count, topics, traffic and its anti-affinity group."""

    name: str
    bundles: int = 4
    topics: int = 100
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    anti_affinity_group: str | None = None


@dataclass(frozen=True, slots=True)
class TimingSpec:
    """How long ownership moves take (seconds).

    * ``unload`` -- a broker closes a bundle's topics and deletes its ownership
      (Pulsar: "typically tens of milliseconds", bounded by namespaceBundleUnloadingTimeoutMs);
    * ``transfer`` -- a transfer with a destination (extensible load manager) until the
      destination owns the bundle;
    * ``lookup`` -- after an unload (or a lost owner), until the clients' next lookup
      reaches the leader and the bundle is placed;
    * ``session_timeout`` -- after a broker dies, until its ephemeral nodes vanish
      (``None``: metadataStoreSessionTimeoutMillis of the config);
    * ``refresh_interval`` -- the leader folds new load reports into its load data at most this
      often (0, the default: in every cycle that has one -- the closest to Pulsar, whose leader
      refreshes on every report notification). Larger values are faster but change the decisions:
      strategies act on load data up to that old (a shedder keeps shedding load it already moved);
      registrations, departures and splits always refresh at once.
    """

    unload: float = 0.05
    transfer: float = 0.05
    lookup: float = 0.5
    session_timeout: float | None = None
    refresh_interval: float = 0.0


@dataclass(frozen=True, slots=True)
class ResourceModelSpec:
    """How traffic turns into the resource usage a broker reports.

    cpu (percent summed over cores, limit ``100 * cores``)::

        cpu% = base_cpu * cores + (msg/s * cpu_us_per_msg + MB/s * cpu_us_per_mb) / 1e6 * 100

    where msg/s and MB/s count in + out. Bandwidth in/out (Kbit/s) = bytes/s * 8 / 1000.
    Direct memory grows with throughput (``direct_memory_mb_per_mbps``) over a base.
    ``measurement_noise`` is the std-dev of a seeded multiplicative noise on cpu.
    """

    cpu_us_per_msg: float = 10.0
    cpu_us_per_mb: float = 2_000.0
    base_cpu: float = 2.0
    measurement_noise: float = 0.0
    heap_mb: float = 4096.0
    heap_used_mb: float = 1024.0
    direct_memory_mb: float = 4096.0
    direct_memory_base_mb: float = 64.0
    direct_memory_mb_per_mbps: float = 2.0


class Event:
    """Something that happens ``at`` seconds from the start (base of the event classes).

    ``kind`` is the event's ``type`` in YAML.
    """

    __slots__ = ()
    kind: ClassVar[str] = "event"
    at: float


@dataclass(frozen=True, slots=True)
class AddBroker(Event):
    """Scale-out: a new broker registers, owning nothing."""

    kind: ClassVar[str] = "add_broker"
    at: float
    broker: BrokerSpec


@dataclass(frozen=True, slots=True)
class RestartBroker(Event):
    """Graceful restart: the broker leaves the load-balancer registry, unloads its bundles
    (they are placed elsewhere at the clients' next lookup), stays down ``downtime`` seconds,
    and comes back owning nothing (Pulsar's idle-restarted-broker problem)."""

    kind: ClassVar[str] = "restart_broker"
    at: float
    broker: str
    downtime: float = 60.0


@dataclass(frozen=True, slots=True)
class FailBroker(Event):
    """Crash: the broker stops serving at once; its bundles have no owner until its session
    expires (``TimingSpec.session_timeout``) and the clients' lookups place them again."""

    kind: ClassVar[str] = "fail_broker"
    at: float
    broker: str


@dataclass(frozen=True, slots=True)
class HotTopic(Event):
    """One topic's traffic rises to ``factor`` times its rate -- or to ``rate`` msg/s published,
    when given -- over ``ramp`` seconds and stays there for ``duration`` seconds (``None``: until
    the end). ``topic`` is the topic's index in the namespace
    (``persistent://{namespace}/topic-{index}``)."""

    kind: ClassVar[str] = "hot_topic"
    at: float
    namespace: str
    topic: int = 0
    factor: float = 10.0
    ramp: float = 0.0
    duration: float | None = None
    rate: float | None = None


@dataclass(frozen=True, slots=True)
class NamespaceGrowth(Event):
    """``topics`` new topics appear in a namespace, evenly over ``over`` seconds, each with
    the namespace's per-topic traffic (same skew)."""

    kind: ClassVar[str] = "namespace_growth"
    at: float
    namespace: str
    topics: int
    over: float = 0.0


@dataclass(frozen=True, slots=True)
class ScaleTraffic(Event):
    """Traffic of a namespace (or of all, ``namespace=None``) moves to ``factor`` times its
    base over ``ramp`` seconds and stays there."""

    kind: ClassVar[str] = "scale_traffic"
    at: float
    factor: float
    namespace: str | None = None
    ramp: float = 0.0


@dataclass(frozen=True, slots=True)
class SetConfig(Event):
    """Dynamic configuration change on the leader (e.g. pause shedding during a rolling restart)."""

    kind: ClassVar[str] = "set_config"
    at: float
    config: Mapping[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "config", _frozen(self.config))

    def __reduce__(self) -> Any:
        return (SetConfig, (self.at, dict(self.config)))


#: Event classes by their YAML ``type``.
EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (AddBroker, RestartBroker, FailBroker, HotTopic, NamespaceGrowth, ScaleTraffic, SetConfig)
}


@dataclass(frozen=True, slots=True)
class Scenario:
    """A complete simulation set-up. ``seed`` is required: same seed, same result.

    ``config`` holds broker.conf overrides (Pulsar key names, validated by
    :class:`~brokerlb.config.ServiceConfig`). ``strategies`` is the default set compared
    by ``brokerlb simulate --report`` when ``--compare`` is not given.
    ``recorded_workload`` names a topic-stats file replayed instead of the synthetic
    workloads (see :mod:`brokerlb.sim.recorded`).
    """

    name: str
    seed: int
    duration: float
    tick: float = 60.0
    description: str = ""
    brokers: tuple[BrokerSpec, ...] = ()
    namespaces: tuple[NamespaceSpec, ...] = ()
    events: tuple[Event, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    timing: TimingSpec = field(default_factory=TimingSpec)
    resources: ResourceModelSpec = field(default_factory=ResourceModelSpec)
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    recorded_workload: str | None = None
    source: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "config", _frozen(self.config))

    def __reduce__(self) -> Any:
        values = {name: getattr(self, name) for name in self.__dataclass_fields__}
        values["config"] = dict(self.config)
        return (_rebuild_scenario, (values,))

    @property
    def cycles(self) -> int:
        """Number of cycles: ``duration / tick`` rounded down (at least 1)."""
        return max(1, int(self.duration // self.tick + 1e-9))

    def with_config(self, overrides: Mapping[str, Any]) -> Scenario:
        """A copy with broker.conf ``overrides`` applied over the scenario's own config."""
        merged = dict(self.config)
        merged.update(overrides)
        return replace(self, config=merged)

    def namespace(self, name: str) -> NamespaceSpec:
        for ns in self.namespaces:
            if ns.name == name:
                return ns
        raise KeyError(name)


def _rebuild_scenario(values: dict[str, Any]) -> Scenario:
    return Scenario(**values)
