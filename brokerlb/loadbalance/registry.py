"""Strategies by name: Pulsar's class names and simple class names.

``resolve(kind, name)`` accepts a full class name
(``org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder``) or a short name
(``ThresholdShedder``); an unknown name raises
:class:`~brokerlb.errors.UnknownStrategyError` listing the names it knows. Short names are
Pulsar's simple class names, except where two Pulsar classes share one:
``LeastResourceUsageWithWeight`` is the modular ``impl`` class; the extensible one is named
only by its full class name
``org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight``.

Built-in strategies are listed in :data:`BUILTIN` (kind, Pulsar class name, module,
attribute, short name); modules are imported only when a strategy is used. Plugins call
:func:`register`. ``AvgShedder`` is registered twice (shedding and placement): both roles
share its state entry, as Pulsar binds the two when it is configured as both. brokerlb's own
balancer (:mod:`brokerlb.loadbalance.balancer`) is registered the same way under the short name
``brokerlb`` (class name ``brokerlb.loadbalance.balancer.Balancer``, a modular strategy).

>>> resolve(StrategyKind.SHEDDING, "ThresholdShedder").class_name
'org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder'
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from brokerlb.config import ServiceConfig, is_extensible_load_manager
from brokerlb.errors import StrategyNotAvailableError, UnknownStrategyError

__all__ = [
    "StrategyKind",
    "StrategySpec",
    "BUILTIN",
    "IMPL",
    "EXTENSIONS",
    "BROKERLB_BALANCER",
    "register",
    "unregister",
    "resolve",
    "create",
    "known_names",
    "default_strategy_name",
    "unloads_split_children",
]

#: Package of Pulsar's modular load-manager classes.
IMPL = "org.apache.pulsar.broker.loadbalance.impl"
#: Package of Pulsar's extensible load manager (PIP-192).
EXTENSIONS = "org.apache.pulsar.broker.loadbalance.extensions"


class StrategyKind(StrEnum):
    SHEDDING = "shedding"
    PLACEMENT = "placement"
    SPLIT = "split"


@dataclass(frozen=True, slots=True)
class StrategySpec:
    """One registered strategy: where its class lives and the names it answers to."""

    kind: StrategyKind
    #: Pulsar's full class name (also the key of its state entry)
    class_name: str
    #: module and attribute of the implementing class
    module: str
    attribute: str
    #: short name, or ``None`` when it is reachable only by ``class_name``
    short_name: str | None

    @property
    def extensible(self) -> bool:
        """Whether the class belongs to the extensible load manager."""
        return self.class_name.startswith(EXTENSIONS + ".")

    def load(self) -> Any:
        """The implementing class (imports its module)."""
        try:
            module = importlib.import_module(self.module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and self.module.startswith(exc.name):
                raise StrategyNotAvailableError(
                    self.class_name, str(self.kind), f"module {self.module} is missing"
                ) from exc
            raise
        return getattr(module, self.attribute)

    def create(self) -> Any:
        """A new strategy object."""
        return self.load()()


def _spec(kind: StrategyKind, class_name: str, module: str, short: bool = True) -> StrategySpec:
    simple = class_name.rsplit(".", 1)[1]
    return StrategySpec(kind, class_name, module, simple, simple if short else None)


_SHEDDING = "brokerlb.loadbalance.shedding"
_BALANCER = "brokerlb.loadbalance.balancer.strategy"
#: class name of brokerlb's own balancer (short name ``brokerlb``; both a shedding and a
#: placement strategy, sharing one state entry)
BROKERLB_BALANCER = "brokerlb.loadbalance.balancer.Balancer"
_PLACEMENT = "brokerlb.loadbalance.placement.strategies"
_SPLIT = "brokerlb.loadbalance.split"

#: The built-in strategies. Add one line per strategy.
BUILTIN: tuple[StrategySpec, ...] = (
    _spec(StrategyKind.SHEDDING, f"{IMPL}.OverloadShedder", f"{_SHEDDING}.overload"),
    _spec(StrategyKind.SHEDDING, f"{IMPL}.ThresholdShedder", f"{_SHEDDING}.threshold"),
    _spec(StrategyKind.SHEDDING, f"{IMPL}.UniformLoadShedder", f"{_SHEDDING}.uniform"),
    _spec(StrategyKind.SHEDDING, f"{IMPL}.AvgShedder", f"{_SHEDDING}.avg"),
    _spec(StrategyKind.SHEDDING, f"{EXTENSIONS}.scheduler.TransferShedder", f"{_SHEDDING}.transfer"),
    _spec(StrategyKind.PLACEMENT, f"{IMPL}.AvgShedder", f"{_SHEDDING}.avg"),
    _spec(
        StrategyKind.PLACEMENT,
        f"{IMPL}.LeastLongTermMessageRate",
        f"{_PLACEMENT}.least_long_term_message_rate",
    ),
    _spec(
        StrategyKind.PLACEMENT,
        f"{IMPL}.LeastResourceUsageWithWeight",
        f"{_PLACEMENT}.least_resource_usage_with_weight",
    ),
    _spec(StrategyKind.PLACEMENT, f"{IMPL}.RoundRobinBrokerSelector", f"{_PLACEMENT}.round_robin"),
    _spec(
        StrategyKind.PLACEMENT,
        f"{EXTENSIONS}.strategy.LeastResourceUsageWithWeight",
        f"{_PLACEMENT}.extensible_least_resource_usage_with_weight",
        short=False,
    ),
    StrategySpec(StrategyKind.SHEDDING, BROKERLB_BALANCER, _BALANCER, "Balancer", "brokerlb"),
    StrategySpec(StrategyKind.PLACEMENT, BROKERLB_BALANCER, _BALANCER, "Balancer", "brokerlb"),
    _spec(StrategyKind.SPLIT, f"{IMPL}.BundleSplitterTask", _SPLIT),
    _spec(StrategyKind.SPLIT, f"{EXTENSIONS}.strategy.DefaultNamespaceBundleSplitStrategyImpl", _SPLIT),
)

_registry: dict[StrategyKind, dict[str, StrategySpec]] = {kind: {} for kind in StrategyKind}
_short: dict[StrategyKind, dict[str, StrategySpec]] = {kind: {} for kind in StrategyKind}


def register(spec: StrategySpec) -> None:
    """Add (or replace) a strategy. A short name already taken by another class is refused."""
    taken = _short[spec.kind].get(spec.short_name) if spec.short_name else None
    if taken is not None and taken.class_name != spec.class_name:
        raise ValueError(
            f"short name {spec.short_name!r} of {spec.kind} strategy {spec.class_name} "
            f"is already used by {taken.class_name}"
        )
    _registry[spec.kind][spec.class_name] = spec
    if spec.short_name:
        _short[spec.kind][spec.short_name] = spec


for _builtin in BUILTIN:
    register(_builtin)


def unregister(kind: StrategyKind | str, class_name: str) -> None:
    """Remove a strategy (a no-op if it is not registered)."""
    kind = StrategyKind(kind)
    spec = _registry[kind].pop(class_name, None)
    if spec is not None and spec.short_name and _short[kind].get(spec.short_name) is spec:
        del _short[kind][spec.short_name]


def resolve(kind: StrategyKind | str, name: str) -> StrategySpec:
    """The strategy ``name`` (full or short class name) of ``kind``."""
    kind = StrategyKind(kind)
    spec = _lookup(kind, name)
    if spec is None:
        raise UnknownStrategyError(name, str(kind), known_names(kind))
    return spec


def create(kind: StrategyKind | str, name: str) -> Any:
    """A new strategy object for ``name``."""
    return resolve(kind, name).create()


def known_names(kind: StrategyKind | str) -> list[str]:
    """Every name ``resolve`` accepts for ``kind``: short names, then full class names."""
    kind = StrategyKind(kind)
    return sorted(_short[kind]) + sorted(_registry[kind])


def default_strategy_name(kind: StrategyKind | str, config: ServiceConfig) -> str:
    """The strategy a leader configured with ``config`` runs for ``kind`` (full class name).

    * shedding: ``loadBalancerLoadSheddingStrategy``; under the extensible load manager a
      class that is not an extensible unload strategy falls back to ``TransferShedder``
      (Pulsar's ``UnloadScheduler``), and under the modular one an unknown class or an
      extensible class falls back to ``OverloadShedder`` (``ModularLoadManagerImpl``);
    * placement: ``loadBalancerLoadPlacementStrategy`` (modular; an unknown class falls back
      to ``LeastLongTermMessageRate`` as ``ModularLoadManagerStrategy.create`` does); the
      extensible manager always uses its ``LeastResourceUsageWithWeight``;
    * split: ``BundleSplitterTask`` (modular) / ``DefaultNamespaceBundleSplitStrategyImpl``.
    """
    kind = StrategyKind(kind)
    extensible = is_extensible_load_manager(config.loadManagerClassName)
    if kind is StrategyKind.SHEDDING:
        configured = _lookup(kind, config.loadBalancerLoadSheddingStrategy)
        if extensible:
            if configured is not None and configured.extensible:
                return configured.class_name
            return f"{EXTENSIONS}.scheduler.TransferShedder"
        if configured is not None and not configured.extensible:
            return configured.class_name
        return f"{IMPL}.OverloadShedder"
    if kind is StrategyKind.PLACEMENT:
        if extensible:
            return f"{EXTENSIONS}.strategy.LeastResourceUsageWithWeight"
        configured = _lookup(kind, config.loadBalancerLoadPlacementStrategy)
        if configured is not None and not configured.extensible:
            return configured.class_name
        return f"{IMPL}.LeastLongTermMessageRate"
    if extensible:
        return f"{EXTENSIONS}.strategy.DefaultNamespaceBundleSplitStrategyImpl"
    return f"{IMPL}.BundleSplitterTask"


def unloads_split_children(config: ServiceConfig) -> bool:
    """Whether the leader unloads the children of an automatic split so that placement can put
    them elsewhere: the modular manager's ``loadBalancerAutoUnloadSplitBundlesEnabled``.

    Never under the extensible load manager: its split (``Splitting`` in the service-unit
    channel) gives the children to the parent's owner, and the key is the modular manager's.
    Not when brokerlb's balancer places them either: it puts each child back on the broker that
    served the parent (its load is already there), so the unload would only make every client of
    the parent reconnect for nothing; the balancer transfers the children that must move.
    """
    return (
        config.loadBalancerAutoUnloadSplitBundlesEnabled
        and not is_extensible_load_manager(config.loadManagerClassName)
        and default_strategy_name(StrategyKind.PLACEMENT, config) != BROKERLB_BALANCER
    )


def _lookup(kind: StrategyKind, name: str) -> StrategySpec | None:
    text = name.strip()
    return _registry[kind].get(text) or _short[kind].get(text)
