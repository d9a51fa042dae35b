"""Load shedding: which bundles to unload from which brokers.

One module per Pulsar strategy (``overload``, ``threshold``, ``uniform``, ``avg``,
``transfer``) plus the leader's loop around them (:mod:`.loop`). Strategies are reached by
name through :mod:`brokerlb.loadbalance.registry`; importing this package imports none of them.
"""

from brokerlb.loadbalance.shedding.loop import prune_recently_unloaded, record_unloads, run_shedding_cycle

__all__ = ["prune_recently_unloaded", "record_unloads", "run_shedding_cycle"]
