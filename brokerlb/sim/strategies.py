"""Strategy labels for simulations: ``SHEDDER[+PLACEMENT]`` -> broker.conf overrides.

Names go through the decision engine's registry, so Pulsar's class names and simple
names both work (``ThresholdShedder``,
``org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder``):

* the shedder sets ``loadBalancerLoadSheddingStrategy``;
* an extensible shedder (``TransferShedder``) also sets ``loadManagerClassName`` to
  ``ExtensibleLoadManagerImpl`` (placement is then the extensible
  ``LeastResourceUsageWithWeight``, split the extensible strategy);
* ``AvgShedder`` is also made the placement strategy, as Pulsar requires (PIP-364),
  unless the label names another one; so is brokerlb's own balancer (``brokerlb``), which
  plans destinations and places bundles with one model;
* ``+PLACEMENT`` sets ``loadBalancerLoadPlacementStrategy``.

>>> strategy_overrides("ThresholdShedder+LeastResourceUsageWithWeight")["loadBalancerLoadPlacementStrategy"]
'org.apache.pulsar.broker.loadbalance.impl.LeastResourceUsageWithWeight'
>>> strategy_overrides("AvgShedder")["loadBalancerLoadPlacementStrategy"]
'org.apache.pulsar.broker.loadbalance.impl.AvgShedder'
>>> strategy_overrides("TransferShedder")["loadManagerClassName"]
'org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl'
"""

from __future__ import annotations

from brokerlb.config import EXTENSIBLE_LOAD_MANAGER_CLASS, MODULAR_LOAD_MANAGER_CLASS, short_class_name

__all__ = [
    "strategy_overrides",
    "strategy_label",
    "split_label",
    "EXTENSIBLE_LOAD_MANAGER_CLASS",
    "MODULAR_LOAD_MANAGER_CLASS",
]


def split_label(label: str) -> tuple[str, str | None]:
    """``"A+B"`` -> ``("A", "B")``; ``"A"`` -> ``("A", None)``."""
    shedder, _, placement = label.strip().partition("+")
    return shedder.strip(), (placement.strip() or None)


def strategy_overrides(label: str) -> dict[str, str]:
    """broker.conf overrides selecting the strategies of ``label`` (module docstring).

    Unknown names raise :class:`~brokerlb.errors.UnknownStrategyError` listing the known ones.
    """
    from brokerlb.loadbalance.registry import StrategyKind, resolve

    shedder, placement = split_label(label)
    shed = resolve(StrategyKind.SHEDDING, shedder)
    out = {"loadBalancerLoadSheddingStrategy": shed.class_name}
    out["loadManagerClassName"] = (
        EXTENSIBLE_LOAD_MANAGER_CLASS if shed.extensible else MODULAR_LOAD_MANAGER_CLASS
    )
    if placement is not None:
        out["loadBalancerLoadPlacementStrategy"] = resolve(StrategyKind.PLACEMENT, placement).class_name
    elif short_class_name(shed.class_name) == "AvgShedder" or shed.short_name == "brokerlb":
        out["loadBalancerLoadPlacementStrategy"] = resolve(StrategyKind.PLACEMENT, shed.class_name).class_name
    return out


def strategy_label(label: str) -> str:
    """The canonical short label of ``label`` (``org...ThresholdShedder`` -> ``ThresholdShedder``)."""
    from brokerlb.loadbalance.registry import StrategyKind, resolve

    shedder, placement = split_label(label)
    spec = resolve(StrategyKind.SHEDDING, shedder)
    name = spec.short_name or short_class_name(spec.class_name)
    if placement is None:
        return name
    place = resolve(StrategyKind.PLACEMENT, placement)
    return f"{name}+{place.short_name or place.class_name}"
