"""What an operator did to a bundle by hand, as the leader learns it: the balancer respects it.

An operator's ``split-bundle``, ``unload`` (with or without ``--destinationBroker``) or merge is a
decision a human took with reasons the load reports do not show. The leader keeps the latest one
per bundle (:meth:`~brokerlb.loadbalance.leader.Leader.operator_action`) for
``loadBalancerSheddingGracePeriodMinutes`` and hands them to strategies in
:attr:`ClusterView.operator_actions <brokerlb.loadbalance.view.ClusterView.operator_actions>`.
brokerlb's balancer does not move, split or merge such a bundle (or merge back the ranges an
operator split) within that time and says so in its decisions (``Skip``/``Admin``); its placement
does not put a bundle the operator unloaded back on the broker it left. Pulsar's strategies
know nothing of operator actions (as in Pulsar, where only the leader's own unloads are
"recently unloaded").

>>> action = OperatorAction(OperatorActionKind.SPLIT, "t/ns/0x00000000_0x80000000", 60_000)
>>> action.until_ms(30 * 60_000), action.to_json()["kind"]
(1860000, 'split')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["OperatorAction", "OperatorActionKind", "recent_operator_actions"]


class OperatorActionKind(StrEnum):
    SPLIT = "split"  #: the operator split the bundle (``split-bundle``)
    UNLOAD = "unload"  #: unloaded without a destination (the next lookup places it)
    TRANSFER = "transfer"  #: unloaded with ``destinationBroker``
    MERGE = "merge"  #: the operator merged adjacent bundles into this one (brokerlb extension)


@dataclass(frozen=True, slots=True)
class OperatorAction:
    """One operator action on ``bundle`` at ``at_ms``; ``source``: the broker it was on,
    ``destination``: where a transfer sent it."""

    kind: OperatorActionKind
    bundle: str
    at_ms: int
    source: str | None = None
    destination: str | None = None

    def until_ms(self, grace_ms: int) -> int:
        """When the balancer stops holding back on the bundle."""
        return self.at_ms + grace_ms

    def describe(self) -> str:
        where = f" from {self.source}" if self.source else ""
        to = f" to {self.destination}" if self.destination else ""
        return f"{self.kind.value}{where}{to} by an operator"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "bundle": self.bundle,
            "atMs": self.at_ms,
            "source": self.source,
            "destination": self.destination,
        }


def recent_operator_actions(
    actions: Mapping[str, OperatorAction], now_ms: int, grace_ms: int
) -> dict[str, OperatorAction]:
    """The actions still within the grace period at ``now_ms``."""
    return {b: a for b, a in actions.items() if now_ms < a.until_ms(grace_ms)}
