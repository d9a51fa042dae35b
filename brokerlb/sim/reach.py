"""The same balance for fewer bytes: what a run had moved when it got as near the lower bound as
another run ended.

A run's total moved throughput says what its whole path cost; it does not say what a given balance
cost. :func:`moved_to_reach` reads that off one run's per-cycle series: the throughput the balancer had
moved (``balancer_moved_throughput``: moves a restart or failure forced are left out) up to the
first cycle from which the run's distance from the lower bound stays at or below a target -- to
the end of the run, so a balance reached before a restart or a traffic change and lost after it
does not count. ``None`` when the run ends above the target (it never got as balanced).

The usual target is another run's end distance (``distance_final``, the distance at its last
cycle): ``moved_to_reach(brokerlb.series, threshold.summary["distance_final"])`` is what brokerlb had paid
when it was as balanced as ThresholdShedder finally was, beside what ThresholdShedder paid for it
(its whole moved throughput). A run that overshoots the target in one step -- one cycle's moves
take it from above the target to far below -- is charged that whole step: the figure is an upper
bound on what that balance cost it.

>>> series = {"distance": [0.3, 0.1, 0.02, 0.2, 0.03, 0.02],
...           "balancer_moved_throughput": [0.0, 5.0, 3.0, 0.0, 4.0, 1.0]}
>>> moved_to_reach(series, 0.05)  # below at cycle 2, above again at 3 (a restart), held from 4
12.0
>>> moved_to_reach(series, 0.01) is None
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["moved_to_reach", "TOLERANCE"]

#: distances this close count as equal (the float noise of two runs' identical cycles)
TOLERANCE = 1e-9


def moved_to_reach(series: Mapping[str, Sequence[float] | np.ndarray], target: float) -> float | None:
    """Balancer-moved throughput until a run was at or below ``target`` for good (module doc).

    ``series``: the run's per-cycle ``distance`` and ``balancer_moved_throughput``
    (:attr:`SimulationResult.series <brokerlb.sim.result.SimulationResult.series>`).
    """
    distance = np.asarray(series["distance"], dtype=float)
    moved = np.asarray(series["balancer_moved_throughput"], dtype=float)
    if not len(distance) or math.isnan(target):
        return None
    measured = ~np.isnan(distance)  # a cycle without a live broker has no distance
    above = measured & (distance > target + TOLERANCE)
    after = int(np.flatnonzero(above)[-1]) + 1 if above.any() else 0
    held = np.flatnonzero(measured[after:])
    if not len(held):
        return None
    return float(moved[: after + int(held[0]) + 1].sum())
