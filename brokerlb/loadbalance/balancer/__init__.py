"""brokerlb's own balancer: the ``brokerlb`` shedding and placement strategy (docs/balancer.md).

* :mod:`.model` -- broker loads relative to capacity and bundle demands, from the reports;
* :mod:`.plan` -- the cycle's moves, planned together: target band, objective, greedy with
  hysteresis and move budgets;
* :mod:`.ring_changes` -- splits of bundles too hot for any broker, merges of cold neighbours;
* :mod:`.strategy` -- :class:`Balancer`, the strategy the registry knows as ``brokerlb``;
* :mod:`.memory` -- what it remembers between cycles;
* :mod:`.optimize` -- the same planner offline over a snapshot (``brokerlb plan optimize``), and
  :mod:`.oracle`, the exact minimum-moved-throughput plan with a MIP solver (optional ``highspy``).

Importing this package imports no strategy module (the registry loads them by name).
"""

__all__: list[str] = []
