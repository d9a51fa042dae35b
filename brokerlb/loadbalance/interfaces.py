"""The three strategy roles, one method each, no I/O.

A strategy is a small stateless object with a ``class_name`` (Pulsar's full class name,
the key of its memory in :class:`~brokerlb.loadbalance.state.StrategyState`). It reads a
:class:`~brokerlb.loadbalance.view.ClusterView`, its own state entry and a seeded
:class:`random.Random`, and returns decisions; it never reads the wall clock.

* :class:`SheddingStrategy` -- Pulsar's ``LoadSheddingStrategy.findBundlesForUnloading`` /
  ``NamespaceUnloadStrategy.findBundlesForUnloading``: which bundles to unload (all the
  strategy's own rules, nothing of the leader's loop around it);
* :class:`PlacementStrategy` -- ``ModularLoadManagerStrategy.selectBroker`` /
  ``BrokerSelectionStrategy.select``: pick one of the given candidates;
* :class:`SplitStrategy` -- ``BundleSplitStrategy.findBundlesToSplit`` /
  ``NamespaceBundleSplitStrategy.findBundlesToSplit``: which bundles to split.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import ClassVar, Protocol, runtime_checkable

from brokerlb.loadbalance.decisions import SheddingResult, SplitDecision, SplitResult
from brokerlb.loadbalance.state import StrategyState
from brokerlb.loadbalance.view import ClusterView

__all__ = ["SheddingStrategy", "PlacementStrategy", "SplitStrategy"]


@runtime_checkable
class SheddingStrategy(Protocol):
    #: Pulsar's full class name, e.g. ``org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder``
    class_name: ClassVar[str]

    def find_bundles_for_unloading(
        self, view: ClusterView, state: StrategyState, rng: random.Random
    ) -> SheddingResult:
        """Every decision of one cycle (``Success`` = unload), plus the numbers computed."""
        ...


@runtime_checkable
class PlacementStrategy(Protocol):
    class_name: ClassVar[str]

    def select_broker(
        self,
        view: ClusterView,
        candidates: Sequence[str],
        bundle: str,
        state: StrategyState,
        rng: random.Random,
    ) -> str | None:
        """One of ``candidates`` for ``bundle`` (``None`` if the strategy finds none)."""
        ...


@runtime_checkable
class SplitStrategy(Protocol):
    class_name: ClassVar[str]

    def find_bundles_to_split(
        self, view: ClusterView, state: StrategyState
    ) -> SplitResult | list[SplitDecision]:
        """Every split decision of one check (``Success`` = split)."""
        ...
