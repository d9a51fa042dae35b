"""Placement strategies: pick one broker among the candidates the filters left.

One module per strategy; each has the registered class (``class_name`` = Pulsar's full class
name, ``select_broker(view, candidates, bundle, state, rng)``) and the pure function behind it.

==========================================================================  =====================================
Pulsar class                                                                state kept between calls
==========================================================================  =====================================
``...impl.LeastLongTermMessageRate`` (modular default)                      none
``...impl.LeastResourceUsageWithWeight``                                    EMA per broker (:class:`ResourceUsageHistory`)
``...impl.RoundRobinBrokerSelector``                                        counter + cached list (:class:`RoundRobinState`)
``...extensions.strategy.LeastResourceUsageWithWeight`` (extensible)        none (EMA is in the load data)
==========================================================================  =====================================
"""

from brokerlb.loadbalance.placement.strategies.extensible_least_resource_usage_with_weight import (
    ExtensibleLeastResourceUsageWithWeight,
    select_extensible_least_resource_usage_with_weight,
)
from brokerlb.loadbalance.placement.strategies.least_long_term_message_rate import (
    LeastLongTermMessageRate,
    long_term_message_rate_score,
    select_least_long_term_message_rate,
    select_min_score,
)
from brokerlb.loadbalance.placement.strategies.least_resource_usage_with_weight import (
    LeastResourceUsageWithWeight,
    ResourceUsageHistory,
    select_least_resource_usage_with_weight,
)
from brokerlb.loadbalance.placement.strategies.round_robin import (
    RoundRobinBrokerSelector,
    RoundRobinState,
    select_round_robin,
)

__all__ = [
    "ExtensibleLeastResourceUsageWithWeight",
    "LeastLongTermMessageRate",
    "LeastResourceUsageWithWeight",
    "ResourceUsageHistory",
    "RoundRobinBrokerSelector",
    "RoundRobinState",
    "long_term_message_rate_score",
    "select_extensible_least_resource_usage_with_weight",
    "select_least_long_term_message_rate",
    "select_least_resource_usage_with_weight",
    "select_min_score",
    "select_round_robin",
]
