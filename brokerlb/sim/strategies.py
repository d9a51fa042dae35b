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
* ``+PLACEMENT`` sets ``loadBalancerLoadPlacementStrategy``;
* ``pulsar`` in a list of labels (``--compare brokerlb,pulsar``) stands for every Pulsar shedder
  with the placement Pulsar pairs it with (:data:`PULSAR_PAIRINGS`).

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
    "PULSAR_PAIRINGS",
    "PAIRINGS_LABEL",
    "expand_labels",
    "strategy_overrides",
    "strategy_label",
    "split_label",
    "EXTENSIBLE_LOAD_MANAGER_CLASS",
    "MODULAR_LOAD_MANAGER_CLASS",
]


#: Pulsar's shedders, each with the placement Pulsar pairs it with:
#:
#: * OverloadShedder and UniformLoadShedder with the modular manager's default placement,
#:   LeastLongTermMessageRate;
#: * ThresholdShedder with that default (what Pulsar 2.10-4.x ships) and with
#:   LeastResourceUsageWithWeight, the placement PIP-182 wrote to score brokers as ThresholdShedder
#:   sheds them (Pulsar's docs pair the two);
#: * AvgShedder as both shedding and placement strategy (PIP-364; apache/pulsar#26609 makes the pair
#:   the modular manager's default: LeastLongTermMessageRate scores brokers by message rate, so a
#:   bundle shed by resource usage lands on another hot broker);
#: * TransferShedder with the extensible manager's own LeastResourceUsageWithWeight.
PULSAR_PAIRINGS: tuple[str, ...] = (
    "OverloadShedder+LeastLongTermMessageRate",
    "ThresholdShedder+LeastLongTermMessageRate",
    "ThresholdShedder+LeastResourceUsageWithWeight",
    "UniformLoadShedder+LeastLongTermMessageRate",
    "AvgShedder+AvgShedder",
    "TransferShedder",
)
#: the label that stands for :data:`PULSAR_PAIRINGS` in a list of labels
PAIRINGS_LABEL = "pulsar"


def expand_labels(labels: list[str]) -> list[str]:
    """``labels`` with ``pulsar`` replaced by :data:`PULSAR_PAIRINGS` (duplicates dropped, order kept)."""
    out: list[str] = []
    for label in labels:
        for one in PULSAR_PAIRINGS if label.strip().lower() == PAIRINGS_LABEL else (label,):
            if one not in out:
                out.append(one)
    return out


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
