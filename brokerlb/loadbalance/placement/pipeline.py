"""Where does a bundle go? The whole placement decision, as Pulsar's lookup makes it.

Entry points:

* :func:`select_broker_for_assignment` -- pure: what the leader would answer for ``bundle``
  on this view (the planner's ``place`` operation, the shedding loop's destination choice).
  Preallocations come from the view only; nothing is recorded.
* :func:`place_bundle` -- the same on a :class:`PlacementContext`, optionally recording the
  assignment as a preallocation so the next placement counts it (a leader placing many
  bundles between two load-report refreshes; the benchmark).

Routing, before any strategy:

* a bundle of a **heartbeat** namespace (``pulsar/{cluster}/{broker}`` or ``pulsar/{broker}``)
  goes to the broker it names (``NamespaceService.checkHeartbeatNamespace``);
* a bundle of an **SLA-monitor** namespace (``sla-monitor/{cluster}/{broker}``) goes to the
  broker it names if that broker is available (modular); the extensible load manager sends
  both kinds to the named broker when it is registered;
* anything else goes through the pipeline of the strategy's load manager: the modular one
  (:mod:`~brokerlb.loadbalance.placement.modular_pipeline`) or the extensible one
  (:mod:`~brokerlb.loadbalance.placement.extensible_pipeline`).

The strategy is a placement strategy of :mod:`brokerlb.loadbalance.registry` (full or short
class name); by default the one the configuration names
(``loadBalancerLoadPlacementStrategy``, or the extensible ``LeastResourceUsageWithWeight``
under ``ExtensibleLoadManagerImpl``).

>>> from brokerlb.loadbalance.view import ClusterView
>>> from brokerlb.loadbalance.state import StrategyState, new_rng
>>> from brokerlb.testing import broker, load_data
>>> view = ClusterView(load_data=load_data([broker("b1:8080", cpu=90), broker("b2:8080", cpu=10)]))
>>> decision = select_broker_for_assignment(view, "t/ns/0x00000000_0xffffffff", StrategyState(), new_rng())
>>> decision.broker, decision.reason.value
('b2:8080', 'Selected')
"""

from __future__ import annotations

import random
from collections.abc import Collection

from brokerlb.loadbalance.decisions import PlacementDecision, Reason
from brokerlb.loadbalance.placement.context import PlacementContext, context_for
from brokerlb.loadbalance.placement.extensible_pipeline import select_extensible
from brokerlb.loadbalance.placement.modular_pipeline import select_modular
from brokerlb.loadbalance.registry import StrategyKind, default_strategy_name, resolve
from brokerlb.loadbalance.state import StrategyState
from brokerlb.loadbalance.view import ClusterView
from brokerlb.model import bundle_namespace
from brokerlb.naming import broker_of_heartbeat_namespace, broker_of_sla_namespace

__all__ = ["select_broker_for_assignment", "place_bundle", "heartbeat_or_sla_broker", "named_broker"]


def named_broker(namespace: str, active: Collection[str]) -> str | None:
    """Pulsar's ``getHeartbeatOrSLAMonitorBrokerId``: the broker a heartbeat namespace names
    (active or not), the broker an SLA-monitor namespace names while it is ``active``, else
    ``None`` (the bundle is placed like any other).

    >>> named_broker("pulsar/b1:8080", ["b2:8080"]), named_broker("sla-monitor/c/b1:8080", ["b2:8080"])
    ('b1:8080', None)
    """
    heartbeat = broker_of_heartbeat_namespace(namespace)
    if heartbeat is not None:
        return heartbeat
    sla = broker_of_sla_namespace(namespace)
    return sla if sla is not None and sla in active else None


def heartbeat_or_sla_broker(
    context: PlacementContext, bundle: str, *, extensible: bool
) -> PlacementDecision | None:
    """The routing decision for a heartbeat / SLA-monitor bundle, ``None`` for any other bundle.

    Modular: :func:`named_broker` (a heartbeat namespace goes to its broker even when that
    broker is not in the view -- Pulsar still answers it; an SLA namespace of a broker that is
    not available is placed like any other). Extensible: a named broker that is not available
    leaves the bundle without a broker."""
    namespace = bundle_namespace(bundle)
    heartbeat = broker_of_heartbeat_namespace(namespace)
    named = heartbeat or broker_of_sla_namespace(namespace)
    if named is None:
        return None
    kind = "heartbeat" if heartbeat else "SLA-monitor"
    if extensible:
        if named not in context.extensible_brokers:
            return PlacementDecision(
                bundle, None, (), Reason.NO_BROKERS, f"{kind} namespace of {named}, which is not available"
            )
    elif named_broker(namespace, context.modular_brokers) is None:
        return None
    note = f"{kind} namespace of {named}"
    if not extensible and named not in context.modular_brokers:
        note += " (not in the snapshot; Pulsar still answers it)"
    return PlacementDecision(bundle, named, (named,), Reason.HEARTBEAT, note)


def place_bundle(
    context: PlacementContext,
    bundle: str,
    state: StrategyState,
    rng: random.Random,
    *,
    strategy: str | None = None,
    non_persistent: bool = False,
    preallocate: bool = False,
) -> PlacementDecision:
    """Place ``bundle`` (module docstring). With ``preallocate`` a modular assignment is recorded
    in ``context`` (Pulsar's step 11). ``non_persistent``: the lookup was for a non-persistent topic."""
    name = strategy or default_strategy_name(StrategyKind.PLACEMENT, context.config)
    spec = resolve(StrategyKind.PLACEMENT, name)
    routed = heartbeat_or_sla_broker(context, bundle, extensible=spec.extensible)
    if routed is not None:
        return routed
    chosen = spec.create()
    if spec.extensible:
        return select_extensible(context, bundle, chosen, state, rng, non_persistent=non_persistent)
    decision = select_modular(context, bundle, chosen, state, rng, non_persistent=non_persistent)
    if preallocate and decision.broker is not None and decision.reason is Reason.SELECTED:
        context.preallocate(bundle, decision.broker)
    return decision


def select_broker_for_assignment(
    view: ClusterView,
    bundle: str,
    state: StrategyState,
    rng: random.Random,
    *,
    strategy: str | None = None,
    non_persistent: bool = False,
) -> PlacementDecision:
    """What the leader would answer for ``bundle`` on ``view`` (pure; see the module docstring).

    ``state`` carries the strategy's memory (LeastResourceUsageWithWeight EMA, round-robin
    counter), ``rng`` breaks ties. The result names the broker (or ``None`` with the reason),
    the candidates the strategy chose among and, in ``detail``, what every step left.
    """
    return place_bundle(
        context_for(view), bundle, state, rng, strategy=strategy, non_persistent=non_persistent
    )
